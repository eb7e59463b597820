"""AG-UI runs on AHP sessions, end to end: front-end tools across two runs, an AHP client and an
AG-UI run on the same session at once, a second message while a turn runs, and what a dropped
HTTP connection does (nothing, unless the run asked for cancel-on-disconnect)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from ahp.protocol import builders
from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS
from host.runtime.agents import ModelSpec, ProviderAgent, StaticSource, TurnSettings
from host.runtime.agents.base import TurnContext
from host.state.store import Store
from host.transport.agui import client_id_for, session_uri_for, thread_session
from providers import ScriptedProvider
from providers.scripted import Pause, Script, finish, reply, text
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import config_for, ready_session, serving
from tests.host.runtime.agents.harness import run_chat_turn as run_turn

from .agui_client import compact, events_of, open_run, run, run_input, text_of, types, user

PICK_COLOR = {
    "name": "pick_color",
    "description": "Ask the person to pick a colour in the page.",
    "parameters": {"type": "object", "properties": {"hint": {"type": "string"}}},
}



def thread_states(running: Any, thread_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The host's internal states of a thread's session and of its default chat."""
    session = thread_session(running.host.store, thread_id)
    assert session is not None
    return running.host.store.state(session) or {}, running.host.store.state(default_chat_uri(session)) or {}

class FrontEndToolAgent:
    """Calls the active client's first tool exactly as the AHP client-tool contract says:
    ``chat/toolCallStart`` with its client ``contributor``, a delta, ``toolCallReady`` (running), then waits on
    the store for the owner's ``toolCallComplete`` and answers with what the tool returned."""

    provider = "frontend"

    def __init__(self) -> None:
        self.store: Store | None = None
        self.seen_tools: list[list[dict[str, Any]]] = []

    def info(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "displayName": "Front-end tool test agent",
            "description": "Calls the active client's first tool, then answers with its result.",
            "models": [{"id": "fe-1", "provider": self.provider, "name": "FE"}],
        }

    async def prepare_session(self, session: str, state: dict[str, Any]) -> None:
        return None

    async def run_turn(self, ctx: TurnContext) -> None:
        assert self.store is not None
        active = (ctx.state.get("activeClients") or [{}])[0]
        self.seen_tools.append(active.get("tools") or [])
        call_id = f"{ctx.turn_id}:call"
        completed = asyncio.Event()

        def observe(channel: str, before: dict, after: dict, envelope: dict) -> None:
            action = envelope["action"]
            if channel == ctx.chat and action.get("type") == "chat/toolCallComplete" and action.get("toolCallId") == call_id:
                completed.set()

        self.store.observers.append(observe)
        try:
            name = active["tools"][0]["name"]
            ctx.emit(builders.chat_tool_call_start(turn_id=ctx.turn_id, tool_call_id=call_id, tool_name=name, display_name=name,
                                                   contributor={"kind": "client", "clientId": active["clientId"]}))
            ctx.emit(builders.chat_tool_call_delta(turn_id=ctx.turn_id, tool_call_id=call_id, content='{"hint": "warm"}'))
            ctx.emit(builders.chat_tool_call_ready(turn_id=ctx.turn_id, tool_call_id=call_id, invocation_message=f"Run {name}",
                                                   tool_input='{"hint": "warm"}', confirmed="not-needed"))
            await asyncio.wait_for(completed.wait(), 20)
        finally:
            self.store.observers.remove(observe)
        call = next(p["toolCall"] for p in ctx.chat_state["activeTurn"]["responseParts"] if p.get("kind") == "toolCall")
        answer = " ".join(item["text"] for item in call.get("content") or [])
        part_id = ctx.new_part_id("text")
        ctx.emit(builders.chat_response_part(turn_id=ctx.turn_id, part={"kind": "markdown", "id": part_id, "content": ""}))
        ctx.emit(builders.chat_delta(turn_id=ctx.turn_id, part_id=part_id, content=f"You picked {answer}."))


