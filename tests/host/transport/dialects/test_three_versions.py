"""One session, three protocol versions over real WebSockets: a 0.9.0 client creates it and starts
a turn the way 0.9.0 clients do; a 0.7.0 and a 0.2.0 client watch the same turn in their own
dialects; all three end up with what the host holds, each in its own shapes."""

from __future__ import annotations

import copy
import uuid
from typing import Any

from ahp import state as internal
from ahp.dialects import v0_7
from ahp.dialects.catalogue import known_to, notification_known_to
from ahp.state import default_chat_uri
from host.transport.dialects.ahp02 import v02_session_state
from host.transport.server import RunningHost
from tests.conftest import Connect
from tests.host.test_vscode import Peer

ROOT = "ahp-root://"


def mirrored(peer: Peer, channel: str, snapshot: dict[str, Any], reduce: Any) -> dict[str, Any]:
    """What a client that took ``snapshot`` and applied every later envelope of ``channel`` holds."""
    state = snapshot["state"]
    kind = "session" if not channel.startswith("ahp-chat:") else "chat"
    for envelope in peer.actions():
        if envelope["channel"] == channel and envelope["serverSeq"] > snapshot["fromSeq"] and "rejectionReason" not in envelope:
            state = reduce(kind, state, envelope["action"])
    return state


def without_clock(state: dict[str, Any]) -> dict[str, Any]:
    """0.2.0 and 0.7.0 replicas stamp modifiedAt with their own clock (0.9.0 ones derive it)."""
    state = copy.deepcopy(state)
    state.pop("modifiedAt", None)
    if isinstance(state.get("summary"), dict):
        state["summary"].pop("modifiedAt", None)
    for chat in state.get("chats") or ():
        chat.pop("modifiedAt", None)
    return state


