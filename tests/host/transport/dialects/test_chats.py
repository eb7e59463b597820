"""Chats of a session for a 0.9.0 client over a real WebSocket: createChat, disposeChat, fetchTurns;
a 0.2.0 client of the same session sees its default chat only."""

from __future__ import annotations

import uuid

from ahp.state import default_chat_uri
from host.transport.server import RunningHost
from tests.conftest import Connect
from tests.host.test_vscode import Peer

ROOT = "ahp-root://"


async def test_a_0_9_0_client_adds_and_disposes_a_chat_and_pages_turns(running_host: RunningHost, connect: Connect) -> None:
    ident = str(uuid.uuid4())
    session, side = f"offline:/{ident}", f"ahp-chat:/{uuid.uuid4()}"
    new = await Peer.open(running_host)
    await new.initialize("client-09", ["0.9.0"])
    assert (await new.request("createSession", {"channel": session})).get("error") is None
    await new.request("subscribe", {"channel": session})
    old = await connect(subscriptions=(ROOT, f"ahp-session:/{ident}"))
    old_events = old.subscribe_events()

    reply = await new.request("createChat", {"channel": session, "chat": side})
    assert reply.get("error") is None, reply
    added = await new.until(lambda: next((a for a in new.actions() if a["action"]["type"] == "session/chatAdded"), None))
    assert added["channel"] == session and added["action"]["summary"]["resource"] == side
    snapshot = (await new.request("subscribe", {"channel": side}))["result"]["snapshot"]
    assert snapshot["state"]["turns"] == [] and snapshot["resource"] == side
    catalogue = [chat["resource"] for chat in running_host.host.store.state(session)["chats"]]
    assert catalogue == [default_chat_uri(session), side]

    again = await new.request("createChat", {"channel": session, "chat": side})
    assert again["error"]["code"] == -32602
    default = await new.request("disposeChat", {"channel": default_chat_uri(session)})
    assert default["error"]["code"] == -32602 and "default chat" in default["error"]["message"]

    # fetchTurns: every turn is in the chat's state, so there is nothing older and no cursor.
    assert (await new.request("fetchTurns", {"channel": side}))["result"] == {}
    bad = await new.request("fetchTurns", {"channel": side, "cursor": "made-up"})
    assert bad["error"]["code"] == -32602 and "cursor" in bad["error"]["message"]

    assert (await new.request("disposeChat", {"channel": side})).get("error") is None
    await new.until(lambda: any(a["action"]["type"] == "session/chatRemoved" for a in new.actions()))
    assert side not in running_host.host.store
    assert [chat["resource"] for chat in running_host.host.store.state(session)["chats"]] == [default_chat_uri(session)]

    # The 0.2.0 client saw none of it: its session is the default chat's conversation.
    await old.ping()
    while not old_events.empty():
        note = old_events.get_nowait()
        assert note.method != "action" or note.params["channel"] == ROOT, note
    assert old.state(f"ahp-session:/{ident}")["turns"] == []
    await new.close()


async def test_a_chat_whose_uri_does_not_encode_its_session_runs_turns(running_host: RunningHost) -> None:
    """VS Code and other clients may name a new chat anything (``ahp-chat://side/<hex>``): the
    session it was created in runs its turns, and its catalogue entry follows them."""
    session, side = f"offline:/{uuid.uuid4()}", f"ahp-chat://side/{uuid.uuid4().hex}"
    new = await Peer.open(running_host)
    await new.initialize("client-09", ["0.9.0"])
    assert (await new.request("createSession", {"channel": session})).get("error") is None
    await new.request("subscribe", {"channel": session})
    assert (await new.request("createChat", {"channel": session, "chat": side})).get("error") is None
    await new.request("subscribe", {"channel": side})
    await new.until(lambda: running_host.host.store.state(session)["lifecycle"] == "ready" or None)

    turn_id = str(uuid.uuid4())
    await new.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {"channel": side, "clientSeq": 1, "action": {
        "type": "chat/turnStarted", "turnId": turn_id, "startedAt": "2026-12-06T00:00:00.000Z",
        "message": {"text": "hello from the side", "origin": {"kind": "user"}}}}})
    end = await new.until(lambda: next((a for a in new.actions() if a["channel"] == side and a["action"].get("turnId") == turn_id
                                        and a["action"]["type"] in ("chat/turnComplete", "chat/error")), None), timeout=30)
    assert end["action"]["type"] == "chat/turnComplete", end
    [turn] = running_host.host.store.state(side)["turns"]
    assert any(part.get("kind") == "markdown" for part in turn["responseParts"])
    await new.close()


