"""The shared JSON-RPC peer: what each kind of frame decodes to and what is owed back."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ahp import jsonrpc
from ahp.protocol.errors import ErrorCode


def reply_of(message: jsonrpc.Message) -> dict:
    assert isinstance(message, jsonrpc.Malformed) and message.reply is not None
    return json.loads(message.reply)


def test_a_request_a_notification_and_a_response_are_told_apart():
    assert jsonrpc.decode('{"jsonrpc":"2.0","id":7,"method":"ping","params":{}}') == jsonrpc.Request(7, "ping", {})
    assert jsonrpc.decode('{"jsonrpc":"2.0","method":"action","params":{"a":1}}') == jsonrpc.Notification("action", {"a": 1})
    assert jsonrpc.decode('{"jsonrpc":"2.0","id":"x","result":null}') == jsonrpc.Response("x", None)
    answer = jsonrpc.decode('{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"gone","data":[1]}}')
    assert answer == jsonrpc.Response(3, error=jsonrpc.ErrorBody(-32001, "gone", [1]))


@pytest.mark.parametrize(
    ("text", "code", "words"),
    [
        ("{not json", ErrorCode.PARSE_ERROR, "not valid JSON"),
        ('{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":NaN}}', ErrorCode.PARSE_ERROR, "not valid JSON"),
        ("[" * 70 + "]" * 70, ErrorCode.PARSE_ERROR, "nested too deeply"),
        ("[" * 100_000 + "]" * 100_000, ErrorCode.PARSE_ERROR, "nested too deeply"),
        ('[{"jsonrpc":"2.0","id":1,"method":"m"}]', ErrorCode.INVALID_REQUEST, "Batches"),
        ('"hello"', ErrorCode.INVALID_REQUEST, "JSON object"),
        ('{"id":1,"method":"m"}', ErrorCode.INVALID_REQUEST, '"jsonrpc": "2.0"'),
        ('{"jsonrpc":"2.0","id":null,"method":"m"}', ErrorCode.INVALID_REQUEST, "not null"),
        ('{"jsonrpc":"2.0","id":1}', ErrorCode.INVALID_REQUEST, '"method" string'),
        ('{"jsonrpc":"2.0","id":1,"method":"m","params":3}', ErrorCode.INVALID_REQUEST, "must be an object"),
        ('{"jsonrpc":"2.0","id":1,"method":"m","params":{"limit":1e999}}', ErrorCode.INVALID_PARAMS, "1e999"),
    ],
)
def test_a_bad_request_is_owed_one_error_reply_that_says_what_is_wrong(text, code, words):
    reply = reply_of(jsonrpc.decode(text))
    assert reply["error"]["code"] == code
    assert words in reply["error"]["message"]


def test_the_reply_to_a_bad_request_keeps_its_id_when_the_id_is_usable():
    assert reply_of(jsonrpc.decode('{"jsonrpc":"2.0","id":"r1","method":"m","params":7}'))["id"] == "r1"
    assert reply_of(jsonrpc.decode('{"jsonrpc":"2.0","id":true,"method":"m"}'))["id"] is None


def test_a_bad_notification_is_dropped_without_a_reply():
    dropped = jsonrpc.decode('{"jsonrpc":"2.0","method":"m","params":"text"}')
    assert isinstance(dropped, jsonrpc.Malformed) and dropped.reply is None
    dropped = jsonrpc.decode('{"jsonrpc":"2.0","method":"m","params":{"n":-1e400}}')
    assert isinstance(dropped, jsonrpc.Malformed) and dropped.reply is None


def test_a_malformed_error_member_is_flagged_not_trusted():
    answer = jsonrpc.decode('{"jsonrpc":"2.0","id":1,"error":"boom"}')
    assert isinstance(answer, jsonrpc.Response)
    assert answer.error is not None and not answer.error.well_formed
    assert answer.error.code == ErrorCode.INTERNAL_ERROR


def test_outbound_messages_are_compact_unescaped_and_never_nan():
    assert jsonrpc.request(1, "m", {"t": "é"}) == '{"jsonrpc":"2.0","id":1,"method":"m","params":{"t":"é"}}'
    assert json.loads(jsonrpc.error(None, ErrorCode.PARSE_ERROR, "bad")) == {
        "jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "bad"},
    }
    with pytest.raises(ValueError):
        jsonrpc.result(1, float("nan"))


def test_outstanding_requests_are_numbered_matched_abandoned_and_drained():
    waiting: jsonrpc.Outstanding[str] = jsonrpc.Outstanding(remember_abandoned=1)
    first, text = waiting.start("ping", {}, "token-1")
    second, _ = waiting.start("fetchTurns", {}, "token-2")
    third, _ = waiting.start("subscribe", {}, "token-3")
    assert json.loads(text)["id"] == first and len({first, second, third}) == 3

    assert waiting.settle(jsonrpc.Response(first, "pong")) == ("ping", "token-1")
    assert waiting.settle(jsonrpc.Response(first, "again")) is None  # answered once only

    waiting.abandon(second)
    assert waiting.method_of(second) == "fetchTurns"  # a late answer is still recognised
    assert waiting.settle(jsonrpc.Response(second, {})) is None
    assert waiting.method_of(second) is None

    assert waiting.settle(jsonrpc.Response(None, {})) is None
    assert waiting.drain() == ["token-3"]
    assert len(waiting) == 0


# -- encode: orjson, with the standard library's rules --------------------------------------------

_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20,
)


@given(_JSON_VALUES)
def test_encode_writes_the_json_the_standard_library_writes(value) -> None:
    # Integers past 64 bits included: orjson refuses them and the standard library writes them.
    assert json.loads(jsonrpc.encode(value)) == json.loads(json.dumps(value, allow_nan=False))


def test_encoded_text_is_compact_and_unescaped() -> None:
    assert jsonrpc.encode({"a": ["é", "🙂", 1, None]}) == '{"a":["é","🙂",1,null]}'
    assert jsonrpc.result(3, {"b": 2}) == '{"jsonrpc":"2.0","id":3,"result":{"b":2}}'


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_nan_and_infinity_are_refused_not_written_as_null(bad: float) -> None:
    with pytest.raises(ValueError):
        jsonrpc.encode({"x": [1, {"y": bad}]})
    with pytest.raises(ValueError):
        jsonrpc.result(1, [bad])


def test_keys_that_are_not_strings_are_written_as_text_as_the_standard_library_writes_them() -> None:
    value = {1: "one", "two": {2.5: [None], True: 0}}
    assert jsonrpc.encode(value) == json.dumps(value, separators=(",", ":"))


@given(st.dictionaries(st.text(max_size=6).filter(lambda key: key != "items"), _JSON_VALUES, max_size=4),
       st.lists(_JSON_VALUES, max_size=4))
def test_an_object_around_a_list_joins_with_its_items_into_the_objects_own_text(fields, items) -> None:
    before, after = jsonrpc.object_with_list(fields, "items")
    joined = before + ",".join(jsonrpc.encode(item) for item in items) + after
    whole = jsonrpc.encode({**fields, "items": items})
    assert json.loads(joined) == json.loads(whole)
    if not _beyond_64_bits([fields, items]):
        # The same text too. (An integer beyond 64 bits sends the whole object to the standard
        # library's encoder, which writes a float as 1e-05 where the items' own text says 0.00001.)
        assert joined == whole


def _beyond_64_bits(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return not -2**63 <= value < 2**64
    if isinstance(value, dict):
        return any(_beyond_64_bits(item) for item in value.values())
    if isinstance(value, list):
        return any(_beyond_64_bits(item) for item in value)
    return False
