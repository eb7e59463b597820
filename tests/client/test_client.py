"""AhpClient against a fake AHP host: handshake, requests, dispatch, events, failures."""

from __future__ import annotations

import asyncio
import re

import pytest

from ahp.state import default_chat_uri
from client import (
    AhpClient,
    AhpError,
    AhpTimeout,
    ConnectionClosedError,
    HostProtocolError,
    NotSubscribedError,
)

from ._fake_host import NO_REPLY, FakeHost, RpcError
from ._states import (
    OTHER_SESSION,
    ROOT,
    SESSION,
    model_chat_state,
    model_session_state,
    model_summary,
    root_state,
    session_state,
    title,
)

CHAT = default_chat_uri(SESSION)


@pytest.fixture
async def host():
    async with FakeHost() as fake:
        fake.states[ROOT] = root_state()
        fake.states[SESSION] = model_session_state()
        fake.seq = 5
        yield fake


@pytest.fixture
async def client(host):
    c = await AhpClient.connect(host.url, client_id="me", clock=lambda: 4242)
    yield c
    await c.close()


# -- handshake -----------------------------------------------------------------------


async def test_initialize_sends_the_handshake_and_installs_snapshots(host):
    client = await AhpClient.connect(host.url, token="s3cret", client_id="me")
    try:
        result = await client.initialize([ROOT, SESSION], locale="de-CH")

        conn, message = await host.next_message("initialize")
        assert conn.headers["Authorization"] == "Bearer s3cret"
        assert message["params"] == {
            "channel": ROOT,
            "protocolVersions": ["1.0.0", "0.9.0"],
            "clientId": "me",
            "initialSubscriptions": [ROOT, SESSION],
            "locale": "de-CH",
        }
        assert result["protocolVersion"] == "1.0.0"
        assert client.protocol_version == "1.0.0"
        assert client.server_seq == 5
        assert client.state(ROOT) == root_state()
        assert client.state(SESSION) == model_session_state()
        assert client.subscriptions == [ROOT, SESSION]
    finally:
        await client.close()


async def test_initialize_error_is_raised_as_ahp_error(host, client):
    async def refuse(conn, message):
        raise RpcError(-32005, "Unsupported protocol version", {"supportedVersions": ["0.2.0"]})

    host.handlers["initialize"] = refuse
    with pytest.raises(AhpError) as info:
        await client.initialize(protocol_versions=["9.0.0"])
    assert info.value.code == -32005
    assert info.value.data == {"supportedVersions": ["0.2.0"]}
    assert client.protocol_version is None


async def test_generated_client_ids_are_unique_uuids(host):
    a = await AhpClient.connect(host.url)
    b = await AhpClient.connect(host.url)
    try:
        assert a.client_id != b.client_id
        assert re.fullmatch(r"[0-9a-f-]{36}", a.client_id)
    finally:
        await a.close()
        await b.close()


async def test_connecting_to_a_closed_port_raises_connection_closed_error():
    async with FakeHost() as fake:
        url = fake.url
    with pytest.raises(ConnectionClosedError, match="could not connect"):
        await AhpClient.connect(url)


# -- requests ------------------------------------------------------------------------


async def test_concurrent_requests_get_their_own_responses_in_any_order(host, client):
    release_slow = asyncio.Event()

    async def slow(conn, message):
        await release_slow.wait()
        return {"which": "slow"}

    async def fast(conn, message):
        release_slow.set()  # answer fast first, then let slow finish
        return {"which": "fast"}

    host.handlers["slow"] = slow
    host.handlers["fast"] = fast
    slow_task = asyncio.create_task(client.request("slow", {"channel": ROOT}))
    await host.next_message("slow")
    fast_result = await client.request("fast", {"channel": ROOT})

    assert fast_result == {"which": "fast"}
    assert await asyncio.wait_for(slow_task, 5) == {"which": "slow"}


async def test_error_response_raises_ahp_error_with_code_message_and_data(host, client):
    async def missing(conn, message):
        raise RpcError(-32008, "Not found: file:///nope", {"uri": "file:///nope"})

    host.handlers["resourceRead"] = missing
    with pytest.raises(AhpError) as info:
        await client.request("resourceRead", {"channel": ROOT, "uri": "file:///nope"})
    assert (info.value.code, info.value.message, info.value.data) == (-32008, "Not found: file:///nope", {"uri": "file:///nope"})


