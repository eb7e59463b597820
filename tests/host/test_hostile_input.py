"""Hostile and malformed input: each frame gets its error (or is dropped), state is untouched, and
the same connection still answers a valid request right after."""

from __future__ import annotations

import json
from typing import Any

import pytest
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from host.transport.server import RunningHost
from tests.conftest import TOKEN, Connect, FrameChecker
from tests.host.transport.test_connection import RawPeer

ROOT = "ahp-root://"
PARSE, INVALID_REQUEST, NO_METHOD, INVALID_PARAMS = -32700, -32600, -32601, -32602
DROPPED = "dropped"  # a notification the host must ignore without replying
REJECTED = "rejected"  # a dispatchAction answered with a rejection envelope

SESSION = "ahp-session:/hostile-target"


def req(method: str, params: Any = None, msg_id: Any = 7, **extra: Any) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    message.update(extra)
    return json.dumps(message)


def note(method: str, params: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "method": method, "params": params})


def act(action: Any, client_seq: Any = 1, channel: str = SESSION) -> str:
    return note("dispatchAction", {"channel": channel, "clientSeq": client_seq, "action": action})


HOSTILE: list[tuple[str, str, Any]] = [
    # -- not JSON-RPC at all --
    ("not json", "{this is not json", PARSE),
    ("truncated json", '{"jsonrpc": "2.0", "id": 1, "method": "ping"', PARSE),
    ("empty frame", "", PARSE),
    ("json string", '"hello"', INVALID_REQUEST),
    ("json number", "42", INVALID_REQUEST),
    ("json null", "null", INVALID_REQUEST),
    ("batch array", json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"channel": ROOT}}]), INVALID_REQUEST),
    ("empty batch", "[]", INVALID_REQUEST),
    ("NaN literal", '{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": NaN}}', PARSE),
    # -- wrong envelope --
    ("missing jsonrpc", json.dumps({"id": 1, "method": "ping"}), INVALID_REQUEST),
    ("jsonrpc 1.0", json.dumps({"jsonrpc": "1.0", "id": 1, "method": "ping"}), INVALID_REQUEST),
    ("jsonrpc as number", json.dumps({"jsonrpc": 2.0, "id": 1, "method": "ping"}), INVALID_REQUEST),
    ("method is a number", json.dumps({"jsonrpc": "2.0", "id": 1, "method": 5}), INVALID_REQUEST),
    ("method missing", json.dumps({"jsonrpc": "2.0", "id": 1}), INVALID_REQUEST),
    ("empty method", req(""), INVALID_REQUEST),
    ("id is an object", req("ping", {"channel": ROOT}, msg_id={"a": 1}), INVALID_REQUEST),
    ("id is a list", req("ping", {"channel": ROOT}, msg_id=[1]), INVALID_REQUEST),
    ("id is a boolean", req("ping", {"channel": ROOT}, msg_id=True), INVALID_REQUEST),
    ("id is null", req("ping", {"channel": ROOT}, msg_id=None), INVALID_REQUEST),
    ("params is a string", req("listSessions", "all"), INVALID_REQUEST),
    ("params is a number", req("listSessions", 3), INVALID_REQUEST),
    # -- unknown or misused methods --
    ("unknown method", req("frobnicate", {}), NO_METHOD),
    ("method with different case", req("Initialize", {}), NO_METHOD),
    ("host-only notification name as request", req("root/sessionAdded", {"channel": ROOT}), NO_METHOD),
    ("notification sent as a request", req("dispatchAction", {"channel": SESSION, "clientSeq": 1, "action": {"type": "session/isReadChanged", "isRead": True}}), INVALID_REQUEST),
    ("second initialize", req("initialize", {"channel": ROOT, "protocolVersions": ["0.2.0"], "clientId": "again"}), INVALID_REQUEST),
    ("unknown notification", note("frobnicate", {}), DROPPED),
    ("stray response with unknown id", json.dumps({"jsonrpc": "2.0", "id": 999999, "result": None}), DROPPED),
    # -- invalid params --
    ("subscribe without channel", req("subscribe", {}), INVALID_PARAMS),
    ("subscribe with numeric channel", req("subscribe", {"channel": 12}), INVALID_PARAMS),
    ("subscribe to unknown session", req("subscribe", {"channel": "ahp-session:/nope"}), -32001),
    ("subscribe to unknown scheme", req("subscribe", {"channel": "bogus://x"}), -32008),
    ("createSession without channel", req("createSession", {}), INVALID_PARAMS),
    ("createSession on a non-session uri", req("createSession", {"channel": "file:///etc"}), INVALID_PARAMS),
    ("createSession with model as number", req("createSession", {"channel": "ahp-session:/m", "model": 5}), INVALID_PARAMS),
    ("createSession for someone else's active client", req("createSession", {"channel": "ahp-session:/ac", "activeClient": {"clientId": "mallory", "tools": []}}), INVALID_PARAMS),
    ("fork with wrong shape", req("createSession", {"channel": "ahp-session:/f", "fork": "yes"}), INVALID_PARAMS),
    ("fetchTurns with string limit", req("fetchTurns", {"channel": SESSION, "limit": "ten"}), INVALID_PARAMS),
    ("fetchTurns with negative limit", req("fetchTurns", {"channel": SESSION, "limit": -1}), INVALID_PARAMS),
    ("disposeSession without channel", req("disposeSession", {}), INVALID_PARAMS),
    ("resourceRead without uri", req("resourceRead", {"channel": ROOT}), INVALID_PARAMS),
    ("resourceRead with a bad encoding", req("resourceRead", {"channel": ROOT, "uri": "file:///x", "encoding": "rot13"}), INVALID_PARAMS),
    ("resourceRead outside the roots", req("resourceRead", {"channel": ROOT, "uri": "file:///etc/hostname"}), -32009),
    ("resourceRead with NUL", req("resourceRead", {"channel": ROOT, "uri": "file:///tmp/a%00b"}), -32009),
    ("authenticate unknown resource", req("authenticate", {"channel": ROOT, "resource": "https://x", "token": "t"}), INVALID_PARAMS),
    # -- dispatchAction abuse --
    ("dispatch to unknown channel", act({"type": "session/isReadChanged", "isRead": True}, channel="ahp-session:/ghost"), DROPPED),
    ("dispatch without clientSeq", note("dispatchAction", {"channel": SESSION, "action": {"type": "session/isReadChanged", "isRead": True}}), DROPPED),
    ("dispatch with params as list", json.dumps({"jsonrpc": "2.0", "method": "dispatchAction", "params": [1, 2]}), DROPPED),
    ("action is a string", act("session/turnStarted"), REJECTED),
    ("action without type", act({"turnId": "t"}), REJECTED),
    ("unknown action type", act({"type": "session/explode"}), REJECTED),
    ("server-only action", act({"type": "session/turnComplete", "turnId": "t"}), REJECTED),
    ("root action on a session", act({"type": "root/agentsChanged", "agents": []}), REJECTED),
    ("session action on root", act({"type": "session/titleChanged", "title": "x"}, channel=ROOT), REJECTED),
    ("turnStarted without message", act({"type": "session/turnStarted", "turnId": "t1"}), REJECTED),
    ("turnStarted with numeric text", act({"type": "session/turnStarted", "turnId": "t1", "userMessage": {"text": 5}}), REJECTED),
    ("cancel without a running turn", act({"type": "session/turnCancelled", "turnId": "t1"}), REJECTED),
    ("confirm an unknown tool call", act({"type": "session/toolCallConfirmed", "turnId": "t", "toolCallId": "c", "approved": True, "confirmed": "user-action"}), REJECTED),
    ("complete a host tool call", act({"type": "session/toolCallComplete", "turnId": "t", "toolCallId": "c", "result": {"success": True, "pastTenseMessage": "x"}}), REJECTED),
    ("claim active client for another id", act({"type": "session/activeClientChanged", "activeClient": {"clientId": "mallory", "tools": []}}), REJECTED),
    ("publish tools without being active", act({"type": "session/activeClientToolsChanged", "tools": []}), REJECTED),
    ("remove a pending message that is not there", act({"type": "session/pendingMessageRemoved", "kind": "queued", "id": "zz"}), REJECTED),
    ("answer an unknown input request", act({"type": "session/inputAnswerChanged", "requestId": "r", "questionId": "q"}), REJECTED),
    ("complete an unknown input request", act({"type": "session/inputCompleted", "requestId": "r", "response": "accept"}), REJECTED),
    ("change an unknown config key", act({"type": "session/configChanged", "config": {"danger": True}}), REJECTED),
    ("autoApprove as a string", act({"type": "session/configChanged", "config": {"autoApprove": "yes"}}), REJECTED),
    ("autoApprove as a number", act({"type": "session/configChanged", "config": {"autoApprove": 1}}), REJECTED),
    ("autoApprove as null", act({"type": "session/configChanged", "config": {"autoApprove": None}}), REJECTED),
    ("toggle an unknown customization", act({"type": "session/customizationToggled", "id": "x", "enabled": False}), REJECTED),
    ("empty title", act({"type": "session/titleChanged", "title": "   "}), REJECTED),
    ("isRead as string", act({"type": "session/isReadChanged", "isRead": "yes"}), REJECTED),
    ("deeply nested junk", act({"type": "session/titleChanged", "title": [[[[[[[[[["x"]]]]]]]]]]}), REJECTED),
    # -- the parser's own limits --
    ("nested 1,000 deep", '{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": ' + "[" * 1000 + "]" * 1000 + "}", PARSE),
    ("nested 100,000 deep", "[" * 100_000 + "]" * 100_000, PARSE),
    ("nested 65 deep", req("ping", {"channel": ROOT, "x": json.loads("[" * 63 + "]" * 63)}), PARSE),
    ("limit of 1e999", '{"jsonrpc": "2.0", "id": 7, "method": "fetchTurns", "params": {"channel": "' + SESSION + '", "limit": 1e999}}', INVALID_PARAMS),
    ("a huge number in a ping", '{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"channel": "ahp-root://", "n": -1e400}}', INVALID_PARAMS),
    # -- session URIs that are not safe ids --
    ("createSession with ../", req("createSession", {"channel": "ahp-session:/../../etc"}), INVALID_PARAMS),
    ("createSession with NUL", req("createSession", {"channel": "ahp-session:/a\u0000b"}), INVALID_PARAMS),
    ("createSession with a bidi override", req("createSession", {"channel": "ahp-session:/abc\u202edcba"}), INVALID_PARAMS),
    ("createSession with 100 KB", req("createSession", {"channel": "ahp-session:/" + "a" * 100_000}), INVALID_PARAMS),
    ("createSession with markup", req("createSession", {"channel": "ahp-session:/<script>alert(1)</script>"}), INVALID_PARAMS),
    ("createSession with a space", req("createSession", {"channel": "ahp-session:/my session"}), INVALID_PARAMS),
    ("createSession with an empty id", req("createSession", {"channel": "ahp-session:/"}), INVALID_PARAMS),
]


