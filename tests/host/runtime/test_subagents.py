"""Sub-agents: the ``task`` tool runs a job in a chat it opens in its session, which clients watch live.

A real host on port 0 with a local fake OpenAI-compatible provider (it records what the model was
sent) or a scripted one, a custom agent in a Claude Code-shaped plugin, our 0.2.0 client (which
sees a sub-agent's chat as a projected session ``ahp-session:/<id>/subagent/<call>``) and bare
0.9.0 clients (which see it in the session's catalogue of chats)."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from ahp import state as internal
from ahp.state import default_chat_uri, parse_subagent_chat_uri, subagent_chat_uri
from client import AhpClient
from host.runtime.subagents import WAITING_FOR_YOU
from host.service import AgentHost
from host.state.journal import Journal
from host.state.sessions import new_chat_state, new_session_state
from host.state.transcripts import TranscriptStore
from host.transport.dialects.ahp02 import v02_session_state
from host.transport.server import RunningHost
from providers import AssistantMessage, ScriptedProvider, TextPart, UserMessage
from providers.scripted import Script, call_tools, finish, reply, text
from tests.conftest import TOKEN, FrameChecker, host_config
from tests.host.runtime.agents.harness import Recorder, config_for, idle, ready_session, run_turn, serving
from tests.host.runtime.agents.test_faults import fake_agent_toml
from tests.host.runtime.tools._support import scripted, tools_config, wait_pending
from tests.host.test_vscode import ROOT, Peer
from tests.providers.fake_server import FakeProviderServer, Reply, chat_sse


def _reviewer_plugin(root: Path) -> None:
    plugin = root / "review-kit"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "review-kit"}))
    (plugin / "agents").mkdir()
    (plugin / "agents" / "code-reviewer.md").write_text(
        "---\nname: code-reviewer\ndescription: Use this agent to review a change: it reports bugs with file:line.\n"
        "tools: Read, Grep, Glob\nmodel: sonnet\n---\nYou are a meticulous code reviewer. Report only real bugs.\n"
    )


def _subagent_block(client: AhpClient, session: str) -> dict | None:
    state = client.state(session) or {}
    for part in (state.get("activeTurn") or {}).get("responseParts") or ():
        call = part.get("toolCall") if part.get("kind") == "toolCall" else None
        for block in (call or {}).get("content") or ():
            if block.get("type") == "subagent":
                return block
    return None


async def test_a_sub_agent_runs_in_its_own_chat_a_0_2_0_client_watches_it_as_a_session(tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugins = tmp_path / "plugins"
    _reviewer_plugin(plugins)
    release = asyncio.Event()
    task = {"description": "Review the parser", "prompt": "Review parser.py for bugs.", "subagent_type": "code-reviewer"}
    replies = [
        Reply(200, chat_sse(tool_calls=[("call-1", "task", json.dumps(task))])),
        Reply(200, chat_sse("parser.py:3: ", "off-by-one in the loop."), hold=release),
        Reply(200, chat_sse("The reviewer found an off-by-one in parser.py:3.")),
    ]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        config = config_for(tmp_path, toml=fake_agent_toml(server.base_url), plugins={"directories": [str(plugins)]})
        async with serving(config, frame_checker) as (running, client):
            session = await ready_session(client, provider="fake")
            watcher = await AhpClient.connect(running.url.split("?")[0], token=TOKEN, frame_hook=frame_checker.hook)
            try:
                # 0.2.0 on purpose: what this test checks is the 0.2.0 projection of a sub-agent's chat
                # as a session of its own (``<session>/subagent/<call>``).
                await watcher.initialize(subscriptions=["ahp-root://", session], protocol_versions=("0.2.0",))
                turn_id = client.send_message(session, "review my parser change")
                await watcher.wait_for(lambda m, e: _subagent_block(watcher, session) is not None)
                block = _subagent_block(watcher, session)
                child = block["resource"]
                await watcher.subscribe(child)
                recorder = Recorder(watcher, child)
                release.set()
                await client.wait_for(lambda m, e: any(t["id"] == turn_id for t in client.state(session).get("turns") or []))
                await idle(client, session)
                await watcher.wait_for(lambda m, e: len((watcher.state(child) or {}).get("turns") or []) == 1)
                child_state = watcher.state(child)
            finally:
                await watcher.close()
            turn = client.state(session)["turns"][0]
    # The model named it by its bare name, which only one agent has; it runs as plugin:agent.
    assert (block["title"], block["agentName"], block["description"]) == (
        "Sub-agent: Review the parser", "review-kit:code-reviewer", "Review the parser")
    assert child == f"{session}/subagent/call-1"  # the 0.2.0 name of the sub-agent's chat
    # The second client saw the child's answer stream in, and converged on the finished child turn.
    assert ("session/delta" in [a if isinstance(a, str) else a[0] for a in recorder.compact()])
    child_turn, = child_state["turns"]
    assert child_turn["state"] == "complete"
    assert child_turn["userMessage"]["text"] == "Review parser.py for bugs."
    assert child_state["summary"]["title"] == "Sub-agent: Review the parser"
    # The child ran as the custom agent; the parent's tool result is the child's final answer.
    child_request = server.requests[1].json()
    assert "You are a meticulous code reviewer." in child_request["messages"][0]["content"]
    assert "task" not in [t["function"]["name"] for t in child_request.get("tools") or []]
    parent_tool_result = server.requests[2].json()["messages"][-1]
    assert parent_tool_result["role"] == "tool" and "parser.py:3: off-by-one in the loop." in parent_tool_result["content"]
    assert turn["state"] == "complete"
    call = next(p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall")
    assert call["success"] is True and call["content"][0] == block


async def test_cancelling_the_parent_turn_cancels_the_sub_agent(tmp_path: Path, frame_checker: FrameChecker) -> None:
    never = asyncio.Event()
    task = {"description": "Search everything", "prompt": "Find all TODOs."}
    replies = [
        Reply(200, chat_sse(tool_calls=[("call-1", "task", json.dumps(task))])),
        Reply(200, chat_sse("never sent"), hold=never),
    ]
    try:
        async with FakeProviderServer(replies, base_path="/v1") as server:
            async with serving(config_for(tmp_path, toml=fake_agent_toml(server.base_url)), frame_checker) as (_, client):
                session = await ready_session(client, provider="fake")
                turn_id = client.send_message(session, "find the TODOs")
                await client.wait_for(lambda m, e: _subagent_block(client, session) is not None)
                child = _subagent_block(client, session)["resource"]
                await client.subscribe(child)
                await client.wait_for(lambda m, e: (client.state(child) or {}).get("activeTurn") is not None)
                client.cancel_turn(session, turn_id)
                await client.wait_for(lambda m, e: len((client.state(child) or {}).get("turns") or []) == 1)
                await idle(client, session)
                child_turn, = client.state(child)["turns"]
                parent_turn, = client.state(session)["turns"]
    finally:
        never.set()
    assert child_turn["state"] == "cancelled"
    assert parent_turn["state"] == "cancelled"


def _calls(client: AhpClient, session: str) -> list[dict]:
    state = client.state(session) or {}
    turn = state.get("activeTurn") or ((state.get("turns") or [{}])[-1])
    return [p["toolCall"] for p in turn.get("responseParts") or () if p.get("kind") == "toolCall"]


async def test_ten_parallel_task_calls_run_at_most_the_cap_at_once_and_all_finish(tmp_path: Path, frame_checker: FrameChecker) -> None:
    release = asyncio.Event()
    tasks = [(f"call-{n}", "task", json.dumps({"description": f"Search {n}", "prompt": f"Find thing {n}."})) for n in range(10)]
    replies = [Reply(200, chat_sse(tool_calls=tasks))]
    replies += [Reply(200, chat_sse("found it"), hold=release) for _ in range(10)]
    replies += [Reply(200, chat_sse("All ten searches are done."))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        config = config_for(tmp_path, toml=fake_agent_toml(server.base_url), sessions={"max_subagents": 4})
        async with serving(config, frame_checker) as (running, client):
            store = running.host.store
            session = await ready_session(client, provider="fake")
            parent = running.host.session_uri(session)
            busy: list[int] = []

            def count_running(*_args: object) -> None:
                busy.append(sum(1 for uri in _subagent_chats(store, parent) if store.active_turn_id(uri) is not None))

            store.change_observers.append(count_running)
            turn_id = client.send_message(session, "search ten things")
            # Four sub-agents run; the six other calls say they wait for a free sub-agent.

            def waiting() -> list:
                return [c for c in _calls(client, session)
                        if any("Waiting for a free sub-agent" in b.get("text", "") for b in c.get("content") or ())]

            await client.wait_for(lambda m, e: len(waiting()) == 6 and max(busy, default=0) == 4, timeout=30)
            assert len(_subagent_chats(store, parent)) == 4
            release.set()
            await client.wait_for(lambda m, e: any(t["id"] == turn_id for t in client.state(session).get("turns") or []), timeout=60)
            store.change_observers.remove(count_running)
            turn = client.state(session)["turns"][-1]
            children = _subagent_chats(store, parent)
            sessions = [uri for uri, _ in store.channels("session")]
    assert max(busy) == 4, f"at most 4 sub-agents may run at once, saw {max(busy)}"
    assert turn["state"] == "complete"
    finished = [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]
    assert len(finished) == 10 and all(call["success"] is True for call in finished)
    assert len(children) == 10 and sessions == [parent], "sub-agents are chats of the session, not sessions"


def _subagent_chats(store: Any, session: str) -> list[str]:
    """The sub-agent chats in ``session``'s catalogue."""
    chats = [c["resource"] for c in (store.state(session) or {}).get("chats") or ()]
    return [uri for uri in chats if parse_subagent_chat_uri(uri) is not None]