async def test_unanswered_request_times_out(host, client):
    never = asyncio.Event()

    async def hang(conn, message):
        await never.wait()

    host.handlers["hang"] = hang
    with pytest.raises(AhpTimeout, match="hang"):
        await client.request("hang", {"channel": ROOT}, timeout=0.2)
    assert await client.ping() is None  # the connection is still usable


async def test_ping_and_notify_reach_the_host(host, client):
    assert await client.ping() is None
    await client.notify("unsubscribe", {"channel": SESSION})
    _, message = await host.next_message("unsubscribe")
    assert message == {"jsonrpc": "2.0", "method": "unsubscribe", "params": {"channel": SESSION}}


async def test_frame_hook_sees_every_host_frame_with_the_answered_method(host):
    seen: list[tuple[str | None, str | None]] = []
    client = await AhpClient.connect(host.url, frame_hook=lambda frame, method: seen.append((frame.get("method"), method)))
    try:
        await client.initialize([SESSION])
        conn = host.connections[0]
        await conn.notify("root/sessionRemoved", {"channel": ROOT, "session": OTHER_SESSION})
        await client.ping()
    finally:
        await client.close()
    assert seen == [(None, "initialize"), ("root/sessionRemoved", None), (None, "ping")]


async def test_a_failing_frame_hook_fails_the_request_loudly(host):
    def strict(frame, method):
        raise AssertionError(f"schema violation in {method}")

    client = await AhpClient.connect(host.url, frame_hook=strict)
    try:
        with pytest.raises(AssertionError, match="schema violation in ping"):
            await client.ping()
    finally:
        await client.close()


# -- subscriptions and dispatch ------------------------------------------------------


async def test_subscribe_installs_the_snapshot_and_unknown_channels_raise(host, client):
    await client.initialize()
    assert await client.subscribe(SESSION) == model_session_state()
    with pytest.raises(AhpError) as info:
        await client.subscribe(OTHER_SESSION)
    assert info.value.code == -32001
    assert client.state(OTHER_SESSION) is None


async def test_stateless_subscription_returns_none_and_is_remembered(host, client):
    async def stateless(conn, message):
        return {}

    host.handlers["subscribe"] = stateless
    await client.initialize()
    assert await client.subscribe("ahp-otlp://logs") is None
    assert client.subscriptions == ["ahp-otlp://logs"]


async def test_dispatch_applies_optimistically_then_confirms_on_echo(host, client):
    # 0.2.0 on purpose: a 0.2.0 replica stamps summary.modifiedAt with its own (injected) clock,
    # which the model's reducers never do (the tests around it dispatch on the model).
    host.states[SESSION] = session_state()
    await client.initialize([SESSION], protocol_versions=("0.2.0",))
    seq = client.dispatch(SESSION, title("Renamed"))

    assert seq == 1
    assert client.state(SESSION)["summary"]["title"] == "Renamed"
    assert client.state(SESSION)["summary"]["modifiedAt"] == 4242  # the injected clock
    _, message = await host.next_message("dispatchAction")
    assert message["params"] == {"channel": SESSION, "clientSeq": 1, "action": title("Renamed")}

    outcome = await client.outcome(seq)
    assert outcome.accepted and outcome.server_seq == 6
    assert client.mirror.confirmed_state(SESSION)["summary"]["title"] == "Renamed"
    assert client.mirror.pending() == []
    assert client.server_seq == 6
    assert client.dispatch(SESSION, title("Again")) == 2


async def test_rejected_dispatch_rolls_back_and_reports_the_reason(host, client):
    async def reject(conn, message):
        p = message["params"]
        await conn.envelope(p["channel"], p["action"], origin={"clientId": "me", "clientSeq": p["clientSeq"]}, reason="Titles are locked")

    host.handlers["dispatchAction"] = reject
    await client.initialize([SESSION])
    seq = client.dispatch(SESSION, title("Nope"))
    assert client.state(SESSION)["title"] == "Nope"

    outcome = await client.outcome(seq)
    assert outcome.status == "rejected" and outcome.reason == "Titles are locked"
    assert client.mirror.rejections == [outcome]
    assert client.state(SESSION) == model_session_state()
    assert client.server_seq == 5  # a rejection reuses the current serverSeq


async def test_an_envelope_right_behind_the_subscribe_response_is_not_lost(host, client):
    async def subscribe_then_act(conn, message):
        snapshot = host.snapshot(message["params"]["channel"])
        await conn.send({"jsonrpc": "2.0", "id": message["id"], "result": {"snapshot": snapshot}})
        await conn.envelope(SESSION, title("Right after"))  # same socket, no gap
        return NO_REPLY

    host.handlers["subscribe"] = subscribe_then_act
    await client.initialize()
    await client.subscribe(SESSION)
    await client.wait_for(lambda mirror, _e: mirror.state(SESSION)["title"] == "Right after")
    assert client.mirror.channel_seq(SESSION) == 6