@pytest.fixture
async def peer(running_host: RunningHost, connect: Connect, frame_checker: FrameChecker) -> Any:
    owner = await connect()
    await owner.create_session(SESSION)
    peer = await RawPeer.open(running_host, frame_checker)
    reply = await peer.request("initialize", {"channel": ROOT, "protocolVersions": ["0.2.0"], "clientId": "hostile", "initialSubscriptions": [ROOT, SESSION]})
    assert "result" in reply
    yield peer
    await peer.close()


def test_the_table_has_at_least_forty_cases() -> None:
    assert len(HOSTILE) >= 40
    assert len({name for name, _, _ in HOSTILE}) == len(HOSTILE)


@pytest.mark.parametrize("name,frame,expected", HOSTILE, ids=[case[0] for case in HOSTILE])
async def test_hostile_frame(name: str, frame: str, expected: Any, peer: RawPeer, running_host: RunningHost, frame_checker: FrameChecker) -> None:
    store = running_host.host.store
    seq_before = store.seq
    internal = running_host.host.session_uri(SESSION)
    chat = store.state(internal)["defaultChat"]
    session_before, chat_before = store.state(internal), store.state(chat)
    sessions_before = sorted(uri for uri, _ in store.channels("session"))

    await peer.send(frame)
    if expected == DROPPED:
        pass
    elif expected == REJECTED:
        envelope = (await peer.recv())["params"]
        assert envelope["rejectionReason"], name
        assert envelope["origin"]["clientId"] == "hostile"
        assert envelope["serverSeq"] == seq_before
    else:
        reply = await peer.recv()
        assert reply.get("error", {}).get("code") == expected, (name, reply)
        message = reply["error"]["message"]
        assert message and "Traceback" not in message and "pydantic" not in message.lower()

    # The connection is still usable: the very next frame is the answer to this ping.
    pong = await peer.request("ping", {"channel": ROOT})
    assert pong == {"jsonrpc": "2.0", "id": peer.next_id, "result": None}
    assert store.seq == seq_before
    assert store.state(internal) is session_before and store.state(chat) is chat_before
    assert sorted(uri for uri, _ in store.channels("session")) == sessions_before