async def test_disposing_a_session_removes_its_sub_agent_chats_running_or_finished(tmp_path: Path, frame_checker: FrameChecker) -> None:
    never = asyncio.Event()
    first = {"description": "Quick look", "prompt": "Look quickly."}
    second = {"description": "Long search", "prompt": "Search for ever."}
    replies = [
        Reply(200, chat_sse(tool_calls=[("call-1", "task", json.dumps(first))])),
        Reply(200, chat_sse("Looked.")),
        Reply(200, chat_sse(tool_calls=[("call-2", "task", json.dumps(second))])),
        Reply(200, chat_sse("never sent"), hold=never),
    ]
    try:
        async with FakeProviderServer(replies, base_path="/v1") as server:
            async with serving(config_for(tmp_path, toml=fake_agent_toml(server.base_url)), frame_checker) as (running, client):
                session = await ready_session(client, provider="fake")
                other = await ready_session(client, provider="fake")
                client.send_message(session, "look, then search")
                store = running.host.store
                parent = running.host.session_uri(session)
                # The first sub-agent finished; the second is running its turn.
                await client.wait_for(lambda m, e: len(_subagent_chats(store, parent)) == 2
                                      and any(store.active_turn_id(c) is not None for c in _subagent_chats(store, parent)), timeout=30)
                chats = _subagent_chats(store, parent)
                await client.dispose_session(session)
                listed = {summary["resource"] for summary in await client.list_sessions()}
                left = [chat for chat in chats if chat in store]
                # The 0.2.0 name of a sub-agent of a disposed session names nothing any more.
                try:
                    await client.subscribe(f"{session}/subagent/call-1")
                    refused = None
                except Exception as error:
                    refused = error
    finally:
        never.set()
    assert listed == {other}
    assert left == [], "a sub-agent's chat outlived its session"
    assert refused is not None and "No session" in str(refused)