async def test_closing_the_client_settles_pending_actions_as_lost(host, client):
    host.handlers["dispatchAction"] = lambda conn, message: asyncio.sleep(0)  # never echoes
    await client.initialize([SESSION])
    seq = client.dispatch(SESSION, title("Unconfirmed"))
    await client.close()
    outcome = client.mirror.outcome(seq)
    assert outcome is not None and outcome.status == "lost"
    assert client.state(SESSION) == model_session_state()


async def test_dispatch_to_an_unsubscribed_channel_is_refused(host, client):
    await client.initialize()
    with pytest.raises(NotSubscribedError):
        client.dispatch(SESSION, title("x"))


async def test_foreign_envelopes_update_the_mirror_and_wake_waiters(host, client):
    await client.initialize([SESSION])
    waiting = asyncio.create_task(
        client.wait_for(lambda mirror, _e: mirror.state(SESSION)["title"] == "From elsewhere")
    )
    await host.connections[0].envelope(SESSION, title("From elsewhere"), origin={"clientId": "other", "clientSeq": 9})

    event = await asyncio.wait_for(waiting, 5)
    assert event.method == "action" and event.params["serverSeq"] == 6


async def test_wait_for_returns_at_once_when_already_true_and_times_out_otherwise(host, client):
    await client.initialize([SESSION])
    assert await client.wait_for(lambda mirror, _e: SESSION in mirror) is None
    with pytest.raises(AhpTimeout):
        await client.wait_for(lambda mirror, _e: False, timeout=0.1)


async def test_events_arrive_in_order_including_root_notifications(host, client):
    await client.initialize([SESSION])
    stream = client.events()
    queue = client.subscribe_events()
    conn = host.connections[0]
    summary = model_summary(OTHER_SESSION)
    await conn.notify("root/sessionAdded", {"channel": ROOT, "summary": summary})
    await conn.envelope(SESSION, title("One"))
    await conn.notify("root/sessionSummaryChanged", {"channel": ROOT, "session": SESSION, "changes": {"title": "One"}})

    got = [await stream.next() for _ in range(3)]
    assert [e.method for e in got] == ["root/sessionAdded", "action", "root/sessionSummaryChanged"]
    assert got[1].action == title("One") and got[1].channel == SESSION
    assert [(await queue.get()).method for _ in range(3)] == [e.method for e in got]
    stream.close()


async def test_events_stream_ends_when_the_client_closes(host, client):
    await client.initialize()
    stream = client.events()
    await client.close()
    assert [e async for e in stream] == []


# -- conveniences --------------------------------------------------------------------


async def test_create_session_mints_a_uri_sends_selection_and_subscribes(host, client):
    async def create(conn, message):
        channel = message["params"]["channel"]
        host.states[channel] = model_session_state(channel)
        host.states[default_chat_uri(channel)] = model_chat_state(default_chat_uri(channel))
        return None

    host.handlers["createSession"] = create
    await client.initialize()
    channel = await client.create_session(provider="scripted", model="m1", agent="agent://a", working_directory="/w")

    assert re.fullmatch(r"scripted:/[0-9a-f-]{36}", channel)  # <provider>:/<id>, as the model names a session
    _, message = await host.next_message("createSession")
    assert message["params"] == {
        "channel": channel,
        "provider": "scripted",
        "model": {"id": "m1"},
        "agent": {"uri": "agent://a"},
        "workingDirectory": "/w",
    }
    assert client.state(channel) == model_session_state(channel)
    assert client.subscriptions == [channel, default_chat_uri(channel)]  # and its default chat


async def test_send_message_and_cancel_turn_dispatch_turn_actions(host, client):
    host.states[CHAT] = model_chat_state(CHAT)
    await client.initialize([SESSION, CHAT])
    turn_id = client.send_message(SESSION, "hello", attachments=[{"type": "simple", "label": "x", "modelRepresentation": "y"}])

    assert client.state(CHAT)["activeTurn"]["id"] == turn_id  # a session's message goes to its default chat
    _, started = await host.next_message("dispatchAction")
    assert started["params"]["channel"] == CHAT
    assert started["params"]["action"] == {
        "type": "chat/turnStarted",
        "turnId": turn_id,
        "startedAt": "1970-01-01T00:00:04.242Z",  # the injected clock (4242 ms)
        "message": {"text": "hello", "attachments": [{"type": "simple", "label": "x", "modelRepresentation": "y"}],
                    "origin": {"kind": "user"}},
    }
    seq = client.cancel_turn(SESSION, turn_id)
    assert (await client.outcome(seq)).accepted
    assert client.state(CHAT)["turns"][-1]["state"] == "cancelled"


