"""One scripted session seen by a 0.9.0 (or 1.0.0), a 0.7.0 and a 0.2.0 client at once, over real WebSockets:
every frame each receives fits its version's schema (``_schemas``: 0.7.0's own, 1.0.0's for 0.9.0;
the 0.2.0 client's frames are checked by the ``frame_checker`` every test has), and at every
checkpoint (after each step, and while a confirmation waits) every client's mirror (its snapshot
plus its reducers over what it was sent: the model's for 0.9.0/1.0.0, ``v0_7.reduce`` for 0.7.0,
our 0.2.0 client's for 0.2.0) is what the host holds in its version's shapes.

The session covers turns, tool calls and their confirmations, a file edit (changesets, per turn
and per session, subscribed under VS Code's names), a sub-agent (and its turn's changeset), a
cancelled turn, a second chat under a URI that does not encode its session, a fork, marking chats
read and archived (no 0.7.0 action says it: the host closes the 0.7.0 client, whose ``reconnect``
gets fresh snapshots), replacing a working directory (the first one too: the same for the 0.2.0
client), a terminal, root config changes (one to null), an annotations channel, every other
action a client may dispatch, and disposing a chat and the session. The action types the host can
send are read off the code (``_emitted``); each is seen at least once, by the 0.7.0 client too
where 0.7.0 has it, but those other scenarios make it send (``ELSEWHERE``: the host's running
parts in ``test_every_frame_valid_runtime``, a cluster's takeover in
``tests/host/cluster/test_failover.py``). It runs twice: once driven by a 0.9.0 client (VS Code's
version), once by a 1.0.0 client.
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from pathlib import Path
from typing import Any

import pytest

from ahp.dialects import v0_7
from ahp.dialects.catalogue import known_to
from ahp.state import default_chat_uri
from host.transport.connection import RESYNC_CLOSE_CODE
from host.transport.dialects.ahp02 import v02_session_state
from host.transport.dialects.newer import changeset_alias
from providers import ScriptedProvider
from providers.errors import AuthenticationError
from providers.scripted import Script, call_tools, finish, reasoning, reply, text
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import serving
from tests.host.runtime.tools._support import scripted, tools_config

from ._clients import ROOT, TAKEOVER_ONLY, Client, assert_every_frame_fits
from ._emitted import emitted_action_types
from .test_every_frame_valid_runtime import REACHED as REACHED_BY_RUNTIME
from .test_every_frame_valid_runtime import SHELL_INTEGRATION

ELSEWHERE = REACHED_BY_RUNTIME | SHELL_INTEGRATION | TAKEOVER_ONLY
"""The action types the host can send (``_emitted``) that other scenarios make it send: its running
parts (``test_every_frame_valid_runtime``: customizations, MCP servers, shell integration, paging,
a session's start and failure...) and a cluster's takeover (``TAKEOVER_ONLY``, in
``tests/host/cluster/test_failover.py``). Every other type it can send is seen here, and checked
against the schema, at least once."""


def _calls(state: dict[str, Any] | None) -> list[dict[str, Any]]:
    turn = (state or {}).get("activeTurn") or {}
    return [part["toolCall"] for part in turn.get("responseParts") or () if part.get("kind") == "toolCall"]


def _without_clock(state: Any) -> Any:
    """A 0.7.0 or 0.2.0 mirror stamps ``modifiedAt`` with its own clock (0.7.0 rule 10)."""
    state = copy.deepcopy(state)
    if isinstance(state, dict):
        state.pop("modifiedAt", None)
        if isinstance(state.get("summary"), dict):
            state["summary"].pop("modifiedAt", None)
        for chat in state.get("chats") or ():
            chat.pop("modifiedAt", None)
    return state


@pytest.mark.parametrize("newest", ["0.9.0", "1.0.0"])
async def test_every_frame_fits_its_version_and_every_mirror_converges(
    tmp_path: Path, frame_checker: FrameChecker, newest: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The terminal runs a plain sh: the user's own rc files (a pyenv rehash waiting on its lock)
    # must not decide whether the test's command runs within its deadline.
    monkeypatch.setenv("SHELL", "/bin/sh")
    monkeypatch.setenv("ENV", "")
    for folder in ("first", "second", "third"):
        (tmp_path / folder).mkdir()
    provider = ScriptedProvider([
        call_tools(("shell", {"command": "echo hi"})),
        call_tools(("write_file", {"path": "notes.txt", "content": "one\n"})),
        Script((*reasoning("The file is written.", index=0), *text("Wrote notes.txt.", index=1),
                *finish("stop", input_tokens=40, output_tokens=5))),
        call_tools(("ask_user", {"questions": [{"id": "colour", "kind": "text", "message": "Which colour?"}]})),
        reply("Blue it is."),
        Script((AuthenticationError("The provider refused the key.", provider="scripted"),)),
        call_tools(("task", {"description": "Look around", "prompt": "Say hello."})),
        reply("Hello from the sub-agent."),
        reply("The sub-agent said hello."),
        call_tools(("shell", {"command": "echo never"})),
        reply("Side answer."),
    ])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)]) as (running, old):
        host = running.host
        ident = str(uuid.uuid4())
        session, old_name = f"scripted:/{ident}", f"ahp-session:/{ident}"
        chat, side = default_chat_uri(session), f"ahp-chat://side/{uuid.uuid4().hex}"
        new, mid = await Client.open(running), await Client.open(running)
        mids = [mid]  # a 0.7.0 connection the host closed for a fresh snapshot, and the one that reconnected
        watched_new: dict[str, str] = {ROOT: "root"}
        watched_mid: dict[str, str] = {ROOT: "root"}
        checkpoints: list[str] = []

        async def checkpoint(label: str) -> None:
            """Every client's mirror of every channel it watches is the host's state in its version."""
            for client in (new, mid):
                await client.request("ping", {"channel": ROOT})  # everything sent before the answer has arrived
            await old.ping()
            def held(channel: str) -> Any:
                return host.store.state(changeset_alias(host, channel) or channel)

            for channel, kind in watched_new.items():
                assert new.mirror(channel, kind) == held(channel), (label, newest, channel)
            for channel, kind in watched_mid.items():
                shown, mirrored = v0_7.state_down(kind, held(channel)), mid.mirror(channel, kind)
                assert _without_clock(mirrored) == _without_clock(shown), (label, "0.7.0", channel)
            assert _without_clock(old.state(old_name)) == _without_clock(v02_session_state(host, old_name)), (label, "0.2.0")
            checkpoints.append(label)

        async def reconnect_mid() -> Client:
            """The 0.7.0 client after the host closed its connection for a fresh snapshot."""
            code, reason = await mid.closed_with()
            assert code == RESYNC_CLOSE_CODE and "reconnect" in (reason or ""), (code, reason)
            again = await Client.open(running)
            again.version = "0.7.0"
            answer = await again.request("reconnect", {"channel": ROOT, "clientId": "client-07",
                                                      "lastSeenServerSeq": mid.last_seen(), "subscriptions": list(watched_mid)})
            assert answer["result"]["type"] == "snapshot", answer
            mids.append(again)
            await mid.close()
            return again

        try:
            await new.join("client-09", newest)
            created = await new.request("createSession", {"channel": session, "workingDirectories": [tmp_path.as_uri()]})
            assert created.get("error") is None, created
            for channel in (session, chat):
                await new.sub(channel)
            watched_new.update({session: "session", chat: "chat"})
            await mid.join("client-07", "0.7.0", (ROOT, session, chat))
            watched_mid.update({session: "session", chat: "chat"})
            await old.subscribe(old_name)
            await new.until(lambda: host.store.state(session)["lifecycle"] == "ready" or None)
            await new.dispatch(session, {"type": "session/activeClientSet",
                                         "activeClient": {"clientId": "client-09", "displayName": "A 0.9.0 client", "tools": []}})
            for client in (new, mid):  # (made empty on its first subscription, so its files arrive as actions)
                await client.sub(f"{session}/changeset/uncommitted")
            watched_new[f"{session}/changeset/uncommitted"] = watched_mid[f"{session}/changeset/uncommitted"] = "changeset"
            await checkpoint("created")

            async def turn(where: str, text: str, *, cancel: bool = False, confirm_in: tuple[str, ...] = (),
                           steer: bool = False) -> str:
                """A turn of ``where``: every call that asks is allowed (or the turn cancelled at the first)."""
                turn_id = str(uuid.uuid4())
                await new.dispatch(where, {"type": "chat/turnStarted", "turnId": turn_id, "startedAt": "2026-12-06T10:00:00.000Z",
                                           "message": {"text": text, "origin": {"kind": "user"}}})
                confirmed: set[str] = set()
                while True:
                    def waiting() -> Any:
                        state = host.store.state(where) or {}
                        if not any(t.get("id") == turn_id for t in state.get("turns") or ()) and state.get("activeTurn") is None:
                            return None  # not started yet
                        active = (host.store.state(where) or {}).get("activeTurn") or {}
                        for part in active.get("responseParts") or ():
                            request = part.get("request") if part.get("kind") == "inputRequest" else None
                            if request is not None and part.get("response") is None and request["id"] not in confirmed:
                                return "ask", active["id"], request
                        for chat_ in (where, *confirm_in):
                            active = (host.store.state(chat_) or {}).get("activeTurn")
                            for call in _calls(host.store.state(chat_)):
                                if call["status"] == "pending-confirmation" and call["toolCallId"] not in confirmed:
                                    return chat_, active["id"], call
                        return "ended" if (host.store.state(where) or {}).get("activeTurn") is None else None
                    found = await new.until(waiting, timeout=30)
                    if found == "ended":
                        return turn_id
                    chat_, active_id, call = found
                    if chat_ == "ask":  # a question (ask_user): an answer typed, then submitted
                        confirmed.add(call["id"])
                        await checkpoint(f"a question asked in {text!r}")
                        for question in call.get("questions") or ():
                            await new.dispatch(where, {"type": "chat/inputAnswerChanged", "requestId": call["id"],
                                                       "questionId": question["id"],
                                                       "answer": {"state": "draft", "value": {"kind": "text", "value": "bl"}}})
                        answers = {q["id"]: {"state": "submitted", "value": {"kind": "text", "value": "blue"}}
                                   for q in call.get("questions") or ()}
                        await new.dispatch(where, {"type": "chat/inputCompleted", "requestId": call["id"],
                                                   "response": "accept", "answers": answers})
                        continue
                    confirmed.add(call["toolCallId"])
                    if chat_ == where:
                        await checkpoint(f"confirmation asked in {text!r}")
                    if steer and chat_ == where:  # a steering message, taken in at the model's next call
                        steer = False
                        await new.dispatch(where, {"type": "chat/pendingMessageSet", "kind": "steering", "id": "steer-1",
                                                   "message": {"text": "Keep it short.", "origin": {"kind": "user"}}})
                    if cancel:
                        await new.dispatch(chat_, {"type": "chat/turnCancelled", "turnId": active_id, "duration": 0})
                    else:
                        # As VS Code's own host offers them: "Allow once" primary (no group), then groups.
                        primary, *rest = call["options"]
                        assert primary["id"] == "allow-once" and "group" not in primary
                        assert all("group" in option for option in rest)
                        await new.dispatch(chat_, {"type": "chat/toolCallConfirmed", "turnId": active_id, "toolCallId": call["toolCallId"],
                                                   "approved": True, "confirmed": "user-action", "selectedOptionId": "allow-once"})

            # A turn with a confirmed shell call and a file edit; its changesets under VS Code's names.
            first = await turn(chat, "run echo, then write notes", steer=True)
            assert (tmp_path / "notes.txt").read_text() == "one\n"
            turn_changeset = f"{session}/changeset/turn/{first}"
            for client in (new, mid):
                await client.sub(turn_changeset)
            watched_new[turn_changeset] = watched_mid[turn_changeset] = "changeset"
            await checkpoint("a turn with a confirmed call and a file edit")

            # A question to the user, answered; a turn the provider fails; one file kept.
            await turn(chat, "ask me a colour")
            failed = await turn(chat, "this one fails")
            assert host.store.state(chat)["turns"][-1]["state"] == "error" and failed
            kept = await new.request("invokeChangesetOperation", {"channel": f"{session}/changeset/uncommitted",
                                                                  "operationId": "accept"})
            assert kept.get("error") is None, kept
            await checkpoint("a question answered, a failed turn, a file kept")

            # A sub-agent: its chat joins the catalogue; its turn has a changeset too (VS Code asks).
            worker = None

            async def follow_worker() -> None:
                nonlocal worker
                added = await new.until(lambda: next((a["action"]["summary"]["resource"] for a in new.actions()
                                                      if a["action"]["type"] == "session/chatAdded"), None), timeout=30)
                worker = added
            second = await turn(chat, "ask a sub-agent", confirm_in=())
            await follow_worker()
            assert worker is not None
            for client in (new, mid):
                await client.sub(worker)
            watched_new[worker] = watched_mid[worker] = "chat"
            [worker_turn] = host.store.state(worker)["turns"]
            await new.sub(f"{session}/changeset/turn/{worker_turn['id']}")
            await checkpoint("a sub-agent")

            # A turn cancelled while its call waits for the user.
            third = await turn(chat, "run something and stop", cancel=True)
            assert host.store.state(chat)["turns"][-1]["state"] == "cancelled"
            await checkpoint("a cancelled turn")

            # A second chat under a URI of the client's choosing, a fork, read and archived flags.
            assert (await new.request("createChat", {"channel": session, "chat": side})).get("error") is None
            for client in (new, mid):
                await client.sub(side)
            watched_new[side] = watched_mid[side] = "chat"
            await turn(side, "a side question")
            fork = f"ahp-chat://fork/{uuid.uuid4().hex}"
            forked = await new.request("createChat", {"channel": session, "chat": fork,
                                                      "source": {"kind": "fork", "chat": chat, "turnId": first}})
            assert forked.get("error") is None, forked
            for client in (new, mid):
                await client.sub(fork)
            watched_new[fork] = watched_mid[fork] = "chat"
            await checkpoint("a second chat and a fork")
            # No 0.7.0 action sets a chat's own flags: the 0.7.0 client is closed and reconnects to snapshots.
            await new.dispatch(chat, {"type": "chat/isReadChanged", "isRead": True})
            mid = await reconnect_mid()
            await new.dispatch(side, {"type": "chat/isArchivedChanged", "isArchived": True})
            mid = await reconnect_mid()
            await checkpoint("chats marked read and archived")

            # Working directories: one added, then replaced in place.
            await new.dispatch(session, {"type": "session/workingDirectorySet", "directory": (tmp_path / "second").as_uri()})
            await new.dispatch(session, {"type": "session/workingDirectoryReplaced",
                                         "directory": (tmp_path / "second").as_uri(), "replacement": (tmp_path / "third").as_uri()})
            await checkpoint("a working directory added and replaced")

            # A terminal both newer clients watch; root config set and cleared; annotations.
            terminal = f"ahp-terminal:/{uuid.uuid4()}"
            made = await new.request("createTerminal", {"channel": terminal, "claim": {"kind": "client", "clientId": "client-09"}})
            assert made.get("error") is None, made
            for client in (new, mid):
                await client.sub(terminal)
            watched_new[terminal] = watched_mid[terminal] = "terminal"
            await new.dispatch(terminal, {"type": "terminal/input", "data": "echo from-the-terminal; exit 3\n"})
            await new.until(lambda: any(a["action"]["type"] == "terminal/exited" for a in new.actions()) or None, timeout=30)
            await mid.until(lambda: any(a["channel"] == terminal and a["action"]["type"] == "terminal/exited"
                                        for a in mid.actions()) or None, timeout=30)
            for value in ("shown", None):
                await new.dispatch(ROOT, {"type": "root/configChanged", "config": {"chat.example": value}})
            annotations = f"{session}/annotations"
            for client in (new, mid):
                await client.sub(annotations)
            watched_new[annotations] = watched_mid[annotations] = "annotations"
            await new.dispatch(annotations, {"type": "annotations/set", "annotation": {
                "id": "a1", "origin": {"session": session, "chat": chat, "turnId": first}, "resource": (tmp_path / "notes.txt").as_uri(),
                "resolved": False, "entries": [{"id": "e1", "text": "Why one?"}]}})
            await checkpoint("a terminal, root config, annotations")

            # What else a client may dispatch, each accepted and echoed to every subscriber.
            dispatched = [
                (session, {"type": "session/titleChanged", "title": "Renamed"}),
                (session, {"type": "session/configChanged", "config": {"autoApprove": "default"}}),
                (side, {"type": "chat/queuedMessagesReordered", "order": []}),
                (side, {"type": "chat/draftChanged", "draft": {"text": "half a thought", "origin": {"kind": "user"}}}),
                (session, {"type": "session/isReadChanged", "isRead": True}),
                (session, {"type": "session/isArchivedChanged", "isArchived": False}),
                (side, {"type": "chat/workingDirectorySet", "directory": (tmp_path / "third").as_uri()}),
                (side, {"type": "chat/workingDirectoryRemoved", "directory": (tmp_path / "third").as_uri()}),
                (session, {"type": "session/workingDirectoryRemoved", "directory": (tmp_path / "third").as_uri()}),
                (fork, {"type": "chat/truncated", "turnId": first}),
                (turn_changeset, {"type": "changeset/filesReviewChanged", "files": [(tmp_path / "notes.txt").as_uri()],
                                  "reviewed": True}),
                (annotations, {"type": "annotations/entrySet", "annotationId": "a1", "entry": {"id": "e2", "text": "Because."}}),
                (annotations, {"type": "annotations/entryRemoved", "annotationId": "a1", "entryId": "e2"}),
                (annotations, {"type": "annotations/updated", "annotationId": "a1", "resolved": True}),
                (annotations, {"type": "annotations/removed", "annotationId": "a1"}),
                (terminal, {"type": "terminal/resized", "cols": 100, "rows": 30}),
                (terminal, {"type": "terminal/titleChanged", "title": "A shell"}),
                (terminal, {"type": "terminal/cleared"}),
                (terminal, {"type": "terminal/claimed", "claim": {"kind": "client", "clientId": "client-09"}}),
                (session, {"type": "session/activeClientRemoved", "clientId": "client-09"}),
            ]
            for channel, action in dispatched:
                await new.dispatch(channel, action)
                echoed = await new.until(lambda c=channel, n=new._next_id: next(
                    (a for a in new.actions() if a["channel"] == c and a.get("origin", {}).get("clientSeq") == n), None))
                assert "rejectionReason" not in echoed, (action, echoed.get("rejectionReason"))
            await checkpoint("what else a client dispatches")

            # The first working directory replaced: no 0.2.0 action says it, so the 0.2.0 client is
            # closed and its reconnect answered with a fresh snapshot.
            await new.dispatch(session, {"type": "session/workingDirectoryReplaced",
                                         "directory": tmp_path.as_uri(), "replacement": (tmp_path / "first").as_uri()})
            await new.until(lambda: host.store.state(session)["workingDirectories"][0] == (tmp_path / "first").as_uri() or None)
            # (``old``'s close ends with its own socket's EOF, which may come after ``new`` received
            # its last frame: polled, not checked again only when ``new`` receives one.)
            async with asyncio.timeout(10):
                while old.is_connected:
                    await asyncio.sleep(0.005)
            resumed = await old.resume()
            assert resumed.kind == "snapshot", resumed
            assert old.state(old_name)["summary"]["workingDirectory"] == (tmp_path / "first").as_uri()

            # -- every mirror converges, at every checkpoint and at the end ----------------------------
            await checkpoint("the end")
            assert new.mirror(session, "session")["status"] == host.store.state(session)["status"]
            assert len(checkpoints) >= 13, checkpoints

            # The fork disposed, then the session: what goes with them.
            def kind_of(uri: str) -> str | None:
                return host.store.kind(uri) or host.store.kind(changeset_alias(host, uri) or "")

            kinds = {uri: kind_of(uri) for client in (new, *mids) for uri in client.snapshots()}
            assert (await new.request("disposeChat", {"channel": fork})).get("error") is None
            await new.until(lambda: any(a["action"]["type"] == "session/chatRemoved" for a in new.actions()) or None)
            assert (await new.request("disposeSession", {"channel": session})).get("error") is None
            await new.until(lambda: any(a["action"]["type"] == "changeset/cleared" for a in new.actions()) or None)
            for client in (new, mid):
                await client.request("ping", {"channel": ROOT})  # everything sent before the answer has arrived

            # -- every frame fits its version's schema -------------------------------------------
            assert_every_frame_fits((new, *mids), kinds.get)
            seen = new.types()
            emitted = emitted_action_types()
            assert ELSEWHERE <= emitted, sorted(ELSEWHERE - emitted)  # (a type the host no longer sends leaves the lists)
            assert emitted - ELSEWHERE <= seen, sorted(emitted - ELSEWHERE - seen)
            seen_0_7 = {kind for client in mids for kind in client.types()}
            expected_0_7 = {t for t in emitted - ELSEWHERE if known_to("0.7.0", t)}
            assert expected_0_7 <= seen_0_7, sorted(expected_0_7 - seen_0_7)
            assert second and third
        finally:
            await new.close()
            for each in mids:
                await each.close()
