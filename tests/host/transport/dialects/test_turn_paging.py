"""Turn paging by cursor over real WebSockets: a 0.9.0 client of a long session gets its recent
turns and a ``turnsNextCursor``, pages back to the first turn with ``fetchTurns`` (the host sends
``chat/turnsLoaded`` to every subscriber, so a second client converges), bad and stale cursors get
clear errors, a 0.2.0 client still holds every turn, and all of it survives restarts.

The host keeps 3 turns per chat state (``[sessions] recent_turns``); the turns are made by the
offline agent through a 0.2.0 client, as our terminal client would."""

from __future__ import annotations

import copy
import uuid
from pathlib import Path
from typing import Any

from ahp.state import default_chat_uri
from ahp.state import reduce as reduce_internal
from client import AhpClient
from host.transport.server import RunningHost
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import config_for, run_turn, serving
from tests.host.test_vscode import Peer, assert_only_what_0_9_0_knows, assert_valid

ROOT = "ahp-root://"
RECENT = 3
TURNS = 8


def _texts(turns: list[dict[str, Any]]) -> list[str]:
    return [turn["message"]["text"] for turn in turns]


class Mirror:
    """A 0.9.0 client's view of one chat: its subscribe snapshot, then every action it was sent,
    reduced with the model's reducers (as VS Code does)."""

    def __init__(self, peer: Peer, chat: str, snapshot: dict[str, Any]) -> None:
        self.peer, self.chat = peer, chat
        self.state = copy.deepcopy(snapshot["state"])
        self.seen = len(peer.received)
        self.seq = snapshot["fromSeq"]

    def catch_up(self) -> list[dict[str, Any]]:
        """Reduce the actions received since the last call; those actions."""
        new = [f["params"] for f in self.peer.received[self.seen:] if f.get("method") == "action"]
        self.seen = len(self.peer.received)
        mine = [envelope for envelope in new if envelope["channel"] == self.chat and envelope["serverSeq"] > self.seq]
        for envelope in mine:
            self.state = reduce_internal("chat", self.state, envelope["action"], 0)
            self.seq = envelope["serverSeq"]
        return [envelope["action"] for envelope in mine]


async def _long_session(running: RunningHost, client: AhpClient) -> tuple[str, str, str]:
    """A session with ``TURNS`` finished turns made through the 0.2.0 client, which then leaves
    it; its internal, chat and 0.2.0 names."""
    ident = str(uuid.uuid4())
    session, old_name = f"offline:/{ident}", f"ahp-session:/{ident}"
    maker = await Peer.open(running)
    await maker.initialize("maker", ["0.9.0"])
    assert (await maker.request("createSession", {"channel": session})).get("error") is None
    await maker.close()
    await client.subscribe(old_name)
    for index in range(TURNS):
        await run_turn(client, old_name, f"message {index}")
    await client.unsubscribe(old_name)
    return session, default_chat_uri(session), old_name


async def _subscribe(peer: Peer, channel: str) -> dict[str, Any]:
    reply = await peer.request("subscribe", {"channel": channel})
    assert reply.get("error") is None, reply
    return reply["result"]["snapshot"]