async def test_a_restarted_host_restores_the_sub_agent_chat_and_disposes_it_with_its_session(tmp_path: Path, frame_checker: FrameChecker) -> None:
    task = {"description": "Quick look", "prompt": "Look quickly."}
    replies = [
        Reply(200, chat_sse(tool_calls=[("call-1", "task", json.dumps(task))])),
        Reply(200, chat_sse("Looked.")),
        Reply(200, chat_sse("The sub-agent looked.")),
    ]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        config = config_for(tmp_path, toml=fake_agent_toml(server.base_url))
        async with serving(config, frame_checker) as (_, client):
            session = await ready_session(client, provider="fake")
            other = await ready_session(client, provider="fake")
            turn = await run_turn(client, session, "look")
            await idle(client, session)
        assert turn["state"] == "complete"
        async with serving(config, frame_checker) as (running, client):
            parent = running.host.session_uri(session)
            restored = _subagent_chats(running.host.store, parent)
            answer = (running.host.store.state(restored[0]) or {}).get("turns") if restored else None
            await client.subscribe(f"{session}/subagent/call-1")
            shown = client.state(f"{session}/subagent/call-1")
            await client.dispose_session(session)
            after = {summary["resource"] for summary in await client.list_sessions()}
            gone = [chat for chat in restored if chat in running.host.store]
    assert len(restored) == 1 and answer and answer[0]["responseParts"][-1]["content"] == "Looked."
    assert shown is not None and shown["turns"][0]["responseParts"][-1]["content"] == "Looked."
    assert after == {other} and gone == []