async def test_a_front_end_tool_ends_the_run_and_its_tool_message_continues_the_turn_in_the_next(tmp_path: Path, frame_checker: FrameChecker) -> None:
    agent = FrontEndToolAgent()
    async with serving(config_for(tmp_path), frame_checker, [agent], versions=PROTOCOL_VERSIONS) as (running, client):
        agent.store = running.host.store
        messages = [user("m1", "pick a colour")]
        first = await run(running.http_url, run_input("thread-fe", "run-1", messages, tools=[PICK_COLOR]))
        assert types(first) == ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"]
        call_id = first[1]["toolCallId"]
        assert first[1]["toolCallName"] == "pick_color" and first[2]["delta"] == '{"hint": "warm"}'
        assert first[-1]["outcome"] == {"type": "success", "pendingToolCallIds": [call_id]}
        state, chat = thread_states(running, "thread-fe")
        assert chat["activeTurn"] is not None  # the turn waits for the front end
        assert [c["clientId"] for c in state["activeClients"]] == [client_id_for("thread-fe")]
        assert agent.seen_tools[0] == [{"name": "pick_color", "description": PICK_COLOR["description"], "inputSchema": PICK_COLOR["parameters"]}]

        messages += [
            {"id": "a1", "role": "assistant", "toolCalls": [{"id": call_id, "type": "function", "function": {"name": "pick_color", "arguments": '{"hint": "warm"}'}}]},
            {"id": "t1", "role": "tool", "toolCallId": call_id, "content": "orange"},
        ]
        second = await run(running.http_url, run_input("thread-fe", "run-2", messages, tools=[PICK_COLOR]))
        assert compact(second) == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]
        assert text_of(second) == "You picked orange."
        state, chat = thread_states(running, "thread-fe")
        [turn] = chat["turns"]
        call = turn["responseParts"][0]["toolCall"]
        assert (call["status"], call["success"], call["content"]) == ("completed", True, [{"type": "text", "text": "orange"}])
        assert state["activeClients"] == []  # the role is released once no call waits on the front end


async def test_a_new_message_while_a_front_end_call_waits_is_refused_with_what_to_send(tmp_path: Path, frame_checker: FrameChecker) -> None:
    agent = FrontEndToolAgent()
    async with serving(config_for(tmp_path), frame_checker, [agent], versions=PROTOCOL_VERSIONS) as (running, _):
        agent.store = running.host.store
        first = await run(running.http_url, run_input("thread-w", "run-1", [user("m1", "pick")], tools=[PICK_COLOR]))
        again = await run(running.http_url, run_input("thread-w", "run-2", [user("m1", "pick"), user("m2", "never mind")], tools=[PICK_COLOR]))
    assert types(again) == ["RUN_STARTED", "RUN_ERROR"]
    assert first[1]["toolCallId"] in again[-1]["message"] and "tool message" in again[-1]["message"]


def held_reply(gate: asyncio.Event, first: str, rest: str) -> Script:
    """Streams ``first``, waits for ``gate``, then streams ``rest`` and finishes."""
    events = text([first, rest], index=0)
    return Script((events[0], events[1], Pause(event=gate), *events[2:], *finish("stop", input_tokens=3, output_tokens=2)))


def scripted(provider: ScriptedProvider) -> ProviderAgent:
    return ProviderAgent("scripted", StaticSource(provider), display_name="Scripted", models=[ModelSpec("m1")], settings=TurnSettings(title="first-words"))


