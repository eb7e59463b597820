"""What clients may dispatch, over a real WebSocket: host-only actions and a resume of a turn that
cannot be resumed are refused to the sender alone, with a reason, and change nothing."""

from __future__ import annotations

import uuid
from typing import Any

from ahp.state import default_chat_uri
from host.transport.server import RunningHost
from tests.host.test_vscode import Peer


async def _session(running_host: RunningHost) -> tuple[Peer, Peer, str, str]:
    session = f"offline:/{uuid.uuid4()}"
    chat = default_chat_uri(session)
    sender, watcher = await Peer.open(running_host), await Peer.open(running_host)
    await sender.initialize("sender", ["0.9.0"])
    assert (await sender.request("createSession", {"channel": session})).get("error") is None
    await watcher.initialize("watcher", ["0.9.0"], ("ahp-root://", session, chat))
    for channel in (session, chat):
        await sender.request("subscribe", {"channel": channel})
    return sender, watcher, session, chat


async def _dispatch(peer: Peer, channel: str, seq: int, action: dict[str, Any]) -> dict[str, Any]:
    await peer.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {"channel": channel, "clientSeq": seq, "action": action}})
    return await peer.until(lambda: next((a for a in peer.actions() if (a.get("origin") or {}).get("clientSeq") == seq), None))


async def test_clients_cannot_dispatch_host_only_catalogue_actions(running_host: RunningHost) -> None:
    sender, watcher, session, chat = await _session(running_host)
    before = running_host.host.store.state(session)
    reordered = await _dispatch(sender, session, 1, {"type": "session/chatsReordered", "chats": [chat]})
    movable = await _dispatch(sender, chat, 2, {"type": "chat/movableChanged", "movable": True})
    for echo, action_type in ((reordered, "session/chatsReordered"), (movable, "chat/movableChanged")):
        assert echo["rejectionReason"] == f"{action_type} is produced by the host only; clients cannot dispatch it."
    assert running_host.host.store.state(session) == before
    assert "movable" not in running_host.host.store.state(chat)
    await watcher.request("ping", {"channel": "ahp-root://"})
    assert [a for a in watcher.actions() if a["action"]["type"] in ("session/chatsReordered", "chat/movableChanged")] == []
    await sender.close()
    await watcher.close()


async def test_resuming_a_turn_the_chat_does_not_have_is_refused(running_host: RunningHost) -> None:
    sender, watcher, session, chat = await _session(running_host)
    await sender.until(lambda: running_host.host.store.state(session)["lifecycle"] == "ready" or None)
    echo = await _dispatch(sender, chat, 1, {"type": "chat/turnResume", "turnId": "no-such-turn"})
    assert echo["rejectionReason"] == "There is no turn 'no-such-turn' to resume: only the chat's latest turn (none yet) can be resumed."

    turn_id = str(uuid.uuid4())
    await _dispatch(sender, chat, 2, {"type": "chat/turnStarted", "turnId": turn_id, "startedAt": "2026-12-06T00:00:00.000Z",
                                      "message": {"text": "hi", "origin": {"kind": "user"}}})
    await sender.until(lambda: running_host.host.store.state(chat)["turns"] or None, timeout=30)
    finished = await _dispatch(sender, chat, 3, {"type": "chat/turnResume", "turnId": turn_id})
    assert finished["rejectionReason"] == f"Turn {turn_id} did not end in an error that can be resumed; send a new message instead."
    assert running_host.host.store.state(chat).get("activeTurn") is None
    await watcher.request("ping", {"channel": "ahp-root://"})
    assert [a for a in watcher.actions() if a["action"]["type"] == "chat/turnResume"] == []
    await sender.close()
    await watcher.close()


async def test_a_turn_id_the_chat_used_already_is_refused(running_host: RunningHost) -> None:
    sender, watcher, session, chat = await _session(running_host)
    await sender.until(lambda: running_host.host.store.state(session)["lifecycle"] == "ready" or None)
    ids = [str(uuid.uuid4()) for _ in range(2)]
    for seq, turn_id in enumerate(ids, 1):
        await _dispatch(sender, chat, seq, {"type": "chat/turnStarted", "turnId": turn_id, "startedAt": "2026-12-06T00:00:00.000Z",
                                            "message": {"text": "hi", "origin": {"kind": "user"}}})
        await sender.until(lambda count=seq: len(running_host.host.store.state(chat)["turns"]) == count or None, timeout=30)
    for seq, turn_id in enumerate(ids, 3):  # the first and the latest of the chat's turns
        echo = await _dispatch(sender, chat, seq, {"type": "chat/turnStarted", "turnId": turn_id, "startedAt": "2026-12-06T00:00:00.000Z",
                                                   "message": {"text": "again", "origin": {"kind": "user"}}})
        assert echo["rejectionReason"] == f"Turn id {turn_id} is already used in this chat; pick a new id."
    assert [turn["id"] for turn in running_host.host.store.state(chat)["turns"]] == ids
    assert running_host.host.store.state(chat).get("activeTurn") is None
    await sender.close()
    await watcher.close()
