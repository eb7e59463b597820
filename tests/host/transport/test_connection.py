"""End to end over a real WebSocket on 127.0.0.1 port 0: what clients of the host see."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from ahp.dialects.negotiation import SERVED_VERSIONS
from ahp.dialects.v0_2.wire import METHODS
from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS, AhpClient, AhpError
from host.service import AgentHost
from host.transport.dialects import DEFAULT_VERSION
from host.transport.dialects.ahp02 import v02_session_state
from host.transport.server import RunningHost, start_host
from tests.conftest import TOKEN, Connect, host_config

ROOT = "ahp-root://"


def turn_count(client: AhpClient, session: str) -> Any:
    return lambda mirror, event: len((client.state(session) or {}).get("turns") or []) >= 1


async def run_turn(client: AhpClient, session: str, text: str) -> dict[str, Any]:
    """Send a message and wait until the turn is complete in this client's mirror."""
    before = len((client.state(session) or {}).get("turns") or [])
    turn_id = client.send_message(session, text)
    await client.wait_for(lambda m, e: len((client.state(session) or {}).get("turns") or []) > before, timeout=10)
    turn = client.state(session)["turns"][-1]
    assert turn["id"] == turn_id
    return turn


def without_clock(state: dict[str, Any]) -> dict[str, Any]:
    """Each replica stamps modifiedAt with its own clock (PROTOCOL.md §7); compare the rest."""
    state = copy.deepcopy(state)
    state["summary"].pop("modifiedAt", None)
    return state


async def test_a_message_streams_an_answer_as_response_part_and_deltas(connect: Connect) -> None:
    client = await connect()
    session = await client.create_session()
    await client.wait_for(lambda m, e: client.state(session)["lifecycle"] == "ready")
    events = client.subscribe_events()
    turn = await run_turn(client, session, "hello host")

    types = []
    while not events.empty():
        note = events.get_nowait()
        if note.method == "action" and note.params["channel"] == session:
            types.append(note.params["action"]["type"])
    assert types[0] == "session/turnStarted"
    assert types[1] == "session/responsePart"
    assert types.count("session/delta") > 5
    assert types[-2:] == ["session/usage", "session/turnComplete"]
    assert turn["state"] == "complete"
    [part] = turn["responseParts"]
    assert part["kind"] == "markdown"
    assert part["content"].startswith('You said: "hello host"')
    assert turn["usage"]["outputTokens"] > 0


async def test_two_clients_converge_on_the_same_session_state(connect: Connect, running_host: RunningHost) -> None:
    alice = await connect(clock=lambda: 0)
    bob = await connect(clock=lambda: 0)
    session = await alice.create_session()
    await bob.subscribe(session)
    await run_turn(alice, session, "first")
    await run_turn(bob, session, "second")
    alice.dispatch(session, {"type": "session/titleChanged", "title": "Shared work"})
    await bob.wait_for(lambda m, e: bob.state(session)["summary"]["title"] == "Shared work")
    await alice.ping()  # everything dispatched before the ping has been echoed
    await bob.ping()
    assert alice.state(session) == bob.state(session)
    assert without_clock(alice.state(session)) == without_clock(v02_session_state(running_host.host, session))
    assert [t["userMessage"]["text"] for t in bob.state(session)["turns"]] == ["first", "second"]


async def test_accepted_actions_are_echoed_to_every_subscriber_with_their_origin(connect: Connect) -> None:
    alice = await connect()
    bob = await connect()
    session = await alice.create_session()
    await bob.subscribe(session)
    bob_events = bob.subscribe_events()
    seq = alice.dispatch(session, {"type": "session/isReadChanged", "isRead": True})
    outcome = await alice.outcome(seq)
    assert outcome.accepted
    note = await asyncio.wait_for(_next_action(bob_events, "session/isReadChanged"), 5)
    assert note["origin"] == {"clientId": alice.client_id, "clientSeq": seq}
    assert bob.state(session)["summary"]["status"] & 32


async def _next_action(queue: asyncio.Queue, action_type: str) -> dict[str, Any]:
    while True:
        note = await queue.get()
        if note.method == "action" and note.params["action"]["type"] == action_type:
            return note.params