async def test_requests_before_initialize_are_refused_but_ping_works(running_host: RunningHost, frame_checker: FrameChecker) -> None:
    peer = await RawPeer.open(running_host, frame_checker)
    assert (await peer.request("ping", {"channel": ROOT}))["result"] is None
    reply = await peer.request("listSessions", {"channel": ROOT})
    assert reply["error"]["code"] == INVALID_REQUEST
    assert "initialize" in reply["error"]["message"]
    assert "result" in await peer.request("initialize", {"channel": ROOT, "protocolVersions": ["0.2.0"], "clientId": "late"})
    assert "result" in await peer.request("listSessions", {"channel": ROOT})
    await peer.close()


async def test_a_frame_over_the_size_limit_closes_the_connection(tmp_path: Any) -> None:
    from host.service import AgentHost
    from host.transport.server import start_host
    from tests.conftest import host_config

    config = host_config(tmp_path / "data", default_agent="offline")
    config.server.max_frame_bytes = 4096
    running = await start_host(AgentHost(config), token=TOKEN)
    try:
        peer = await RawPeer.open(running)
        await peer.send(req("ping", {"channel": ROOT, "pad": "x" * 10_000}))
        with pytest.raises(ConnectionClosed) as closed:
            await peer.recv()
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
    finally:
        await running.stop()