async def test_the_default_chats_catalogue_entry_carries_the_sessions_title(running_host: RunningHost) -> None:
    """VS Code titles a session's chat view from its default chat's catalogue entry: when the
    session is titled, the entry's title follows, for every subscriber."""
    session = f"offline:/{uuid.uuid4()}"
    chat = default_chat_uri(session)
    titler, watcher = await Peer.open(running_host), await Peer.open(running_host)
    await titler.initialize("titler", ["0.9.0"])
    assert (await titler.request("createSession", {"channel": session})).get("error") is None
    await watcher.initialize("watcher", ["0.9.0"], (ROOT, session))
    [_, snapshot] = watcher.received[0]["result"]["snapshots"]
    assert snapshot["state"]["chats"][0]["title"] == "New Session"
    await titler.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {
        "channel": session, "clientSeq": 1, "action": {"type": "session/titleChanged", "title": "Fix the parser"}}})
    updated = await watcher.until(lambda: next((a["action"] for a in watcher.actions()
                                                if a["action"]["type"] == "session/chatUpdated"), None))
    assert updated == {"type": "session/chatUpdated", "chat": chat, "changes": {"title": "Fix the parser"}}
    entry = running_host.host.store.state(session)["chats"][0]
    assert entry["resource"] == chat and entry["title"] == "Fix the parser"
    await titler.close()
    await watcher.close()


async def test_a_fork_is_titled_after_its_source_as_vs_codes_own_host_titles_one(running_host: RunningHost) -> None:
    """VS Code shows a forked chat's catalogue title in its chat view's header: ``Forked: `` and
    the source chat's title (the default chat's is the session's), the prefix never doubled."""
    session = f"offline:/{uuid.uuid4()}"
    chat = default_chat_uri(session)
    peer = await Peer.open(running_host)
    await peer.initialize("forker", ["0.9.0"])
    assert (await peer.request("createSession", {"channel": session})).get("error") is None
    await peer.request("subscribe", {"channel": session})
    await peer.request("subscribe", {"channel": chat})
    await peer.until(lambda: running_host.host.store.state(session)["lifecycle"] == "ready" or None)
    await peer.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {"channel": chat, "clientSeq": 1, "action": {
        "type": "chat/turnStarted", "turnId": "turn-1", "startedAt": "2026-12-06T00:00:00.000Z",
        "message": {"text": "hello", "origin": {"kind": "user"}}}}})
    await peer.until(lambda: any(a["action"]["type"] == "chat/turnComplete" for a in peer.actions()), timeout=30)
    await peer.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {
        "channel": session, "clientSeq": 2, "action": {"type": "session/titleChanged", "title": "Fix the parser"}}})
    await peer.until(lambda: running_host.host.store.state(session)["title"] == "Fix the parser" or None)

    def added(resource: str) -> dict | None:
        return next((a["action"]["summary"] for a in peer.actions()
                     if a["action"]["type"] == "session/chatAdded" and a["action"]["summary"]["resource"] == resource), None)

    fork, again = f"ahp-chat://{uuid.uuid4()}/x", f"ahp-chat://{uuid.uuid4()}/y"
    reply = await peer.request("createChat", {"channel": session, "chat": fork, "source": {"kind": "fork", "chat": chat, "turnId": "turn-1"}})
    assert reply.get("error") is None, reply
    assert (await peer.until(lambda: added(fork)))["title"] == "Forked: Fix the parser"
    reply = await peer.request("createChat", {"channel": session, "chat": again, "source": {"kind": "fork", "chat": fork, "turnId": "turn-1"}})
    assert reply.get("error") is None, reply
    assert (await peer.until(lambda: added(again)))["title"] == "Forked: Fix the parser"
    await peer.close()
