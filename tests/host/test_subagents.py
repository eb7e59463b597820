"""Sub-agents: the ``task`` tool runs a job in a chat it opens in its session, which clients watch live.

A real host on port 0 with a local fake OpenAI-compatible provider (it records what the model was
sent) or a scripted one, a custom agent in a Claude Code-shaped plugin, our 0.2.0 client (which
sees a sub-agent's chat as a projected session ``ahp-session:/<id>/subagent/<call>``) and bare
0.9.0 clients (which see it in the session's catalogue of chats)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typing import Any

from ahp.state import parse_subagent_chat_uri
from client import AhpClient
from tests.conftest import TOKEN, FrameChecker
from tests.host.agents.harness import Recorder, config_for, idle, ready_session, run_turn, serving
from tests.host.agents.test_faults import fake_agent_toml
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
                await watcher.initialize(subscriptions=["ahp-root://", session])
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
    assert (block["title"], block["agentName"], block["description"]) == ("Sub-agent: Review the parser", "code-reviewer", "Review the parser")
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
            waiting = lambda: [c for c in _calls(client, session)
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
                except Exception as error:  # noqa: BLE001 - the error is what is checked
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