# --- the same sub-agent seen by 0.9.0, 0.7.0 and 0.2.0 clients ------------------------------------


def _call_says(client: AhpClient, session: str, text: str) -> bool:
    return any(text in block.get("text", "") for call in _calls(client, session) for block in call.get("content") or ())


def _mirror(peer: Peer, channel: str, snapshot: dict, kind: str = "chat") -> dict:
    """What a 0.9.0 client that took ``snapshot`` and applied every later action of ``channel`` holds."""
    state = snapshot["state"]
    for envelope in peer.actions():
        if envelope["channel"] == channel and envelope["serverSeq"] > snapshot["fromSeq"] and "rejectionReason" not in envelope:
            state = internal.reduce(kind, state, envelope["action"], 0)
    return state


async def test_clients_of_every_version_see_the_sub_agent_chat_its_confirmation_and_its_end(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    """A 0.9.0 client sees the sub-agent's chat join the session's catalogue linked to the spawning
    call, its turn stream in it (a shell call confirmed from the 0.2.0 client) and the chat go with
    the session; a 0.7.0 client sees the same catalogue entry; our 0.2.0 client watches it as the
    projected session the parent call's content names."""
    provider = ScriptedProvider([
        call_tools(("task", {"description": "Look around", "prompt": "Say what echo prints."})),
        call_tools(("shell", {"command": "echo hi"})),
        Script(tuple(text(["Echo ", "printed hi."], index=0) + finish("stop"))),
        reply("The sub-agent says echo printed hi."),
    ])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)]) as (running, client):
        host = running.host
        session = await ready_session(client)
        internal_session = host.session_uri(session)
        default_chat = default_chat_uri(internal_session)
        worker = subagent_chat_uri(internal_session, "call_0")
        new = await Peer.open(running)
        await new.initialize("client-09", ["0.9.0"], [ROOT, internal_session, default_chat])
        mid = await Peer.open(running)
        await mid.initialize("client-07", ["0.7.0"], [ROOT, internal_session])
        try:
            turn_id = client.send_message(session, "ask a sub-agent what echo prints")
            added = await new.until(lambda: next((a for a in new.actions() if a["channel"] == internal_session
                                                  and a["action"]["type"] == "session/chatAdded"), None))
            worker_snapshot = (await new.request("subscribe", {"channel": worker}))["result"]["snapshot"]
            # Our 0.2.0 client follows the parent call's subagent block to the projected session.
            await client.wait_for(lambda m, e: _subagent_block(client, session) is not None)
            projected = _subagent_block(client, session)["resource"]
            await client.subscribe(projected)
            call = await wait_pending(client, projected)
            # The parent's call says its sub-agent waits for a person (the parent's own 0.2.0 view
            # shows no other sign of it), and stops saying so once it was answered.
            await client.wait_for(lambda m, e: _call_says(client, session, WAITING_FOR_YOU))
            await new.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {"channel": worker, "clientSeq": 1, "action": {
                "type": "chat/turnStarted", "turnId": "mine", "startedAt": "2026-01-01T00:00:00.000Z",
                "message": {"text": "hello?", "origin": {"kind": "user"}}}}})
            client.dispatch(projected, {"type": "session/toolCallConfirmed", "turnId": call["turnId"], "toolCallId": call["toolCallId"],
                                        "approved": True, "confirmed": "user-action"})
            await client.wait_for(lambda m, e: not _call_says(client, session, WAITING_FOR_YOU))
            await client.wait_for(lambda m, e: any(t["id"] == turn_id for t in client.state(session).get("turns") or ()))
            await new.until(lambda: any(a["channel"] == worker and a["action"]["type"] == "chat/turnComplete" for a in new.actions()))
            worker_mirror = _mirror(new, worker, worker_snapshot)
            worker_state = host.store.state(worker)
            old_view = client.state(projected)
            # Our 0.2.0 client cannot type into it either: the chat is read-only.
            typed = await client.outcome(client.dispatch(projected, {"type": "session/turnStarted", "turnId": "typed",
                                                                    "userMessage": {"text": "hello?"}}))
            await mid.until(lambda: any(a["channel"] == internal_session and a["action"]["type"] == "session/chatAdded"
                                        for a in mid.actions()))
            mid_added = next(a for a in mid.actions() if a["action"]["type"] == "session/chatAdded")
            parent_turn = client.state(session)["turns"][-1]
            rejected = await new.until(lambda: next((a for a in new.actions() if a.get("rejectionReason")), None))

            disposed = await new.request("disposeSession", {"channel": internal_session})
            await new.until(lambda: any(f.get("method") == "root/sessionRemoved" for f in new.received))
            resubscribe = await new.request("subscribe", {"channel": worker})
        finally:
            await new.close()
            await mid.close()
    # 0.9.0: the chat joined the catalogue, linked to the spawning call both ways.
    summary = added["action"]["summary"]
    assert summary["resource"] == worker and summary["title"] == "Sub-agent: Look around"
    assert summary["origin"] == {"kind": "tool", "chat": default_chat, "toolCallId": "call_0"}
    assert summary["interactivity"] == "read-only"
    worker_actions = [a["action"]["type"] for a in new.actions() if a["channel"] == worker]
    assert worker_actions[0] == "chat/turnStarted" and worker_actions.count("chat/delta") == 2
    assert "chat/toolCallConfirmed" in worker_actions and worker_actions[-1] == "chat/turnComplete"
    assert worker_mirror == worker_state
    [done] = worker_state["turns"]
    assert done["message"]["text"] == "Say what echo prints." and done["state"] == "complete"
    assert done["responseParts"][-1]["content"] == "Echo printed hi."
    # The client may not type into it (read-only): its message is refused, saying why.
    assert rejected["channel"] == worker and rejected["action"]["turnId"] == "mine"
    assert "read-only" in rejected["rejectionReason"]
    # 0.7.0 sees the same catalogue entry (ChatOrigin "tool" and interactivity are 0.7.0 fields).
    assert mid_added["action"]["summary"]["origin"]["kind"] == "tool"
    # 0.2.0: the parent's call names the projected session, which shows the sub-agent's turn.
    assert projected == f"{session}/subagent/call_0"
    parent_call = next(p["toolCall"] for p in parent_turn["responseParts"] if p["kind"] == "toolCall")
    assert parent_call["success"] is True and parent_call["content"][0]["resource"] == projected
    assert "Echo printed hi." in parent_call["content"][1]["text"]
    [shown] = old_view["turns"]
    shell = next(p["toolCall"] for p in shown["responseParts"] if p["kind"] == "toolCall")
    assert shell["status"] == "completed" and shell["confirmed"] == "user-action"
    assert old_view["summary"]["title"] == "Sub-agent: Look around"
    assert typed.status == "rejected" and "read-only" in (typed.reason or "")
    # The chat went with its session.
    assert disposed.get("error") is None and worker not in host.store
    assert resubscribe["error"]["code"] in (-32001, -32008)