async def test_a_refused_action_reaches_only_its_sender_and_changes_nothing(connect: Connect, running_host: RunningHost) -> None:
    alice = await connect()
    bob = await connect()
    session = await alice.create_session()
    await bob.subscribe(session)
    bob_events = bob.subscribe_events()
    seq_before = running_host.host.store.seq
    store = running_host.host.store
    internal = running_host.host.session_uri(session)
    state_before = [store.state(internal), store.state(store.state(internal)["defaultChat"])]

    seq = alice.dispatch(session, {"type": "session/turnCancelled", "turnId": "no-such-turn"})
    outcome = await alice.outcome(seq)
    assert not outcome.accepted
    assert "nothing to cancel" in outcome.reason
    await bob.ping()
    assert bob_events.empty()
    assert running_host.host.store.seq == seq_before
    assert [store.state(internal), store.state(store.state(internal)["defaultChat"])] == state_before
    assert all(now is then for now, then in zip([store.state(internal), store.state(store.state(internal)["defaultChat"])], state_before))
    assert alice.state(session) == bob.state(session)


async def test_host_only_and_wrong_channel_actions_are_rejected(connect: Connect) -> None:
    client = await connect()
    session = await client.create_session()
    cases = [
        (session, {"type": "session/delta", "turnId": "t", "partId": "p", "content": "x"}, "host only"),
        (session, {"type": "root/configChanged", "config": {}}, "root channel"),
        (ROOT, {"type": "root/agentsChanged", "agents": []}, "host only"),
        (session, {"type": "session/titleChanged"}, "title is required"),
        (session, {"type": "session/notAThing"}, "Unknown action type"),
    ]
    for channel, action, expected in cases:
        outcome = await client.outcome(client.dispatch(channel, action))
        assert not outcome.accepted, action
        assert expected in outcome.reason, (action, outcome.reason)


async def test_a_second_turn_while_one_runs_is_refused_and_a_queued_message_runs_after(tmp_path) -> None:
    host = AgentHost(host_config(tmp_path / "data", offline_delay=0.02, default_agent="offline"))
    running = await start_host(host, token=TOKEN)
    try:
        client = await AhpClient.connect(running.url)
        await client.initialize(subscriptions=[ROOT])
        session = await client.create_session()
        chat = default_chat_uri(session)
        first = client.send_message(session, "long answer please")
        refused = await client.outcome(client.dispatch(chat, {
            "type": "chat/turnStarted", "turnId": "t2", "startedAt": "2026-01-01T00:00:00.000Z",
            "message": {"text": "x", "origin": {"kind": "user"}}}))
        assert not refused.accepted and "still running" in refused.reason
        client.dispatch(chat, {"type": "chat/pendingMessageSet", "kind": "queued", "id": "q1",
                               "message": {"text": "queued one", "origin": {"kind": "user"}}})
        await client.wait_for(lambda m, e: len(client.state(chat).get("turns") or []) == 2, timeout=20)
        turns = client.state(chat)["turns"]
        assert turns[0]["id"] == first
        assert turns[1]["message"]["text"] == "queued one"
        assert "queuedMessages" not in client.state(chat)
        await client.close()
    finally:
        await running.stop()


async def test_cancelling_a_turn_stops_the_stream(tmp_path) -> None:
    host = AgentHost(host_config(tmp_path / "data", offline_delay=0.05, default_agent="offline"))
    running = await start_host(host, token=TOKEN)
    try:
        client = await AhpClient.connect(running.url)
        await client.initialize()
        session = await client.create_session()
        chat = default_chat_uri(session)
        turn_id = client.send_message(session, "stream slowly")
        await client.wait_for(lambda m, e: e is not None and e.action is not None and e.action["type"] == "chat/delta")
        assert (await client.outcome(client.cancel_turn(session, turn_id))).accepted
        turn = client.state(chat)["turns"][-1]
        assert turn["state"] == "cancelled"
        length = len(turn["responseParts"][0]["content"])
        seq = running.host.store.seq
        await asyncio.sleep(0.2)  # several word intervals: nothing more may arrive for the turn
        assert running.host.store.seq == seq
        assert len(client.state(chat)["turns"][-1]["responseParts"][0]["content"]) == length
        await client.close()
    finally:
        await running.stop()


