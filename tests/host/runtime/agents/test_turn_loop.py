"""The provider turn loop end to end (real host, real client) with the scripted provider:
tools, cancellation, steering and queued messages, model changes, titles, attachments, memory."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

from client import AhpClient
from host.runtime.agents import ModelSpec, ProviderAgent, StaticSource, TurnSettings
from providers import (
    AssistantMessage,
    PartDelta,
    PartEnd,
    PartStart,
    ReasoningPart,
    ScriptedProvider,
    ToolResultsMessage,
    UserMessage,
)
from providers.scripted import Pause, Script, call_tools, finish, reply, text
from tests.conftest import FrameChecker
from tools.base import Tool, ToolContext, success_result

from .harness import Recorder, config_for, idle, ready_session, run_turn, serving


class EchoTool(Tool):
    name = "echo"
    title = "Echo"
    description = "Returns its text."
    input_schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        return success_result(f"Echoed {args['text']}", [{"type": "text", "text": args["text"].upper()}])


class BlockingTool(Tool):
    name = "block"
    title = "Block"
    description = "Waits until cancelled."
    input_schema = {"type": "object", "properties": {}}

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return success_result("never")


def agent(provider: ScriptedProvider, *tools: Tool, title: str = "first-words", vision: bool = False) -> ProviderAgent:
    return ProviderAgent(
        "scripted",
        StaticSource(provider),
        display_name="Scripted",
        models=[ModelSpec("m1", vision=vision), ModelSpec("m2")],
        settings=TurnSettings(title=title),
        tools=tools,
    )


def first_part(state: dict | None) -> dict:
    parts = ((state or {}).get("activeTurn") or {}).get("responseParts") or [{}]
    return parts[0]


def user_texts(request) -> list[str]:
    return [m.text for m in request.messages if isinstance(m, UserMessage)]


async def test_a_tool_call_is_run_auto_approved_and_its_result_goes_back_to_the_model(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("echo", {"text": "hi"})), reply("The tool said HI.")])
    async with serving(config_for(tmp_path), frame_checker, [agent(provider, EchoTool())]) as (_, client):
        session = await ready_session(client)
        recorder = Recorder(client, session)
        turn = await run_turn(client, session, "use the tool")
        await idle(client, session)
    actions = [a for a in recorder.drain() if a["type"] not in ("session/activityChanged", "session/titleChanged")]
    assert [a["type"] for a in actions] == [
        "session/turnStarted",
        "session/toolCallStart",
        "session/toolCallDelta",
        "session/toolCallReady",
        "session/toolCallComplete",
        "session/responsePart",
        "session/delta",
        "session/turnComplete",
    ]
    ready = actions[3]
    assert ready["confirmed"] == "not-needed" and ready["toolInput"] == '{"text": "hi"}'
    assert ready["invocationMessage"] == "Run Echo"
    call = turn["responseParts"][0]["toolCall"]
    assert (call["status"], call["success"], call["content"]) == ("completed", True, [{"type": "text", "text": "HI"}])
    assert turn["responseParts"][1]["id"] != call["toolCallId"]
    [results] = [m for m in provider.requests[1].messages if isinstance(m, ToolResultsMessage)]
    assert [(r.tool_call_id, r.text, r.is_error) for r in results.results] == [("call_0", "HI", False)]


async def test_unknown_tools_and_bad_arguments_become_failed_results_not_errors(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("nope", {}), ("echo", "{not json")), reply("ok")])
    async with serving(config_for(tmp_path), frame_checker, [agent(provider, EchoTool())]) as (_, client):
        session = await ready_session(client)
        turn = await run_turn(client, session, "go")
    calls = [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]
    assert [(c["status"], c["success"], c["error"]["code"]) for c in calls] == [
        ("completed", False, "unknown_tool"),
        ("completed", False, "invalid_arguments"),
    ]
    assert turn["state"] == "complete"
    results = provider.requests[1].messages[-1]
    assert all(r.is_error for r in results.results)


async def test_cancel_stops_a_running_tool_at_once(tmp_path: Path, frame_checker: FrameChecker) -> None:
    blocking = BlockingTool()
    provider = ScriptedProvider([call_tools(("block", {}))])
    async with serving(config_for(tmp_path), frame_checker, [agent(provider, blocking)]) as (_, client):
        session = await ready_session(client)
        turn_id = client.send_message(session, "block")
        await asyncio.wait_for(blocking.started.wait(), 10)
        await client.wait_for(lambda m, e: client.state(session)["summary"].get("activity") == "Running Block")
        client.cancel_turn(session, turn_id)
        await asyncio.wait_for(blocking.cancelled.wait(), 10)
        await idle(client, session)
        turn = client.state(session)["turns"][-1]
    assert turn["state"] == "cancelled"
    assert turn["responseParts"][0]["toolCall"]["status"] == "cancelled"


def hello_then_stalled() -> Script:
    """A model call that streams "Hello", then waits for a gate never opened (the rest unsent)."""
    return Script((*text(["Hello", " never"], index=0)[:2], Pause(event=asyncio.Event()), *text(["x"], index=0)[2:], *finish()))


async def cancelled_after_hello(client: AhpClient) -> str:
    """A new session whose turn (on ``hello_then_stalled``) is cancelled once "Hello" streamed; the session."""
    session = await ready_session(client)
    turn_id = client.send_message(session, "talk")
    await client.wait_for(lambda m, e: first_part(client.state(session)).get("content") == "Hello")
    client.cancel_turn(session, turn_id)
    await idle(client, session)
    return session


async def test_cancel_mid_stream_stops_the_provider_stream(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([hello_then_stalled()])
    async with serving(config_for(tmp_path), frame_checker, [agent(provider)]) as (_, client):
        session = await cancelled_after_hello(client)
        turn = client.state(session)["turns"][-1]
    assert turn["state"] == "cancelled"
    assert turn["responseParts"][0]["content"] == "Hello"


async def test_a_steering_message_is_taken_in_at_the_next_model_call(tmp_path: Path, frame_checker: FrameChecker) -> None:
    gate = asyncio.Event()
    first = call_tools(("echo", {"text": "a"}))
    provider = ScriptedProvider([Script((Pause(event=gate), *first.steps)), reply("steered")])
    async with serving(config_for(tmp_path), frame_checker, [agent(provider, EchoTool())]) as (_, client):
        session = await ready_session(client)
        recorder = Recorder(client, session)
        client.send_message(session, "start")
        await client.wait_for(lambda m, e: (client.state(session) or {}).get("summary", {}).get("activity") == "Waiting for m1")
        seq = client.dispatch(session, {"type": "session/pendingMessageSet", "kind": "steering", "id": "s1", "userMessage": {"text": "also do B"}})
        await client.outcome(seq)  # the host has it
        gate.set()
        await client.wait_for(lambda m, e: len(client.state(session).get("turns") or []) == 1)
    removed = [a for a in recorder.drain() if a["type"] == "session/pendingMessageRemoved"]
    assert removed == [{"type": "session/pendingMessageRemoved", "kind": "steering", "id": "s1"}]
    assert "also do B" not in " ".join(user_texts(provider.requests[0]))
    assert user_texts(provider.requests[1])[-1].endswith("also do B")
    assert "steeringMessage" not in client.state(session)


async def test_queued_messages_start_new_turns_in_order_and_a_model_change_applies_from_the_next_turn(
    tmp_path: Path, frame_checker: FrameChecker
) -> None:
    gate = asyncio.Event()
    provider = ScriptedProvider([Script((Pause(event=gate), *reply("one").steps)), reply("two"), reply("three")])
    async with serving(config_for(tmp_path), frame_checker, [agent(provider)]) as (_, client):
        session = await ready_session(client, model="m1")
        client.send_message(session, "first")
        await client.wait_for(lambda m, e: (client.state(session) or {}).get("summary", {}).get("activity") == "Waiting for m1")
        client.dispatch(session, {"type": "session/modelChanged", "model": {"id": "m2"}})
        for n, words in enumerate(("second", "third")):
            seq = client.dispatch(session, {"type": "session/pendingMessageSet", "kind": "queued", "id": f"q{n}", "userMessage": {"text": words}})
        await client.outcome(seq)
        gate.set()
        await client.wait_for(lambda m, e: len(client.state(session).get("turns") or []) == 3)
        turns = client.state(session)["turns"]
    assert [t["userMessage"]["text"] for t in turns] == ["first", "second", "third"]
    assert [t["responseParts"][0]["content"] for t in turns] == ["one", "two", "three"]
    assert [r.model for r in provider.requests] == ["m1", "m2", "m2"]
    assert user_texts(provider.requests[2]) == ["first", "second", "third"]  # memory across turns


async def test_the_title_comes_from_the_model_after_the_first_turn(tmp_path: Path, frame_checker: FrameChecker) -> None:
    def respond(request):
        if request.system and "Write a title" in request.system:
            return reply("Primes containing 79").steps
        return reply("3").steps

    provider = ScriptedProvider(respond=respond)
    async with serving(config_for(tmp_path), frame_checker, [agent(provider, title="model")]) as (_, client):
        session = await ready_session(client)
        await run_turn(client, session, "How many primes below 400 contain 79?")
        await client.wait_for(lambda m, e: client.state(session)["summary"]["title"] == "Primes containing 79")
        await run_turn(client, session, "and below 1000?")
    assert sum(1 for r in provider.requests if r.system and "Write a title" in r.system) == 1


async def test_a_title_set_by_a_client_is_never_overwritten(tmp_path: Path, frame_checker: FrameChecker) -> None:
    gate = asyncio.Event()
    provider = ScriptedProvider([Script((Pause(event=gate), *reply("answer").steps))])
    async with serving(config_for(tmp_path), frame_checker, [agent(provider)]) as (running, client):
        session = await ready_session(client)
        client.send_message(session, "some long first message here")
        await client.outcome(client.dispatch(session, {"type": "session/titleChanged", "title": "My name"}))
        gate.set()
        await client.wait_for(lambda m, e: len(client.state(session).get("turns") or []) == 1)
        await idle(client, session)
        await running.host.agents["scripted"].aclose()  # waits for any background title work
        assert client.state(session)["summary"]["title"] == "My name"


async def test_without_a_model_title_the_first_words_of_the_message_are_used(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([reply("ok")])
    async with serving(config_for(tmp_path), frame_checker, [agent(provider)]) as (_, client):
        session = await ready_session(client)
        await run_turn(client, session, "please   refactor the parser module into smaller pieces today")
        await client.wait_for(lambda m, e: client.state(session)["summary"]["title"] != "New Session")
        assert client.state(session)["summary"]["title"] == "please refactor the parser module into"


async def test_attachments_are_read_refused_or_described(tmp_path: Path, frame_checker: FrameChecker) -> None:
    (tmp_path / "notes.txt").write_text("line one\nline two\n")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("secret")
    image = base64.b64encode(b"\x89PNG fake bytes").decode()
    attachments = [
        {"type": "resource", "label": "notes.txt", "uri": (tmp_path / "notes.txt").as_uri()},
        {"type": "resource", "label": "outside", "uri": outside.as_uri()},
        {"type": "simple", "label": "sym", "modelRepresentation": "def parse(): ..."},
        {"type": "embeddedResource", "label": "shot.png", "data": image, "contentType": "image/png"},
    ]
    provider = ScriptedProvider([reply("seen"), reply("seen again")])
    async with serving(config_for(tmp_path), frame_checker, [agent(provider, vision=False)]) as (_, client):
        session = await ready_session(client, model="m1")
        turn = await run_turn(client, session, "look", attachments)
        client.dispatch(session, {"type": "session/modelChanged", "model": {"id": "m1"}})
    [message] = provider.requests[0].messages
    assert "line one\nline two" in message.text
    assert "secret" not in message.text and "outside the session's working directory" in message.text
    assert "def parse(): ..." in message.text
    assert "cannot see images" in message.text and len(message.content) == 1
    notes = [p["content"] for p in turn["responseParts"] if p["kind"] == "systemNotification"]
    assert len(notes) == 2


async def test_images_go_to_vision_models(tmp_path: Path, frame_checker: FrameChecker) -> None:
    image = base64.b64encode(b"\x89PNG fake bytes").decode()
    provider = ScriptedProvider([reply("a cat")])
    async with serving(config_for(tmp_path), frame_checker, [agent(provider, vision=True)]) as (_, client):
        session = await ready_session(client, model="m1")
        await run_turn(client, session, "what is this", [{"type": "embeddedResource", "label": "cat.png", "data": image, "contentType": "image/png"}])
    [message] = provider.requests[0].messages
    assert [c.kind for c in message.content] == ["text", "image"]
    assert message.content[1].data == image


async def test_native_payloads_are_sent_back_after_a_host_restart(tmp_path: Path, frame_checker: FrameChecker) -> None:
    native = {"type": "thinking", "thinking": "hmm", "signature": "sig-123"}
    first = Script((PartStart(index=0, part_kind="reasoning"), PartDelta(index=0, part_kind="reasoning", content="hmm"),
                    PartEnd(index=0, part_kind="reasoning", native=native), *text("answer", index=1), *finish()))
    config = config_for(tmp_path)
    provider = ScriptedProvider([first])
    async with serving(config, frame_checker, [agent(provider)]) as (_, client):
        session = await ready_session(client)
        await run_turn(client, session, "think")
    restarted = ScriptedProvider([reply("again")])
    async with serving(config, frame_checker, [agent(restarted)]) as (_, client):
        await client.subscribe(session)
        await run_turn(client, session, "more")
    history = restarted.requests[0].messages
    assert isinstance(history[1], AssistantMessage)
    reasoning = history[1].parts[0]
    assert isinstance(reasoning, ReasoningPart) and reasoning.native == native
    assert [m.text for m in history if isinstance(m, UserMessage)] == ["think", "more"]


async def test_a_fork_keeps_the_native_transcript_through_the_fork_turn(tmp_path: Path, frame_checker: FrameChecker) -> None:
    native = {"type": "reasoning", "id": "rs_1", "summary": []}
    first = Script((PartStart(index=0, part_kind="reasoning"), PartEnd(index=0, part_kind="reasoning", native=native), *text("a1", index=1), *finish()))
    provider = ScriptedProvider([first, reply("a2"), reply("forked")])
    async with serving(config_for(tmp_path), frame_checker, [agent(provider)]) as (_, client):
        session = await ready_session(client)
        turn1 = await run_turn(client, session, "q1")
        await run_turn(client, session, "q2")
        fork = await ready_session(client, fork={"session": session, "turnId": turn1["id"]})
        await run_turn(client, fork, "q3")
    history = provider.requests[2].messages
    assert [m.text for m in history if isinstance(m, UserMessage)] == ["q1", "q3"]
    assert history[1].parts[0].native == native


class DenyingApprover:
    """Stands in for the confirmation flow: asks (no ``confirmed``), then the user says no."""

    async def approve(self, request, ctx):
        from host.runtime.agents import Approval

        ctx.emit({"type": "session/toolCallReady", "toolCallId": request.tool_call_id, "toolInput": request.arguments, **request.ready_fields})
        ctx.emit({"type": "session/toolCallConfirmed", "toolCallId": request.tool_call_id, "approved": False, "confirmed": "user-action"})
        return Approval(approved=False, reason="The user said no.")


async def test_a_denied_call_does_not_run_and_the_model_is_told(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("echo", {"text": "x"})), reply("fine")])
    denying = ProviderAgent("scripted", StaticSource(provider), display_name="S", models=[ModelSpec("m1")],
                            settings=TurnSettings(title="first-words"), tools=[EchoTool()], approver=DenyingApprover())
    async with serving(config_for(tmp_path), frame_checker, [denying]) as (_, client):
        session = await ready_session(client)
        turn = await run_turn(client, session, "try")
    call = turn["responseParts"][0]["toolCall"]
    assert call["status"] == "cancelled" and "content" not in call
    [result] = provider.requests[1].messages[-1].results
    assert (result.text, result.is_error) == ("The user said no.", True)


async def test_a_steering_message_is_shown_in_the_turn_and_survives_a_rebuild_without_transcript(
    tmp_path: Path, frame_checker: FrameChecker
) -> None:
    gate = asyncio.Event()
    first = call_tools(("echo", {"text": "a"}))
    provider = ScriptedProvider([Script((Pause(event=gate), *first.steps)), reply("steered"), reply("next")])
    scripted = agent(provider, EchoTool())
    async with serving(config_for(tmp_path), frame_checker, [scripted]) as (_, client):
        session = await ready_session(client)
        client.send_message(session, "start")
        await client.wait_for(lambda m, e: (client.state(session) or {}).get("summary", {}).get("activity") == "Waiting for m1")
        seq = client.dispatch(session, {"type": "session/pendingMessageSet", "kind": "steering", "id": "s1", "userMessage": {"text": "also do B"}})
        await client.outcome(seq)
        gate.set()
        await client.wait_for(lambda m, e: len(client.state(session).get("turns") or []) == 1)
        parts = client.state(session)["turns"][0]["responseParts"]
        scripted.transcripts.forget(session)  # the next turn must rebuild this one from the AHP state alone
        await run_turn(client, session, "and now?")
    assert [p["kind"] for p in parts] == ["toolCall", "systemNotification", "markdown"]
    assert parts[1]["content"] == "Steering: also do B"
    rebuilt = provider.requests[2].messages
    roles = [m.role for m in rebuilt]
    assert roles == ["user", "assistant", "tool", "user", "assistant", "user"]
    assert [m.text for m in rebuilt if isinstance(m, UserMessage)] == ["start", "also do B", "and now?"]


async def test_text_streamed_before_a_cancel_is_what_the_model_sees_next_turn(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([hello_then_stalled(), reply("again")])
    async with serving(config_for(tmp_path), frame_checker, [agent(provider)]) as (_, client):
        session = await cancelled_after_hello(client)
        await run_turn(client, session, "go on")
    history = provider.requests[1].messages
    assert [m.role for m in history] == ["user", "assistant", "user"]
    assert isinstance(history[1], AssistantMessage) and history[1].text == "Hello"


async def test_a_steering_message_sent_after_the_last_model_call_runs_next_ahead_of_the_queue(
    tmp_path: Path, frame_checker: FrameChecker
) -> None:
    # The turn's only model call is under way (it will make no further call), a message is queued,
    # then a steering message arrives: it is not held back behind the user's next message.
    gate = asyncio.Event()
    provider = ScriptedProvider([Script((Pause(event=gate), *reply("one").steps)), reply("steered"), reply("queued")])
    async with serving(config_for(tmp_path), frame_checker, [agent(provider)]) as (_, client):
        session = await ready_session(client)
        client.send_message(session, "first")
        await client.wait_for(lambda m, e: (client.state(session) or {}).get("summary", {}).get("activity") == "Waiting for m1")
        client.dispatch(session, {"type": "session/pendingMessageSet", "kind": "queued", "id": "q1", "userMessage": {"text": "later"}})
        seq = client.dispatch(session, {"type": "session/pendingMessageSet", "kind": "steering", "id": "s1", "userMessage": {"text": "also do B"}})
        await client.outcome(seq)
        gate.set()
        await client.wait_for(lambda m, e: len(client.state(session).get("turns") or []) == 3)
        await idle(client, session)
        turns = client.state(session)["turns"]
        state = client.state(session)
    assert [t["userMessage"]["text"] for t in turns] == ["first", "also do B", "later"]
    assert [p["content"] for p in turns[1]["responseParts"] if p["kind"] == "systemNotification"] == [
        "This steering message arrived after the previous turn had made its last model call, so it runs as its own turn."
    ]
    assert "steeringMessage" not in state and not state.get("queuedMessages")


async def test_a_steering_message_sent_while_idle_starts_a_turn(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([reply("ok")])
    async with serving(config_for(tmp_path), frame_checker, [agent(provider)]) as (_, client):
        session = await ready_session(client)
        client.dispatch(session, {"type": "session/pendingMessageSet", "kind": "steering", "id": "s1", "userMessage": {"text": "hello?"}})
        await client.wait_for(lambda m, e: len(client.state(session).get("turns") or []) == 1)
        turn, = client.state(session)["turns"]
    assert turn["userMessage"]["text"] == "hello?" and turn["state"] == "complete"
