"""Questions for the user in an AG-UI run, over real HTTP with the official AG-UI types: the model's
``ask_user`` and an MCP server's elicitation end the run with an ``input_required`` interrupt (they
used to hang it for ever), the next run's ``resume`` answers it and the same turn goes on; and a
run with ``forwardedProps.cancel`` ends a stuck turn, so the thread takes new messages again."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from ag_ui.core import ResumeEntry, RunAgentInput, RunFinishedEvent, UserMessage

from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS
from host.transport.agui import session_uri_for
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import serving
from tests.host.runtime.customizations.test_mcp_sessions import (
    mcp_config,
    scripted_agent,
    sink_server,
    wait_tools,
)
from tests.host.runtime.tools._support import scripted, tool_results, tools_config

from .agui_client import open_run, run, text_of, types

QUESTIONS = [
    {"id": "colour", "kind": "single-select", "message": "Which colour?", "required": True,
     "options": [{"id": "red", "label": "Red"}, {"id": "blue", "label": "Blue"}]},
    {"id": "count", "kind": "integer", "message": "How many?"},
    {"id": "gift", "kind": "boolean", "message": "Wrapped as a gift?"},
]


def body(thread: str, run_id: str, messages: list[UserMessage], *, resume: list[ResumeEntry] | None = None,
         **props: Any) -> dict[str, Any]:
    """A ``RunAgentInput`` built with the official types, as JSON."""
    built = RunAgentInput(thread_id=thread, run_id=run_id, messages=messages, tools=[], context=[], state={},
                          forwarded_props=props or {}, resume=resume)
    return json.loads(built.model_dump_json(by_alias=True, exclude_none=True))


def said(message_id: str, text: str) -> UserMessage:
    return UserMessage(id=message_id, role="user", content=text)


def finished(events: list[dict[str, Any]]) -> RunFinishedEvent:
    assert events[-1]["type"] == "RUN_FINISHED", events[-1]
    return RunFinishedEvent.model_validate(events[-1])


async def test_ask_user_ends_the_run_with_an_interrupt_and_the_resume_answers_it(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("ask_user", {"message": "A few details", "questions": QUESTIONS})),
                                 reply("Two blue ones, wrapped.")])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, _):
        history = [said("m1", "order some socks")]
        first = await asyncio.wait_for(run(running.http_url, body("thread-ask", "run-1", history, agent="scripted")), 30)
        outcome = finished(first).outcome
        assert outcome is not None and outcome.type == "interrupt"
        [interrupt] = outcome.interrupts
        assert interrupt.id.startswith("ahp-input:ask-") and interrupt.reason == "input_required"
        assert interrupt.message == "A few details"
        answers = interrupt.response_schema["properties"]["answers"]
        assert answers["required"] == ["colour"]
        assert answers["properties"]["colour"] == {"description": "Which colour?", "type": "string", "enum": ["red", "blue"]}
        assert answers["properties"]["count"]["type"] == "integer" and answers["properties"]["gift"]["type"] == "boolean"
        assert [q["id"] for q in interrupt.metadata["agentHost"]["request"]["questions"]] == ["colour", "count", "gift"]

        # A new message meanwhile is refused, saying how to answer and how to cancel instead.
        blocked = await run(running.http_url, body("thread-ask", "run-2", [*history, said("m2", "hello?")]))
        assert types(blocked) == ["RUN_STARTED", "RUN_ERROR"] and blocked[-1]["code"] == "inputPending"
        assert interrupt.id in blocked[-1]["message"] and '"cancel": true' in blocked[-1]["message"]

        # An answer of the wrong type is refused naming the question; the interrupt stays open.
        wrong = await run(running.http_url, body("thread-ask", "run-3", history, resume=[
            ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload={"answers": {"colour": "green"}})]))
        assert wrong[-1]["code"] == "resumeInvalid" and "'colour'" in wrong[-1]["message"] and "red" in wrong[-1]["message"]

        resumed = await run(running.http_url, body("thread-ask", "run-4", history, resume=[
            ResumeEntry(interrupt_id=interrupt.id, status="resolved",
                        payload={"answers": {"colour": "blue", "count": 2, "gift": True}})]))
        assert finished(resumed).outcome is None or finished(resumed).outcome.type == "success"
        result = next(e for e in resumed if e["type"] == "TOOL_CALL_RESULT")
        assert "Which colour? → blue" in result["content"] and "How many? → 2" in result["content"]
        assert text_of(resumed) == "Two blue ones, wrapped."
        seen = tool_results(provider, 1)[0]
        assert "Which colour? → blue" in seen.text and "Wrapped as a gift? → True" in seen.text


async def test_a_declined_or_cancelled_question_reaches_the_tool(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("ask_user", {"questions": QUESTIONS[:1]})), reply("Fine, no socks."),
                                 call_tools(("ask_user", {"questions": QUESTIONS[:1]})), reply("Dismissed.")])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, _):
        first = finished(await run(running.http_url, body("thread-no", "run-1", [said("m1", "socks?")], agent="scripted")))
        [interrupt] = first.outcome.interrupts
        declined = await run(running.http_url, body("thread-no", "run-2", [said("m1", "socks?")], resume=[
            ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload={"response": "decline"})]))
        assert text_of(declined) == "Fine, no socks."
        assert "declined to answer" in tool_results(provider, 1)[0].text

        second = finished(await run(running.http_url, body("thread-no", "run-3", [said("m1", "socks?"), said("m2", "again")])))
        [again] = second.outcome.interrupts
        dismissed = await run(running.http_url, body("thread-no", "run-4", [said("m1", "socks?"), said("m2", "again")], resume=[
            ResumeEntry(interrupt_id=again.id, status="cancelled")]))
        assert text_of(dismissed) == "Dismissed."
        assert "cancelled the question" in tool_results(provider, 3)[0].text


async def test_an_mcp_elicitation_is_an_interrupt_answered_by_the_resume(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([])
    config = mcp_config(tmp_path, {"sink": sink_server()}, tools={"enabled": True, "auto_approve": True})
    async with serving(config, frame_checker, [scripted_agent(provider)], versions=PROTOCOL_VERSIONS) as (running, client):
        # The thread's session is made by its first run; its tools come from the sink server.
        empty = await run(running.http_url, body("thread-mcp", "run-0", [], agent="scripted"))
        assert empty[-1]["type"] == "RUN_FINISHED"
        session = session_uri_for("thread-mcp", provider="scripted")
        await client.subscribe(session)
        names = await wait_tools(client, session, "sink", "ask_name")
        provider.add(call_tools((names["ask_name"], {})))
        provider.add(reply("Hello, Ada."))
        history = [said("m1", "who am I?")]
        first = finished(await asyncio.wait_for(run(running.http_url, body("thread-mcp", "run-1", history)), 30))
        [interrupt] = first.outcome.interrupts
        assert interrupt.id.startswith("ahp-input:mcp-elicit-") and interrupt.message == "Who are you?"
        schema = interrupt.response_schema["properties"]["answers"]["properties"]
        assert schema["age"]["type"] == "integer" and schema["colour"]["enum"] == ["red", "green", "blue"]
        resumed = await run(running.http_url, body("thread-mcp", "run-2", history, resume=[ResumeEntry(
            interrupt_id=interrupt.id, status="resolved",
            payload={"answers": {"name": "Ada", "age": 36, "colour": "green", "subscribe": True}})]))
        result = next(e for e in resumed if e["type"] == "TOOL_CALL_RESULT")
        assert "hello Ada (36, green, subscribe=True)" in result["content"]
        assert text_of(resumed) == "Hello, Ada." and resumed[-1]["type"] == "RUN_FINISHED"


async def test_a_run_asking_to_cancel_ends_a_stuck_turn_and_the_thread_takes_messages_again(tmp_path: Path, frame_checker: FrameChecker) -> None:
    # A turn whose tool runs for a long time, whose front end went away without cancelling it: the
    # thread refused every new message, and AG-UI had no way to end that turn.
    provider = ScriptedProvider([call_tools(("shell", {"command": "sleep 60"})), reply("Back again.")])
    config = tools_config(tmp_path, auto_approve=True)
    async with serving(config, frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, watcher):
        history = [said("m1", "wait a minute")]
        async with open_run(running.http_url, body("thread-stuck", "run-1", history, agent="scripted")) as response:
            async for line in response.aiter_lines():
                if '"TOOL_CALL_END"' in line:
                    break  # the front end goes away while the tool runs
        chat = default_chat_uri(session_uri_for("thread-stuck", provider="scripted"))
        await watcher.subscribe(chat)
        await watcher.wait_for(lambda m, e: any(p.get("kind") == "toolCall" and p["toolCall"]["status"] == "running"
                                                for p in ((watcher.state(chat) or {}).get("activeTurn") or {}).get("responseParts") or []))

        refused = await run(running.http_url, body("thread-stuck", "run-2", [*history, said("m2", "hello?")]))
        assert refused[-1]["type"] == "RUN_ERROR" and '"cancel": true' in refused[-1]["message"]

        cancelled = await run(running.http_url, body("thread-stuck", "run-3", history, cancel=True))
        outcome = finished(cancelled).outcome
        assert outcome is not None and outcome.type == "cancelled"
        await watcher.wait_for(lambda m, e: (watcher.state(chat) or {}).get("activeTurn") is None)
        assert watcher.state(chat)["turns"][-1]["state"] == "cancelled"

        again = await run(running.http_url, body("thread-stuck", "run-4", [*history, said("m2", "hello?")]))
        assert text_of(again) == "Back again." and again[-1]["type"] == "RUN_FINISHED"

        # With nothing running, a cancel just finishes.
        idle = await run(running.http_url, body("thread-stuck", "run-5", history, cancel=True))
        assert types(idle) == ["RUN_STARTED", "RUN_FINISHED"]


async def test_a_cancel_also_ends_a_turn_waiting_on_a_question(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("ask_user", {"questions": QUESTIONS[:1]})), reply("Next one.")])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, watcher):
        history = [said("m1", "ask me")]
        first = finished(await run(running.http_url, body("thread-qc", "run-1", history, agent="scripted")))
        [interrupt] = first.outcome.interrupts
        # The official client must answer every open interrupt in the next run: it cancels them.
        cancelled = await run(running.http_url, body("thread-qc", "run-2", history, cancel=True,
                                                     resume=[ResumeEntry(interrupt_id=interrupt.id, status="cancelled")]))
        assert finished(cancelled).outcome.type == "cancelled"
        session = session_uri_for("thread-qc", provider="scripted")
        await watcher.subscribe(session)
        await watcher.subscribe(default_chat_uri(session))
        await watcher.wait_for(lambda m, e: (watcher.state(default_chat_uri(session)) or {}).get("activeTurn") is None
                               and not (watcher.state(session) or {}).get("inputNeeded"))
        again = await run(running.http_url, body("thread-qc", "run-3", [*history, said("m2", "go on")]))
        assert text_of(again) == "Next one."


async def test_a_sub_agents_confirmation_and_question_are_interrupts_of_the_thread(tmp_path: Path, frame_checker: FrameChecker) -> None:
    # The sub-agent runs in a chat of its own; the AG-UI thread shows only the calling chat, whose
    # task call waits on it. What the sub-agent waits for still ends the run as an interrupt.
    provider = ScriptedProvider([
        call_tools(("task", {"description": "Look around", "prompt": "Say what echo prints."})),
        call_tools(("shell", {"command": "echo from-the-sub-agent"})),
        call_tools(("ask_user", {"questions": QUESTIONS[:1]})),
        reply("Echo printed it; the user wants blue."),
        reply("The sub-agent is done."),
    ])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, _):
        history = [said("m1", "delegate it")]
        first = finished(await asyncio.wait_for(run(running.http_url, body("thread-sub", "run-1", history, agent="scripted")), 30))
        [confirm] = first.outcome.interrupts
        chat = confirm.metadata["agentHost"]["chat"]
        assert chat.startswith("ahp-chat://subagent/") and confirm.id == f"ahp-confirm:{confirm.tool_call_id}@{chat}"
        assert confirm.reason == "tool_approval" and "echo from-the-sub-agent" in confirm.message

        second = finished(await asyncio.wait_for(run(running.http_url, body("thread-sub", "run-2", history, resume=[
            ResumeEntry(interrupt_id=confirm.id, status="resolved", payload={"approved": True})])), 30))
        [question] = second.outcome.interrupts
        assert question.id.startswith("ahp-input:ask-") and question.id.endswith(f"@{chat}")

        third = await asyncio.wait_for(run(running.http_url, body("thread-sub", "run-3", history, resume=[
            ResumeEntry(interrupt_id=question.id, status="resolved", payload={"answers": {"colour": "blue"}})])), 30)
        assert text_of(third) == "The sub-agent is done." and third[-1]["type"] == "RUN_FINISHED"
        result = next(e for e in third if e["type"] == "TOOL_CALL_RESULT")
        assert "Echo printed it; the user wants blue." in result["content"]
        sub_results = tool_results(provider, 3)
        assert "from-the-sub-agent" in tool_results(provider, 2)[0].text and "Which colour? → blue" in sub_results[0].text