async def test_root_notifications_announce_added_changed_and_removed_sessions(connect: Connect) -> None:
    watcher = await connect()
    actor = await connect()
    events = watcher.subscribe_events()
    session = await actor.create_session()
    actor.dispatch(session, {"type": "session/titleChanged", "title": "Renamed"})
    await actor.dispose_session(session)
    seen = []
    while not seen or seen[-1].method != "root/sessionRemoved":
        seen.append(await asyncio.wait_for(events.get(), 5))
    added = next(n for n in seen if n.method == "root/sessionAdded")
    assert added.params["summary"]["resource"] == session
    changed = [n for n in seen if n.method == "root/sessionSummaryChanged"]
    assert any(n.params["changes"].get("title") == "Renamed" for n in changed)
    assert all(n.params["session"] == session for n in changed)
    assert all(set(n.params["changes"]).isdisjoint({"resource", "provider", "createdAt"}) for n in changed)
    assert seen[-1].params["session"] == session
    await watcher.ping()
    assert watcher.state(ROOT)["activeSessions"] == 0
    assert await watcher.list_sessions() == []


async def test_fetch_turns_pages_from_newest_to_oldest(connect: Connect) -> None:
    client = await connect()
    session = await client.create_session()
    for index in range(5):
        await run_turn(client, session, f"message {index}")
    page = await client.fetch_turns(session, limit=2)
    assert [t["userMessage"]["text"] for t in page["turns"]] == ["message 3", "message 4"]
    assert page["hasMore"] is True
    page = await client.fetch_turns(session, before=page["turns"][0]["id"], limit=2)
    assert [t["userMessage"]["text"] for t in page["turns"]] == ["message 1", "message 2"]
    page = await client.fetch_turns(session, before=page["turns"][0]["id"], limit=2)
    assert [t["userMessage"]["text"] for t in page["turns"]] == ["message 0"]
    assert page["hasMore"] is False
    with pytest.raises(AhpError) as error:
        await client.fetch_turns(session, before="not-a-turn")
    assert error.value.code == -32602
    with pytest.raises(AhpError) as error:
        await client.fetch_turns("ahp-session:/missing")
    assert error.value.code == -32001


async def test_fetch_turns_pages_stay_right_when_turns_change_between_pages(connect: Connect) -> None:
    client = await connect()
    session = await client.create_session()
    for index in range(4):
        await run_turn(client, session, f"message {index}")
    page = await client.fetch_turns(session, limit=1)
    oldest_seen = page["turns"][0]["id"]
    await run_turn(client, session, "message 4")  # the turns list changed after the first page
    page = await client.fetch_turns(session, before=oldest_seen, limit=2)
    assert [t["userMessage"]["text"] for t in page["turns"]] == ["message 1", "message 2"]
    turns = client.state(session)["turns"]
    client.dispatch(session, {"type": "session/truncated", "turnId": turns[1]["id"]})  # keeps messages 0 and 1
    await client.wait_for(lambda m, e: len(client.state(session)["turns"]) == 2)
    page = await client.fetch_turns(session, before=turns[1]["id"])
    assert [t["userMessage"]["text"] for t in page["turns"]] == ["message 0"]
    with pytest.raises(AhpError) as error:  # a turn that was truncated away is no longer found
        await client.fetch_turns(session, before=turns[3]["id"])
    assert error.value.code == -32602


async def test_fork_copies_turns_through_the_chosen_one(connect: Connect) -> None:
    client = await connect()
    source = await client.create_session()
    turns = [await run_turn(client, source, f"turn {i}") for i in range(3)]
    fork = await client.create_session(fork={"session": source, "turnId": turns[1]["id"]})
    await client.wait_for(lambda m, e: client.state(fork)["lifecycle"] == "ready")
    assert [t["userMessage"]["text"] for t in client.state(fork)["turns"]] == ["turn 0", "turn 1"]
    await run_turn(client, fork, "after the fork")
    assert len(client.state(source)["turns"]) == 3
    assert [t["userMessage"]["text"] for t in client.state(fork)["turns"]][-1] == "after the fork"
    with pytest.raises(AhpError) as error:
        await client.create_session(fork={"session": source, "turnId": "nope"})
    assert error.value.code == -32602
    with pytest.raises(AhpError) as error:
        await client.create_session(fork={"session": "ahp-session:/gone", "turnId": "x"})
    assert error.value.code == -32001