async def test_an_ahp_client_sees_the_ag_ui_run_live_and_both_converge_on_the_same_turns(tmp_path: Path, frame_checker: FrameChecker) -> None:
    gate = asyncio.Event()
    provider = ScriptedProvider([held_reply(gate, "Hello", " world"), reply("From AHP."), reply("Third.")])
    async with serving(config_for(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, client):
        session = session_uri_for("thread-both", provider="scripted")
        await ready_session(client, channel=session)  # an AHP client made the session and watches it
        chat = default_chat_uri(session)
        collected: list[dict] = []

        async def ag_ui_run() -> None:
            async with open_run(running.http_url, run_input("thread-both", "run-1", [user("m1", "say hello")])) as response:
                async for event in events_of(response):
                    collected.append(event)

        task = asyncio.create_task(ag_ui_run())
        # The AHP client sees the AG-UI turn, its origin and its first words while the run is still going.
        await client.wait_for(lambda m, e: "Hello" in json.dumps((client.state(chat) or {}).get("activeTurn") or {}), timeout=20)
        assert not task.done()
        turn = client.state(chat)["activeTurn"]
        assert turn["message"]["text"] == "say hello"
        # A second message from the AHP side while the AG-UI turn runs is refused, and vice versa.
        refused = await run(running.http_url, run_input("thread-both", "run-x", [user("m1", "say hello"), user("m9", "another")]))
        assert types(refused) == ["RUN_STARTED", "RUN_ERROR"] and "already running" in refused[-1]["message"]
        gate.set()
        await asyncio.wait_for(task, 20)
        ahp_turn = await run_turn(client, session, "from the editor")
        third = await run(running.http_url, run_input("thread-both", "run-2", [user("m1", "say hello"), user("m3", "and again")]))
        await client.wait_for(lambda m, e: len((client.state(chat) or {}).get("turns") or []) == 3)
        host_turns = thread_states(running, "thread-both")[1]["turns"]
        mirror_turns = client.state(chat)["turns"]
    assert text_of(collected) == "Hello world" and collected[-1]["type"] == "RUN_FINISHED"
    assert ahp_turn["state"] == "complete" and text_of(third) == "Third."
    # The AHP client's mirror holds the very turns of the host's chat.
    assert mirror_turns == host_turns
    assert [t["message"]["text"] for t in host_turns] == ["say hello", "from the editor", "and again"]
    assert [p["content"] for t in host_turns for p in t["responseParts"]] == ["Hello world", "From AHP.", "Third."]


async def test_a_dropped_connection_leaves_the_turn_running_for_the_ahp_clients(tmp_path: Path, frame_checker: FrameChecker) -> None:
    gate = asyncio.Event()
    provider = ScriptedProvider([held_reply(gate, "Partial", " and the rest")])
    async with serving(config_for(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, client):
        session = session_uri_for("thread-drop", provider="scripted")
        await ready_session(client, channel=session)
        chat = default_chat_uri(session)
        async with open_run(running.http_url, run_input("thread-drop", "run-1", [user("m1", "go")])) as response:
            async for event in events_of(response):
                if event["type"] == "TEXT_MESSAGE_CONTENT":
                    break  # the browser tab closes mid-answer
        gate.set()
        await client.wait_for(lambda m, e: len((client.state(chat) or {}).get("turns") or []) == 1, timeout=20)
        [turn] = client.state(chat)["turns"]
    assert turn["state"] == "complete" and turn["responseParts"][0]["content"] == "Partial and the rest"


async def test_cancel_on_disconnect_cancels_the_turn_when_the_connection_drops(tmp_path: Path, frame_checker: FrameChecker) -> None:
    gate = asyncio.Event()
    provider = ScriptedProvider([held_reply(gate, "Partial", " never")])
    async with serving(config_for(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, client):
        session = session_uri_for("thread-cancel", provider="scripted")
        await ready_session(client, channel=session)
        chat = default_chat_uri(session)
        body = run_input("thread-cancel", "run-1", [user("m1", "go")], forwardedProps={"cancelOnDisconnect": True})
        async with open_run(running.http_url, body) as response:
            async for event in events_of(response):
                if event["type"] == "TEXT_MESSAGE_CONTENT":
                    break
        await client.wait_for(lambda m, e: len((client.state(chat) or {}).get("turns") or []) == 1, timeout=20)
        [turn] = client.state(chat)["turns"]
    assert turn["state"] == "cancelled"


async def test_tools_cannot_be_offered_while_an_ahp_client_holds_the_active_client_role(tmp_path: Path, frame_checker: FrameChecker) -> None:
    agent = FrontEndToolAgent()
    async with serving(config_for(tmp_path), frame_checker, [agent], versions=PROTOCOL_VERSIONS) as (running, client):
        agent.store = running.host.store
        session = session_uri_for("thread-role", provider="frontend")
        await ready_session(client, channel=session)
        seq = client.dispatch(session, {"type": "session/activeClientSet", "activeClient": {"clientId": client.client_id, "displayName": "Editor", "tools": []}})
        assert (await client.outcome(seq)).accepted
        events = await run(running.http_url, run_input("thread-role", "run-1", [user("m1", "pick")], tools=[PICK_COLOR]))
        state, chat = thread_states(running, "thread-role")
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert "Editor" in events[-1]["message"] and "Run without tools" in events[-1]["message"]
    assert [c["clientId"] for c in state["activeClients"]] == [client.client_id] and chat["turns"] == []


async def test_a_front_end_tool_called_by_the_real_provider_loop_round_trips_across_two_runs(tmp_path: Path, frame_checker: FrameChecker) -> None:
    from providers import ToolResultsMessage
    from providers.scripted import call_tools

    provider = ScriptedProvider([call_tools(("pick_color", {"hint": "warm"})), reply("You picked orange, a warm colour.")])
    config = config_for(tmp_path, tools={"enabled": True})
    async with serving(config, frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, _):
        messages = [user("m1", "pick a colour")]
        first = await run(running.http_url, run_input("thread-real", "run-1", messages, tools=[PICK_COLOR]))
        assert types(first) == ["RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"]
        call_id = first[1]["toolCallId"]
        assert first[1]["toolCallName"] == "pick_color"
        assert json.loads("".join(e["delta"] for e in first if e["type"] == "TOOL_CALL_ARGS")) == {"hint": "warm"}
        assert "pick_color" in [t.name for t in provider.requests[0].tools]
        messages += [
            {"id": "a1", "role": "assistant", "toolCalls": [{"id": call_id, "type": "function", "function": {"name": "pick_color", "arguments": '{"hint": "warm"}'}}]},
            {"id": "t1", "role": "tool", "toolCallId": call_id, "content": "orange"},
        ]
        second = await run(running.http_url, run_input("thread-real", "run-2", messages, tools=[PICK_COLOR]))
        assert text_of(second) == "You picked orange, a warm colour."
        assert types(second)[-1] == "RUN_FINISHED"
        [results] = [m for m in provider.requests[1].messages if isinstance(m, ToolResultsMessage)]
        assert [(r.text, r.is_error) for r in results.results] == [("orange", False)]
        [turn] = thread_states(running, "thread-real")[1]["turns"]
        assert turn["state"] == "complete"
