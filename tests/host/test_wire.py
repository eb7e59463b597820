"""host.wire: the fast encoder writes exactly what ahp.jsonrpc.encode writes, and refuses what it refuses."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ahp.jsonrpc import encode
from host.wire import action_frame, encode_fast

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_the_fast_encoder_writes_the_same_json_as_the_reference_encoder(value) -> None:
    assert json.loads(encode_fast(value)) == json.loads(encode(value))


def test_text_is_compact_and_unescaped() -> None:
    assert encode_fast({"a": ["é", "🙂", 1, None]}) == '{"a":["é","🙂",1,null]}'


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_nan_and_infinity_are_refused_not_written_as_null(bad: float) -> None:
    with pytest.raises(ValueError):
        encode_fast({"x": [1, {"y": bad}]})


def test_an_action_frame_carries_the_journaled_envelope_text() -> None:
    envelope = {"channel": "ahp-session:/s", "action": {"type": "session/delta", "content": "hé"}, "serverSeq": 3}
    text, frame = action_frame(envelope)
    assert json.loads(text) == envelope
    assert json.loads(frame) == {"jsonrpc": "2.0", "method": "action", "params": envelope}