# --- a journal from the build that ran sub-agents as child sessions --------------------------------

PARENT, CHILD = "offline:/parent-1", "offline:/child-1"


def _write_child_session_journal(data: Path, directory: str, named: str) -> None:
    """What the previous build left: a parent whose finished ``task`` call names (``named``) a
    child session, the child with its one turn, and the child turn's transcript."""
    data.mkdir(parents=True, exist_ok=True)
    journal = Journal(data / "journal.sqlite3")
    journal.append_created("ahp-root://", {"agents": [], "activeSessions": 2}, "root")
    parent_chat, child_chat = default_chat_uri(PARENT), default_chat_uri(CHILD)
    block = {"type": "subagent", "resource": named, "title": "Sub-agent: Look", "description": "Look"}
    call = {"toolCallId": "call-7", "toolName": "task", "displayName": "Run Sub-agent", "status": "completed",
            "invocationMessage": "Start sub-agent: Look", "toolInput": "{}", "confirmed": "not-needed", "success": True,
            "pastTenseMessage": "Sub-agent finished: Look", "content": [block, {"type": "text", "text": "Looked."}]}
    turn = {"id": "pt1", "message": {"text": "look", "origin": {"kind": "user"}}, "state": "complete", "usage": None,
            "startedAt": "2026-01-01T00:00:00.000Z", "responseParts": [{"kind": "toolCall", "toolCall": call},
                                                                       {"kind": "markdown", "id": "pt1:text-0", "content": "It looked."}]}
    child_turn = {"id": "ct1", "message": {"text": "Look.", "origin": {"kind": "user"}}, "state": "complete", "usage": None,
                  "startedAt": "2026-01-01T00:00:01.000Z", "responseParts": [{"kind": "markdown", "id": "ct1:text-0", "content": "Looked."}]}
    for uri, chat, title, turns in ((PARENT, parent_chat, "Parent", [turn]), (CHILD, child_chat, "Sub-agent: Look", [child_turn])):
        state = new_session_state(uri, provider="offline", working_directory=directory, title=title)
        state["lifecycle"] = "ready"
        state["_meta"] = {"createdAt": "2026-01-01T00:00:00.000Z"}
        journal.append_created(uri, state, "session")
        journal.append_created(chat, new_chat_state(chat, now=1_767_225_600_000, turns=turns), "chat")
    journal.flush()
    journal.close()
    transcripts = TranscriptStore(data / "transcripts.sqlite3")
    transcripts.save(CHILD, "ct1", [UserMessage.of("Look."), AssistantMessage(parts=(TextPart(text="Looked."),))])
    transcripts.close()