async def test_a_0_9_0_client_gets_recent_turns_pages_back_to_the_first_and_a_second_client_converges(
    tmp_path: Path, frame_checker: FrameChecker
) -> None:
    config = config_for(tmp_path, sessions={"recent_turns": RECENT, "default_agent": "offline"})
    async with serving(config, frame_checker) as (running, client):
        session, chat, old_name = await _long_session(running, client)
    # A restart writes the last snapshot; the recovered chat keeps its 3 newest turns in state.
    async with serving(config, frame_checker) as (running, client):
        first, second = await Peer.open(running), await Peer.open(running)
        await first.initialize("first", ["0.9.0"])
        await second.initialize("second", ["0.9.0"])
        await _subscribe(first, session)
        snapshot = await _subscribe(first, chat)
        assert _texts(snapshot["state"]["turns"]) == [f"message {i}" for i in range(TURNS - RECENT, TURNS)]
        cursor = snapshot["state"]["turnsNextCursor"]
        assert_valid(snapshot["state"], "ChatState")
        one = Mirror(first, chat, snapshot)
        two = Mirror(second, chat, await _subscribe(second, chat))
        assert two.state == one.state

        # The 0.2.0 client still holds the whole session, and pages it with fetchTurns as before.
        await client.subscribe(old_name)
        whole = client.state(old_name)["turns"]
        assert [turn["userMessage"]["text"] for turn in whole] == [f"message {i}" for i in range(TURNS)]
        page = await client.fetch_turns(old_name, before=whole[4]["id"], limit=2)
        assert [turn["userMessage"]["text"] for turn in page["turns"]] == ["message 2", "message 3"] and page["hasMore"]

        # A turn id of an older turn is still taken, though the chat's state no longer holds it.
        await first.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {"channel": chat, "clientSeq": 7, "action": {
            "type": "chat/turnStarted", "turnId": whole[0]["id"], "startedAt": "2026-01-01T00:00:00.000Z",
            "message": {"text": "again", "origin": {"kind": "user"}}}}})
        refused = await first.until(lambda: next((f["params"] for f in first.received[one.seen:] if f.get("method") == "action"
                                                  and f["params"].get("rejectionReason")), None))
        assert "already used" in refused["rejectionReason"]
        one.seen = len(first.received)

        # Paging back: each fetchTurns loads the page before the cursor into the chat's state,
        # which both clients receive before the answer.
        pages: list[list[str]] = []
        used: list[str] = []
        while cursor is not None:
            used.append(cursor)
            reply = await first.request("fetchTurns", {"channel": chat, "cursor": cursor})
            assert reply.get("result") == {}, reply
            loaded = one.catch_up()
            assert [action["type"] for action in loaded] == ["chat/turnsLoaded"]
            assert_valid(loaded[0], "ChatTurnsLoadedAction")
            pages.append(_texts(loaded[0]["turns"]))
            await second.until(lambda: any(f.get("method") == "action" and f["params"]["action"]["type"] == "chat/turnsLoaded"
                                           for f in second.received[two.seen:]))
            two.catch_up()
            assert two.state == one.state
            cursor = one.state.get("turnsNextCursor")
        assert pages == [["message 2", "message 3", "message 4"], ["message 0", "message 1"]]
        assert _texts(one.state["turns"]) == [f"message {i}" for i in range(TURNS)]
        assert "turnsNextCursor" not in one.state
        assert one.state == running.host.store.state(chat)
        assert_only_what_0_9_0_knows(first.received)

        # The 0.2.0 client was sent nothing for it: it had every turn already.
        await client.ping()
        assert len(client.state(old_name)["turns"]) == TURNS

        # A cursor whose page is loaded already is answered at once, with nothing sent.
        before = len(first.received)
        assert (await first.request("fetchTurns", {"channel": chat, "cursor": used[0]})).get("result") == {}
        assert (await first.request("fetchTurns", {"channel": chat})).get("result") == {}
        assert [f for f in first.received[before:] if f.get("method") == "action"] == []

        # A cursor this host never gave out, and one naming a turn that was truncated away.
        bad = await first.request("fetchTurns", {"channel": chat, "cursor": "page-2"})
        assert bad["error"]["code"] == -32602 and "not one this host gave out" in bad["error"]["message"]
        await first.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {
            "channel": chat, "clientSeq": 1, "action": {"type": "chat/truncated", "turnId": one.state["turns"][1]["id"]}}})
        await first.until(lambda: any(f.get("method") == "action" and f["params"]["action"]["type"] == "chat/truncated"
                                      for f in first.received[one.seen:]))
        one.catch_up()
        assert _texts(one.state["turns"]) == ["message 0", "message 1"]
        stale = await first.request("fetchTurns", {"channel": chat, "cursor": used[0]})
        assert stale["error"]["code"] == -32602 and "no longer has" in stale["error"]["message"]
        # The connection stays usable.
        assert (await first.request("fetchTurns", {"channel": chat})).get("result") == {}
        await first.close()
        await second.close()