async def test_session_creation_errors(connect: Connect) -> None:
    client = await connect()
    session = await client.create_session()
    with pytest.raises(AhpError) as error:
        await client.create_session(session)
    assert error.value.code == -32003
    with pytest.raises(AhpError) as error:
        await client.create_session(provider="no-such-agent")
    assert error.value.code == -32002
    assert "offline" in error.value.message
    with pytest.raises(AhpError) as error:
        await client.dispose_session("ahp-session:/never-existed")
    assert error.value.code == -32001


async def test_reconnect_replays_what_was_missed(connect: Connect) -> None:
    alice = await connect()
    bob = await connect()
    session = await alice.create_session()
    await bob.subscribe(session)
    await run_turn(alice, session, "before the drop")
    await bob._conn.close()  # bob's socket drops
    await run_turn(alice, session, "while bob was away")
    result = await bob.resume()
    assert result.kind == "replay"
    assert len(result.replayed) > 0
    await alice.ping()
    assert without_clock(bob.state(session)) == without_clock(alice.state(session))
    await run_turn(alice, session, "after bob came back")
    await bob.wait_for(lambda m, e: len(bob.state(session)["turns"]) == 3)


async def test_reconnect_falls_back_to_snapshots_past_the_replay_buffer(tmp_path) -> None:
    config = host_config(tmp_path / "data", default_agent="offline")
    config.server.replay_buffer = 5
    running = await start_host(AgentHost(config), token=TOKEN)
    try:
        alice = await AhpClient.connect(running.url)
        bob = await AhpClient.connect(running.url)
        await alice.initialize()
        await bob.initialize()
        session = await alice.create_session()
        chat = default_chat_uri(session)
        await bob.subscribe(session)
        await bob.subscribe(chat)
        await bob._conn.close()
        turn = alice.send_message(session, "many words stream more than five actions")
        await alice.wait_for(lambda m, e: [t["id"] for t in (alice.state(chat) or {}).get("turns") or []] == [turn], timeout=10)
        result = await bob.resume()
        assert result.kind == "snapshot"
        for channel in (session, chat):  # what the host holds, as its snapshots gave it
            assert bob.state(channel) == running.host.store.state(channel), channel
        assert bob.state(chat)["turns"][0]["id"] == turn
        await alice.close()
        await bob.close()
    finally:
        await running.stop()


async def test_reconnect_reports_a_disposed_session_as_missing(connect: Connect) -> None:
    alice = await connect()
    bob = await connect()
    session = await alice.create_session()
    await bob.subscribe(session)
    await bob._conn.close()
    await alice.dispose_session(session)
    result = await bob.resume()
    assert result.kind == "replay"
    assert session in result.dropped
    assert bob.state(session) is None


async def test_reconnect_as_first_message_of_a_raw_connection(running_host: RunningHost, connect: Connect) -> None:
    client = await connect(protocol_versions=PROTOCOL_VERSIONS)
    session = await client.create_session()
    chat = default_chat_uri(session)
    seq = client.server_seq
    turn = client.send_message(session, "hi")
    await client.wait_for(lambda m, e: [t["id"] for t in (client.state(chat) or {}).get("turns") or []] == [turn], timeout=10)
    raw = await RawPeer.open(running_host)
    reply = await raw.request("reconnect", {"channel": ROOT, "clientId": "raw", "lastSeenServerSeq": seq,
                                            "subscriptions": [session, chat, "offline:/gone"]})
    assert reply["result"]["type"] == "replay"
    assert reply["result"]["missing"] == ["offline:/gone"]
    seqs = [envelope["serverSeq"] for envelope in reply["result"]["actions"]]
    assert seqs == sorted(seqs) and seqs[0] == seq + 1
    assert {envelope["channel"] for envelope in reply["result"]["actions"]} <= {session, chat}
    assert [e["action"]["turnId"] for e in reply["result"]["actions"] if e["action"]["type"] == "chat/turnStarted"] == [turn]
    await raw.close()