@pytest.mark.parametrize("named", [default_chat_uri(CHILD), "ahp-session:/child-1"], ids=["0.9.0-era", "0.2.0-era"])
async def test_a_journal_with_child_sessions_opens_with_them_as_sub_agent_chats(tmp_path: Path, named: str) -> None:
    config = host_config(tmp_path / "data", default_directory=str(tmp_path), default_agent="offline")
    _write_child_session_journal(config.data_path(), tmp_path.as_uri(), named)
    host = AgentHost(config)
    await host.start()
    try:
        worker = subagent_chat_uri(PARENT, "call-7")
        sessions = [uri for uri, _ in host.store.channels("session")]
        catalogue = host.store.state(PARENT)["chats"]
        worker_state = host.store.state(worker)
        parent_call = host.store.state(default_chat_uri(PARENT))["turns"][0]["responseParts"][0]["toolCall"]
        copied = host.transcripts.load(PARENT, ["ct1"])
        shown = v02_session_state(host, "ahp-session:/parent-1")
    finally:
        await host.stop()
    assert sessions == [PARENT], "the child session should be gone"
    assert [c["resource"] for c in catalogue] == [default_chat_uri(PARENT), worker]
    assert catalogue[1]["origin"] == {"kind": "tool", "chat": default_chat_uri(PARENT), "toolCallId": "call-7"}
    assert catalogue[1]["interactivity"] == "read-only" and catalogue[1]["title"] == "Sub-agent: Look"
    assert [t["id"] for t in worker_state["turns"]] == ["ct1"] and worker_state["turns"][0]["responseParts"][0]["content"] == "Looked."
    assert parent_call["content"][0]["resource"] == worker
    assert copied["ct1"][1].text == "Looked."
    assert shown is not None and shown["turns"][0]["responseParts"][0]["toolCall"]["content"][0]["resource"] == \
        "ahp-session:/parent-1/subagent/call-7"
    # Opening it again changes nothing: the conversion happened once.
    host = AgentHost(config)
    await host.start()
    try:
        again = [c["resource"] for c in host.store.state(PARENT)["chats"]]
    finally:
        await host.stop()
    assert again == [default_chat_uri(PARENT), worker]