@pytest.mark.parametrize(
    "headers,query",
    [
        ({}, ""),
        ({"Authorization": "Bearer wrong-token"}, ""),
        ({}, "?token=wrong-token"),
        ({"Authorization": "Basic " + TOKEN}, ""),
        ({"Authorization": "Bearer "}, ""),
    ],
    ids=["no token", "wrong bearer", "wrong query token", "basic scheme", "empty bearer"],
)
async def test_a_missing_or_wrong_token_is_refused(running_host: RunningHost, headers: dict[str, str], query: str) -> None:
    base = running_host.url.split("?")[0]
    with pytest.raises(InvalidStatus) as refused:
        await ws_connect(base + query, additional_headers=headers or None)
    assert refused.value.response.status_code == 403


async def test_the_token_is_accepted_as_bearer_header_or_query(running_host: RunningHost) -> None:
    base = running_host.url.split("?")[0]
    for url, headers in [(base + "?token=" + TOKEN, None), (base, {"Authorization": "Bearer " + TOKEN})]:
        ws = await ws_connect(url, additional_headers=headers)
        await ws.send(req("ping", {"channel": ROOT}))
        assert json.loads(await ws.recv())["result"] is None
        await ws.close()


@pytest.mark.parametrize("origin", ["https://evil.example", "http://localhost:1234", "null", "file://"])
async def test_a_websocket_from_a_web_page_origin_is_refused(running_host: RunningHost, origin: str) -> None:
    with pytest.raises(InvalidStatus) as refused:
        await ws_connect(running_host.url, origin=origin)  # type: ignore[arg-type]  # websockets wants its Origin NewType
    assert refused.value.response.status_code == 403


async def test_an_allowed_origin_may_connect(tmp_path: Any) -> None:
    from host.service import AgentHost
    from host.transport.server import start_host
    from tests.conftest import host_config

    config = host_config(tmp_path / "data", default_agent="offline")
    config.server.allowed_origins = ["http://localhost:5173"]
    running = await start_host(AgentHost(config), token=TOKEN)
    try:
        ws = await ws_connect(running.url, origin="http://localhost:5173")  # type: ignore[arg-type]  # websockets wants its Origin NewType
        await ws.send(req("ping", {"channel": ROOT}))
        assert json.loads(await ws.recv())["result"] is None
        await ws.close()
    finally:
        await running.stop()


async def test_connections_past_the_limits_are_closed_with_a_reason_and_the_rest_keep_working(tmp_path) -> None:
    from host.service import AgentHost
    from host.transport.server import start_host
    from tests.conftest import host_config

    config = host_config(tmp_path / "data", default_directory=str(tmp_path))
    config.server.max_connections = 3
    config.server.max_connections_per_token = 2
    running = await start_host(AgentHost(config), token=TOKEN)
    base = running.url.split("?")[0]
    try:
        first = await ws_connect(f"{base}?token={TOKEN}")
        second = await ws_connect(base, additional_headers={"Authorization": f"Bearer {TOKEN}"})
        third = await ws_connect(f"{base}?token={TOKEN}")
        with pytest.raises(ConnectionClosed) as refused:
            await third.recv()
        assert refused.value.rcvd.code == 1013
        assert "this token has 2 connections open" in refused.value.rcvd.reason
        await second.close()
        again = await ws_connect(f"{base}?token={TOKEN}")  # a slot was freed
        await again.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"channel": ROOT}}))
        answer = json.loads(await again.recv())
        assert answer == {"jsonrpc": "2.0", "id": 1, "result": None}  # served, not refused
        await first.close()
        await again.close()
    finally:
        await running.stop()


def test_the_host_wide_limit_counts_every_token() -> None:
    from types import SimpleNamespace

    from host.transport.server import _connection_refusal

    limits = SimpleNamespace(max_connections=3, max_connections_per_token=2)
    assert _connection_refusal(limits, {"a": 2, "b": 1}, "c") == "host is at its limit of 3 connections; try again later"
    assert _connection_refusal(limits, {"a": 1, "b": 1}, "c") is None
    assert len(_connection_refusal(limits, {"a": 2}, "a").encode()) <= 123  # fits a close frame