@pytest.mark.parametrize("stated", [None, "1.2.0", "0.7.3", "0.2.0"])
async def test_a_client_the_host_does_not_know_speaks_the_version_its_reconnect_states_else_the_newest(
        running_host: RunningHost, stated: str | None) -> None:
    """A host started again knows no client: a ``reconnect`` that states no version
    (``_meta.protocolVersion``) speaks the default, the newest served (1.0.0); one that states a
    version the host serves (any patch or later 1.x) speaks that."""
    assert DEFAULT_VERSION == SERVED_VERSIONS[0] == "1.0.0"
    creator = await AhpClient.connect(running_host.url.split("?")[0], token=TOKEN)
    await creator.initialize(subscriptions=[ROOT])
    session = await creator.create_session()
    chat = default_chat_uri(session)
    seq = creator.server_seq
    turn = creator.send_message(session, "while you were away")
    await creator.wait_for(lambda m, e: [t.get("state") for t in (creator.state(chat) or {}).get("turns") or []] == ["complete"],
                           timeout=10)
    legacy = "ahp-session:/" + session.split(":/", 1)[1]
    raw = await RawPeer.open(running_host)
    params: dict[str, Any] = {"channel": ROOT, "clientId": f"unknown-{stated}", "lastSeenServerSeq": seq,
                              "subscriptions": [chat, legacy]}
    if stated is not None:
        params["_meta"] = {"protocolVersion": stated}
    reply = await raw.request("reconnect", params)
    result = reply["result"]
    assert result["type"] == "replay", reply
    started = [e["action"].get("turnId") for e in result["actions"] if e["action"]["type"].endswith("/turnStarted")]
    automations = await raw.request("listAutomationTriggerDefinitions", {"channel": ROOT})
    if stated == "0.2.0":  # 0.2.0 names the session ahp-session:/<id>, and has no chat channel
        assert result["missing"] == [chat] and started == [turn]
        assert automations["error"]["code"] == -32601
    else:  # the model's line: the chat is resumed, the 0.2.0 name is not one
        assert result["missing"] == [legacy] and started == [turn]
        assert {e["channel"] for e in result["actions"]} == {chat}
        if stated == "0.7.3":  # 0.7.x: before the automations of 0.8.0
            assert automations["error"]["code"] == -32601
        else:
            assert automations.get("result") == {"items": []}, automations
    await raw.close()
    await creator.close()


async def test_initialize_negotiates_the_protocol_version(running_host: RunningHost, frame_checker: Any) -> None:
    raw = await RawPeer.open(running_host, frame_checker)
    reply = await raw.request("initialize", {"channel": ROOT, "protocolVersions": ["9.0.0", "0.1.0"], "clientId": "c"})
    assert reply["error"]["code"] == -32005
    assert reply["error"]["data"] == {"supportedVersions": ["1.0.0", "0.9.0", "0.7.0", "0.2.0"]}
    await raw.wait_closed()
    raw = await RawPeer.open(running_host, frame_checker)
    reply = await raw.request("initialize", {"channel": ROOT, "protocolVersions": ["0.3.0", "0.2.1"], "clientId": "c"})
    assert reply["result"]["protocolVersion"] == "0.2.1"
    await raw.close()