async def test_a_0_2_0_client_that_drops_catches_up_on_a_sub_agent_by_replay(tmp_path: Path, frame_checker: FrameChecker) -> None:
    release = asyncio.Event()
    task = {"description": "Search", "prompt": "Find it."}
    replies = [
        Reply(200, chat_sse(tool_calls=[("call-1", "task", json.dumps(task))])),
        Reply(200, chat_sse("Found ", "it."), hold=release),
        Reply(200, chat_sse("The sub-agent found it.")),
    ]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        async with serving(config_for(tmp_path, toml=fake_agent_toml(server.base_url)), frame_checker) as (running, client):
            session = await ready_session(client, provider="fake")
            projected = f"{session}/subagent/call-1"
            watcher = await AhpClient.connect(running.url.split("?")[0], token=TOKEN, frame_hook=frame_checker.hook)
            try:
                # 0.2.0 on purpose: the replay of a sub-agent's projected 0.2.0 session is what is tested.
                await watcher.initialize(subscriptions=["ahp-root://"], protocol_versions=("0.2.0",))
                turn_id = client.send_message(session, "search")
                await client.wait_for(lambda m, e: _subagent_block(client, session) is not None)
                await watcher.subscribe(projected)
                await watcher.wait_for(lambda m, e: (watcher.state(projected) or {}).get("activeTurn") is not None)
                await watcher._conn.close()  # the watcher's socket drops while the sub-agent works
                release.set()
                await client.wait_for(lambda m, e: any(t["id"] == turn_id for t in client.state(session).get("turns") or []))
                result = await watcher.resume()
                await client.subscribe(projected)
                fresh, caught_up = client.state(projected), watcher.state(projected)
            finally:
                await watcher.close()
    assert result.kind == "replay" and len(result.replayed) > 0
    assert all(envelope["channel"] == projected for envelope in result.replayed)
    for state in (fresh, caught_up):
        state["summary"].pop("modifiedAt", None)
    assert caught_up == fresh
    assert fresh["turns"][0]["responseParts"][-1]["content"] == "Found it."


async def test_a_client_cannot_create_a_chat_where_sub_agents_live(running_host: RunningHost) -> None:
    session = f"offline:/{uuid.uuid4()}"
    peer = await Peer.open(running_host)
    try:
        await peer.initialize("client-09", ["0.9.0"])
        assert (await peer.request("createSession", {"channel": session})).get("error") is None
        reply = await peer.request("createChat", {"channel": session, "chat": subagent_chat_uri(session, "mine")})
        fine = await peer.request("createChat", {"channel": session, "chat": f"ahp-chat:/{uuid.uuid4()}"})
    finally:
        await peer.close()
    assert reply["error"]["code"] == -32602 and "sub-agents" in reply["error"]["message"]
    assert fine.get("error") is None