async def test_a_0_9_0_client_runs_a_turn_that_0_7_0_and_0_2_0_clients_see_in_their_dialects(
        running_host: RunningHost, connect: Connect) -> None:
    host = running_host.host
    assert "replay" in host.agents
    ident = str(uuid.uuid4())
    session, old_name = f"replay:/{ident}", f"ahp-session:/{ident}"
    chat = default_chat_uri(session)

    new = await Peer.open(running_host)
    await new.initialize("client-09", ["0.9.0"])
    created = await new.request("createSession", {"channel": session})
    assert created.get("error") is None, created
    session_snapshot = (await new.request("subscribe", {"channel": session}))["result"]["snapshot"]
    assert session_snapshot["state"]["defaultChat"] == chat
    chat_snapshot = (await new.request("subscribe", {"channel": chat}))["result"]["snapshot"]

    mid = await Peer.open(running_host)
    await mid.initialize("client-07", ["0.7.0"], [ROOT, session, chat])
    [_, mid_session, mid_chat] = mid.received[0]["result"]["snapshots"]
    old = await connect(subscriptions=(ROOT, old_name))
    assert old.state(old_name)["summary"]["provider"] == "replay"

    await new.until(lambda: host.store.state(session)["lifecycle"] == "ready" or None)
    turn_id = str(uuid.uuid4())
    message = {"text": "Say hello", "origin": {"kind": "user"}}
    await new.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {
        "channel": chat, "clientSeq": 1,
        "action": {"type": "chat/turnStarted", "turnId": turn_id, "startedAt": "2026-11-26T00:00:00.000Z",
                   "message": message}}})

    def ended(peer: Peer) -> Any:
        return any(a["action"]["type"] in ("chat/turnComplete", "chat/error") and a["action"].get("turnId") == turn_id
                   for a in peer.actions()) or None

    await new.until(lambda: ended(new), timeout=30)
    await mid.until(lambda: ended(mid), timeout=30)
    await old.wait_for(lambda m, e: len((old.state(old_name) or {}).get("turns") or []) == 1, timeout=30)
    for peer in (new, mid):
        await peer.request("ping", {"channel": ROOT})

    # 0.9.0: the answer streamed as chat/* actions on the chat channel, the echo with its origin.
    types = [a["action"]["type"] for a in new.actions() if a["channel"] == chat]
    assert types[0] == "chat/turnStarted" and "chat/responsePart" in types and "chat/turnComplete" in types
    echo = next(a for a in new.actions() if a["action"]["type"] == "chat/turnStarted")
    assert echo["origin"] == {"clientId": "client-09", "clientSeq": 1}
    assert all(known_to("0.9.0", a["action"]["type"]) for a in new.actions())
    assert all(notification_known_to("0.9.0", f["method"]) for f in new.received if f.get("method") not in (None, "action"))

    held_session, held_chat = host.store.state(session), host.store.state(chat)
    [turn] = held_chat["turns"]
    assert turn["id"] == turn_id and turn["message"]["text"] == "Say hello" and turn["responseParts"]

    def reduce_09(kind: str, state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
        return internal.reduce(kind, state, action, 0)

    assert mirrored(new, chat, chat_snapshot, reduce_09) == held_chat
    assert without_clock(mirrored(new, session, session_snapshot, reduce_09)) == without_clock(held_session)

    # 0.7.0: the same chat/* actions in 0.7.0 shapes; its reducers reach the 0.7.0 view of the host's.
    def reduce_07(kind: str, state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
        return v0_7.reduce(kind, state, action, 0, channel=chat if kind == "chat" else session)

    assert mid_chat["resource"] == chat and mid_session["resource"] == session
    assert without_clock(mirrored(mid, chat, mid_chat, reduce_07)) == without_clock(v0_7.state_down("chat", held_chat))
    assert without_clock(mirrored(mid, session, mid_session, reduce_07)) == \
        without_clock(v0_7.state_down("session", held_session))

    # 0.2.0: one session, its turn as session/* actions; its mirror is the 0.2.0 view of the host's.
    shown = old.state(old_name)
    assert shown["turns"][0]["id"] == turn_id and shown["turns"][0]["userMessage"]["text"] == "Say hello"
    assert without_clock(shown) == without_clock(v02_session_state(host, old_name))
    for peer in (new, mid):
        await peer.close()


async def test_a_0_2_0_client_reconnecting_after_a_turn_was_resumed_gets_snapshots_that_hold_the_reopened_turn(
        running_host: RunningHost, connect: Connect) -> None:
    host = running_host.host
    ident = str(uuid.uuid4())
    session, old_name = f"offline:/{ident}", f"ahp-session:/{ident}"
    chat = default_chat_uri(session)
    new = await Peer.open(running_host)
    await new.initialize("client-09", ["0.9.0"])
    assert (await new.request("createSession", {"channel": session})).get("error") is None
    old = await connect(subscriptions=(ROOT, old_name))
    await new.until(lambda: host.store.state(session)["lifecycle"] == "ready" or None)
    turn_id = str(uuid.uuid4())
    # A turn that ended in an error a client may resume (as a cluster's new owner ends one).
    host.store.dispatch(chat, {"type": "chat/turnStarted", "turnId": turn_id, "startedAt": "2026-11-26T00:00:00.000Z",
                               "message": {"text": "Resume me", "origin": {"kind": "user"}}})
    host.store.dispatch(chat, {"type": "chat/error", "turnId": turn_id, "duration": 0, "part": {
        "kind": "error", "error": {"errorType": "hostRestarted", "message": "gone"}, "resumable": True}})
    await old.wait_for(lambda m, e: [t.get("state") for t in (old.state(old_name) or {}).get("turns") or []] == ["error"])
    await old._conn.close()  # type: ignore[union-attr]  # the client is away while the turn is resumed
    await new.request("subscribe", {"channel": chat})

    await new.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {
        "channel": chat, "clientSeq": 1, "action": {"type": "chat/turnResume", "turnId": turn_id}}})
    await new.until(lambda: any(a["action"]["type"] == "chat/turnComplete" for a in new.actions()) or None, timeout=30)

    result = await old.resume()
    assert result.kind == "snapshot"  # a replay could not say the turn was reopened in 0.2.0
    fresh = await connect(subscriptions=(ROOT, old_name))
    assert without_clock(old.state(old_name)) == without_clock(fresh.state(old_name))
    assert [t["state"] for t in old.state(old_name)["turns"]] == ["complete"]
    await new.close()