@pytest.mark.parametrize(
    ("offered", "chosen"),
    [
        (["1.0.0"], "1.0.0"),
        (["0.9.0", "1.0.0"], "1.0.0"),  # the highest within ^1.0.0 or ^0.9.0, whatever the order
        (["1.0.0", "0.9.0", "0.8.0", "0.7.0", "0.6.0"], "1.0.0"),  # what ahp-py offers
        (["1.4.1", "0.9.0"], "1.4.1"),  # a later 1.x is echoed exactly as offered
        (["2.0.0", "0.9.2"], "0.9.2"),
        (["0.9.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"], "0.9.0"),  # VS Code 1.139.1
    ],
)
async def test_initialize_picks_the_highest_offer_within_the_1_0_0_baselines_and_echoes_it(
        running_host: RunningHost, offered: list[str], chosen: str) -> None:
    from tests.host.transport.dialects._schemas import FrameSchema

    raw = await RawPeer.open(running_host)
    reply = await raw.request("initialize", {"channel": ROOT, "protocolVersions": offered, "clientId": "c1",
                                             "initialSubscriptions": [ROOT]})
    assert reply["result"]["protocolVersion"] == chosen
    if chosen.startswith("1."):
        assert FrameSchema.for_version("1.0.0").errors(reply, "initialize", lambda uri: "root") == []
        # The 1.x connection has the 0.9.0 methods (automations) and speaks them.
        runs = await raw.request("listAutomationTriggerDefinitions", {"channel": ROOT})
        assert "error" not in runs, runs
    await raw.close()


async def test_a_1_0_0_offer_with_no_served_line_is_refused_with_every_baseline(running_host: RunningHost) -> None:
    raw = await RawPeer.open(running_host)
    reply = await raw.request("initialize", {"channel": ROOT, "protocolVersions": ["2.0.0", "0.10.0", "0.8.0"], "clientId": "c"})
    assert reply["error"]["code"] == -32005
    assert reply["error"]["data"] == {"supportedVersions": ["1.0.0", "0.9.0", "0.7.0", "0.2.0"]}
    assert "1.0.0 (and every later 1.x)" in reply["error"]["message"]
    assert "'2.0.0'" in reply["error"]["message"]
    await raw.wait_closed()
    raw = await RawPeer.open(running_host)
    reply = await raw.request("initialize", {"channel": ROOT, "protocolVersions": ["1.0.0-rc.2", "0.9.0"], "clientId": "c"})
    assert reply["error"]["code"] == -32602
    assert "protocolVersions[0]" in reply["error"]["message"] and "'1.0.0-rc.2'" in reply["error"]["message"]
    await raw.close()


async def test_a_1_0_0_client_that_reconnects_keeps_its_version(running_host: RunningHost) -> None:
    raw = await RawPeer.open(running_host)
    reply = await raw.request("initialize", {"channel": ROOT, "protocolVersions": ["1.2.0"], "clientId": "again"})
    seq = reply["result"]["serverSeq"]
    await raw.close()
    raw = await RawPeer.open(running_host)
    reply = await raw.request("reconnect", {"channel": ROOT, "clientId": "again", "lastSeenServerSeq": seq, "subscriptions": [ROOT]})
    assert "error" not in reply, reply
    # Automations are 0.8.0 methods: a 0.2.0 connection would get -32601 here.
    runs = await raw.request("listAutomationTriggerDefinitions", {"channel": ROOT})
    assert "error" not in runs, runs
    await raw.close()


async def test_authenticate_on_1_0_0_takes_expires_in_and_names_the_undeclared_resource(running_host: RunningHost) -> None:
    raw = await RawPeer.open(running_host)
    await raw.request("initialize", {"channel": ROOT, "protocolVersions": ["1.0.0"], "clientId": "auth"})
    reply = await raw.request("authenticate", {"channel": ROOT, "resource": "https://api.example.com",
                                               "token": "t0ken", "expiresIn": 3600})
    assert reply["error"]["code"] == -32602
    assert reply["error"]["message"] == "No agent on this host declares the protected resource 'https://api.example.com'."
    await raw.close()


async def test_every_ahp_request_is_served_and_an_unknown_method_gets_a_clear_error(connect: Connect) -> None:
    client = await connect()
    for name, spec in METHODS.items():
        if spec.kind != "request" or spec.direction == "host->client" or name in ("initialize", "reconnect"):
            continue
        try:
            await client.request(name, {"channel": "ahp-root://"})
        except AhpError as error:
            assert error.code != -32601, f"{name} is not served: {error.message}"
    with pytest.raises(AhpError) as error:
        await client.request("teleport", {"channel": "ahp-root://"})
    assert error.value.code == -32601