async def test_list_sessions_fetch_turns_and_dispose_session(host, client):
    async def list_sessions(conn, message):
        return {"items": [session_state()["summary"]]}

    async def fetch_turns(conn, message):
        assert message["params"] == {"channel": SESSION, "before": "t9", "limit": 2}
        return {"turns": [], "hasMore": False}

    async def dispose(conn, message):
        return None

    host.handlers.update(listSessions=list_sessions, fetchTurns=fetch_turns, disposeSession=dispose)
    # 0.2.0 on purpose: its fetchTurns pages with before/limit and answers the turns itself (the
    # model's cursor paging against a real host: test_model_client's long-chat test).
    host.states[SESSION] = session_state()
    await client.initialize([SESSION], protocol_versions=("0.2.0",))
    assert await client.list_sessions() == [session_state()["summary"]]
    assert await client.fetch_turns(SESSION, before="t9", limit=2) == {"turns": [], "hasMore": False}
    await client.dispose_session(SESSION)
    assert client.state(SESSION) is None and client.subscriptions == []


# -- host-to-client requests ---------------------------------------------------------


async def test_unhandled_host_requests_are_answered_method_not_found(host, client):
    await client.initialize()
    conn = host.connections[0]
    request_id = await conn.request("resourceRead", {"channel": ROOT, "uri": "virtual://x"})
    reply = await host.next_reply(request_id)
    assert reply == {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found: resourceRead"}}


async def test_registered_host_request_handlers_answer(host, client):
    async def read(params):
        if params["uri"] == "virtual://missing":
            raise AhpError(-32008, "Not found")
        return {"data": "hi", "encoding": "utf-8"}

    client.on_request("resourceRead", read)
    await client.initialize()
    conn = host.connections[0]
    ok_id = await conn.request("resourceRead", {"channel": ROOT, "uri": "virtual://x"})
    ok = await host.next_reply(ok_id)
    bad_id = await conn.request("resourceRead", {"channel": ROOT, "uri": "virtual://missing"})
    bad = await host.next_reply(bad_id)
    assert ok == {"jsonrpc": "2.0", "id": ok_id, "result": {"data": "hi", "encoding": "utf-8"}}
    assert bad == {"jsonrpc": "2.0", "id": bad_id, "error": {"code": -32008, "message": "Not found"}}


# -- failures ------------------------------------------------------------------------


async def test_host_closing_the_socket_fails_pending_requests_fast(host, client):
    never = asyncio.Event()

    async def hang(conn, message):
        await never.wait()

    host.handlers["hang"] = hang
    await client.initialize([SESSION])
    stream = client.events()
    waiter = asyncio.create_task(client.wait_for(lambda m, e: False, timeout=30))
    pending = asyncio.create_task(client.request("hang", {"channel": ROOT}, timeout=30))
    await host.next_message("hang")

    await host.connections[0].ws.close(1011, "host going down")

    with pytest.raises(ConnectionClosedError, match="1011"):
        await asyncio.wait_for(pending, 5)
    with pytest.raises(ConnectionClosedError):
        await asyncio.wait_for(waiter, 5)
    with pytest.raises(ConnectionClosedError):
        await stream.next()
    with pytest.raises(ConnectionClosedError):
        await client.ping()
    with pytest.raises(ConnectionClosedError):
        client.dispatch(SESSION, title("x"))
    assert not client.is_connected


async def test_a_frame_that_is_not_json_is_a_clear_protocol_error(host, client):
    never = asyncio.Event()

    async def garbage(conn, message):
        await conn.send("this is {not json")
        await never.wait()

    host.handlers["garbage"] = garbage
    with pytest.raises(HostProtocolError, match="not valid JSON"):
        await client.request("garbage", {"channel": ROOT})
    with pytest.raises(HostProtocolError):
        await client.ping()


async def test_a_malformed_envelope_is_a_protocol_error(host, client):
    never = asyncio.Event()

    async def bad(conn, message):
        await conn.notify("action", {"channel": SESSION, "action": title("x")})  # no serverSeq
        await never.wait()

    host.handlers["bad"] = bad
    await client.initialize([SESSION])
    with pytest.raises(HostProtocolError, match="envelope"):
        await client.request("bad", {"channel": ROOT})