async def test_paging_keeps_working_across_restarts_and_a_truncation_at_an_older_turn_loads_it_first(
    tmp_path: Path, frame_checker: FrameChecker
) -> None:
    config = config_for(tmp_path, sessions={"recent_turns": RECENT, "default_agent": "offline"})
    async with serving(config, frame_checker) as (running, client):
        session, chat, old_name = await _long_session(running, client)
    async with serving(config, frame_checker) as (running, client):
        peer = await Peer.open(running)
        await peer.initialize("pager", ["0.9.0"])
        snapshot = await _subscribe(peer, chat)
        mirror = Mirror(peer, chat, snapshot)
        assert (await peer.request("fetchTurns", {"channel": chat, "cursor": snapshot["state"]["turnsNextCursor"]})).get("result") == {}
        mirror.catch_up()
        assert _texts(mirror.state["turns"]) == [f"message {i}" for i in range(TURNS - 2 * RECENT, TURNS)]
        await peer.close()
        # Two more turns, while the 0.9.0 client is gone.
        await client.subscribe(old_name)
        for index in range(TURNS, TURNS + 2):
            await run_turn(client, old_name, f"message {index}")
        await client.unsubscribe(old_name)
    async with serving(config, frame_checker) as (running, client):
        peer = await Peer.open(running)
        await peer.initialize("pager", ["0.9.0"])
        snapshot = await _subscribe(peer, chat)
        assert _texts(snapshot["state"]["turns"]) == [f"message {i}" for i in range(TURNS + 2 - RECENT, TURNS + 2)]
        mirror = Mirror(peer, chat, snapshot)

        # The 0.2.0 client truncates at turn 1, far older than the chat's state holds: the host
        # loads the turns from there on first, so both clients see the same conversation.
        await client.subscribe(old_name)
        turn_1 = client.state(old_name)["turns"][1]["id"]
        outcome = await client.outcome(client.dispatch(old_name, {"type": "session/truncated", "turnId": turn_1}))
        assert outcome.accepted, outcome.reason
        assert [turn["userMessage"]["text"] for turn in client.state(old_name)["turns"]] == ["message 0", "message 1"]
        await peer.until(lambda: any(f.get("method") == "action" and f["params"]["action"]["type"] == "chat/truncated"
                                     for f in peer.received[mirror.seen:]))
        actions = mirror.catch_up()
        assert [action["type"] for action in actions] == ["chat/turnsLoaded", "chat/truncated"]
        assert _texts(mirror.state["turns"]) == ["message 1"]  # message 0 stays older, behind the cursor
        assert (await peer.request("fetchTurns", {"channel": chat, "cursor": mirror.state["turnsNextCursor"]})).get("result") == {}
        mirror.catch_up()
        assert _texts(mirror.state["turns"]) == ["message 0", "message 1"]
        assert mirror.state == running.host.store.state(chat)
        await peer.close()
    # And once more after a restart: the truncation held.
    async with serving(config, frame_checker) as (running, client):
        await client.subscribe(old_name)
        assert [turn["userMessage"]["text"] for turn in client.state(old_name)["turns"]] == ["message 0", "message 1"]


async def test_a_0_7_0_client_pages_in_its_own_shapes(tmp_path: Path, frame_checker: FrameChecker) -> None:
    config = config_for(tmp_path, sessions={"recent_turns": RECENT, "default_agent": "offline"})
    async with serving(config, frame_checker) as (running, client):
        session, chat, _ = await _long_session(running, client)
    async with serving(config, frame_checker) as (running, client):
        peer = await Peer.open(running)
        assert (await peer.initialize("seven", ["0.7.0"]))["result"]["protocolVersion"] == "0.7.0"
        snapshot = await _subscribe(peer, chat)
        assert_valid(snapshot["state"], "ChatState")  # the exact 0.7.0 schema
        assert _texts(snapshot["state"]["turns"]) == [f"message {i}" for i in range(TURNS - RECENT, TURNS)]
        reply = await peer.request("fetchTurns", {"channel": chat, "cursor": snapshot["state"]["turnsNextCursor"]})
        assert reply.get("result") == {}, reply
        [loaded] = [f["params"] for f in peer.received if f.get("method") == "action"]
        assert loaded["channel"] == chat and loaded["serverSeq"] > snapshot["fromSeq"]
        assert_valid(loaded["action"], "ChatTurnsLoadedAction")
        assert _texts(loaded["action"]["turns"]) == ["message 2", "message 3", "message 4"]
        # Without a cursor: the chat's next older page, if any.
        assert (await peer.request("fetchTurns", {"channel": chat})).get("result") == {}
        last = [f["params"]["action"] for f in peer.received if f.get("method") == "action"][-1]
        assert _texts(last["turns"]) == ["message 0", "message 1"] and "turnsNextCursor" not in last
        await peer.close()