async def test_resource_read_serves_files_in_the_working_directory_only(connect: Connect, running_host: RunningHost, tmp_path) -> None:
    (tmp_path / "notes.txt").write_text("hello from disk")
    client = await connect()
    result = await client.request("resourceRead", {"channel": ROOT, "uri": (tmp_path / "notes.txt").as_uri()})
    assert result == {"data": "hello from disk", "encoding": "utf-8", "contentType": "text/plain"}
    for uri, code in [
        ("file:///etc/passwd", -32009),
        ((tmp_path / "missing.txt").as_uri(), -32008),
        ("https://example.com/x", -32008),
    ]:
        with pytest.raises(AhpError) as error:
            await client.request("resourceRead", {"channel": ROOT, "uri": uri})
        assert error.value.code == code, uri


class RawPeer:
    """A bare WebSocket speaking raw JSON-RPC text, for tests that need exact frames."""

    def __init__(self, ws: Any, checker: Any = None) -> None:
        self.ws = ws
        self.next_id = 1000
        self.checker = checker
        self._methods: dict[int, str] = {}

    @classmethod
    async def open(cls, running: RunningHost, checker: Any = None, **headers: str) -> RawPeer:
        """``checker`` (the ``frame_checker`` fixture) schema-checks every frame received."""
        from websockets.asyncio.client import connect

        ws = await connect(running.url, max_size=None, additional_headers=headers or None)
        return cls(ws, checker)

    async def send(self, text: str) -> None:
        await self.ws.send(text)

    async def recv(self, timeout: float = 5) -> dict[str, Any]:
        import json

        frame = json.loads(await asyncio.wait_for(self.ws.recv(), timeout))
        if self.checker is not None:
            answered = self._methods.get(frame.get("id")) if "method" not in frame else None
            self.checker.hook(frame, answered)
        return frame

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        import json

        self.next_id += 1
        self._methods[self.next_id] = method
        await self.ws.send(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}))
        while True:
            frame = await self.recv()
            if frame.get("id") == self.next_id:
                return frame

    async def wait_closed(self) -> None:
        await asyncio.wait_for(self.ws.wait_closed(), 5)

    async def close(self) -> None:
        await self.ws.close()


async def test_resource_read_serves_the_hosts_content_references(connect: Connect, running_host: RunningHost) -> None:
    client = await connect()
    text_uri = running_host.host.content.put(b"before the edit\n", "text/plain")
    binary_uri = running_host.host.content.put(b"\x89PNG\x00\x01", "image/png")
    assert await client.request("resourceRead", {"channel": ROOT, "uri": text_uri}) == {
        "data": "before the edit\n", "encoding": "utf-8", "contentType": "text/plain"}
    assert await client.request("resourceRead", {"channel": ROOT, "uri": binary_uri}) == {
        "data": "iVBORwAB", "encoding": "base64", "contentType": "image/png"}
    assert (await client.request("resourceRead", {"channel": ROOT, "uri": text_uri, "encoding": "base64"}))["encoding"] == "base64"
    with pytest.raises(AhpError) as error:
        await client.request("resourceRead", {"channel": ROOT, "uri": "agent-host-content:/sha256/" + "0" * 64})
    assert error.value.code == -32008


async def test_a_session_created_without_an_agent_gets_the_replay_agent_when_no_key_is_set(tmp_path) -> None:
    running = await start_host(AgentHost(host_config(tmp_path / "data")), token=TOKEN)
    try:
        client = await AhpClient.connect(running.url)
        await client.initialize(subscriptions=[ROOT])
        providers = [agent["provider"] for agent in client.state(ROOT)["agents"]]
        assert {"offline", "openai", "anthropic", "replay"} <= set(providers)
        session = await client.create_session()
        assert client.state(session)["provider"] == "replay" and session.startswith("replay:/")
        await client.close()
    finally:
        await running.stop()


def host_side_connections(running: RunningHost) -> list[Any]:
    """The host's side of every connected client (each subscribes to the root channel)."""
    from host.transport.connection import ClientConnection

    entry = running.host.store._channels[ROOT]
    subscribers = {*entry.subscribers, *(s for group in entry.translated.values() for s in group)}
    return [s for s in subscribers if isinstance(s, ClientConnection)]


async def test_a_disposed_session_leaves_nothing_in_the_connections_that_subscribed_to_it(
        connect: Connect, running_host: RunningHost) -> None:
    from tests.host.test_vscode import Peer

    owner = await connect()
    watcher = await connect()
    peer = await Peer.open(running_host)  # a 0.9.0 client, as VS Code is
    try:
        await peer.initialize("vscode-like", ["0.9.0"])
        kept = await owner.create_session()
        session = await owner.create_session()
        await run_turn(owner, session, "hello")
        await watcher.subscribe(session)
        internal = running_host.host.session_uri(session)
        chat = running_host.host.store.state(internal)["defaultChat"]
        for channel in (internal, chat):
            assert (await peer.request("subscribe", {"channel": channel})).get("error") is None
        connections = host_side_connections(running_host)
        assert len(connections) == 3
        assert all(len(c.subscriptions) >= 2 for c in connections)  # the root, the session (and its chat)

        await owner.dispose_session(session)
        await owner.wait_for(lambda m, e: running_host.host.store.kind(internal) is None, timeout=10)
        # What each connection kept for its subscriptions to the disposed session is gone with it
        # (a client that creates and disposes sessions for weeks would otherwise keep them all).
        held = {frozenset(c.subscriptions) for c in connections}
        assert held == {frozenset({ROOT, kept}), frozenset({ROOT})}, held
        assert all(not any(internal in names or chat in names for names in c._internal.values()) for c in connections)
        # Unsubscribing from it anyway is harmless, and the connections still work.
        await watcher.unsubscribe(session)
        await run_turn(owner, kept, "still here")
    finally:
        await peer.close()


@pytest.mark.parametrize("version", ["0.9.0", "0.7.0", "0.2.0"])
async def test_initialize_names_the_characters_that_start_a_completion(running_host: RunningHost, version: str) -> None:
    """``completionTriggerCharacters``: the characters the host completes words after, so a client
    asks for completions as the user types them."""
    from tests.host.test_vscode import Peer

    peer = await Peer.open(running_host)
    result = (await peer.initialize("client", [version]))["result"]
    assert result["protocolVersion"] == version
    assert result["completionTriggerCharacters"] == ["/", "@"]
    await peer.close()


async def test_a_sessions_annotations_channel_can_be_subscribed_and_annotated(running_host: RunningHost) -> None:
    """``<session>/annotations`` answers with an empty ``AnnotationsState``; an annotation a client
    sets reaches another subscriber; the channel goes with its session."""
    import uuid

    from tests.host.test_vscode import Peer

    session = f"offline:/{uuid.uuid4()}"
    channel = f"{session}/annotations"
    author, reader = await Peer.open(running_host), await Peer.open(running_host)
    await author.initialize("author", ["0.9.0"])
    await reader.initialize("reader", ["0.7.0"])
    assert (await author.request("createSession", {"channel": session})).get("error") is None
    first = await author.request("subscribe", {"channel": channel})
    assert first["result"]["snapshot"]["resource"] == channel and first["result"]["snapshot"]["state"] == {"annotations": []}
    assert (await reader.request("subscribe", {"channel": channel}))["result"]["snapshot"]["state"] == {"annotations": []}
    annotation = {"id": "a1", "origin": {"session": session}, "resource": "file:///tmp/x.py", "resolved": False,
                  "entries": [{"id": "e1", "text": "Why this loop?"}]}
    await author.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {
        "channel": channel, "clientSeq": 1, "action": {"type": "annotations/set", "annotation": annotation}}})
    seen = await reader.until(lambda: next((a for a in reader.actions() if a["channel"] == channel), None))
    # (0.7.0 names an annotation's provenance by a bare turnId; this one has none.)
    assert seen["action"]["annotation"] == {key: value for key, value in annotation.items() if key != "origin"}
    assert running_host.host.store.state(channel) == {"annotations": [annotation]}
    assert (await author.request("disposeSession", {"channel": session})).get("error") is None
    assert channel not in running_host.host.store
    missing = await author.request("subscribe", {"channel": f"offline:/{uuid.uuid4()}/annotations"})
    assert missing["error"]["code"] in (-32008, -32001)
    await author.close()
    await reader.close()
