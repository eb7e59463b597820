"""A server tool that needs confirmation in an AG-UI run, over real HTTP: the run ends with an
AG-UI interrupt, the next run's ``resume`` answers it and continues the same turn; a new message
meanwhile is refused saying how to answer; a cancelled resume denies the call and frees the
thread; an interrupt answered by an AHP client meanwhile is moot, and the front end's resume just
joins the thread."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS
from host.transport.agui import session_uri_for
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import serving
from tests.host.runtime.tools._support import scripted, tools_config, wait_pending

from .agui_client import run, run_input, text_of, types, user


def interrupt_of(events: list[dict[str, Any]]) -> dict[str, Any]:
    finished = events[-1]
    assert finished["type"] == "RUN_FINISHED", events[-1]
    assert finished["outcome"]["type"] == "interrupt"
    [interrupt] = finished["outcome"]["interrupts"]
    return interrupt


def resume(interrupt_id: str, status: str = "resolved", **payload: Any) -> list[dict[str, Any]]:
    entry: dict[str, Any] = {"interruptId": interrupt_id, "status": status}
    if payload:
        entry["payload"] = payload
    return [entry]


async def test_a_confirmation_is_an_interrupt_and_the_resumed_run_finishes_the_turn(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("shell", {"command": "echo approved-output"})), reply("It printed it.")])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, watcher):
        history = [user("m1", "print something")]
        first = await run(running.http_url, run_input("thread-confirm", "run-1", history, forwardedProps={"agent": "scripted"}))
        interrupt = interrupt_of(first)
        chat = default_chat_uri(session_uri_for("thread-confirm", provider="scripted"))
        await watcher.subscribe(chat)
        pending = await wait_pending(watcher, chat)  # an AHP client sees the same waiting call
        assert interrupt["id"] == f"ahp-confirm:{pending['toolCallId']}"
        assert interrupt["toolCallId"] == pending["toolCallId"] and interrupt["reason"] == "tool_approval"
        assert "echo approved-output" in interrupt["message"]
        assert [o["id"] for o in interrupt["metadata"]["agentHost"]["options"]][0] == "allow-once"
        assert "TOOL_CALL_RESULT" not in types(first)

        second = await run(running.http_url, run_input("thread-confirm", "run-2", history, resume=resume(interrupt["id"], approved=True)))
        assert types(second)[0] == "RUN_STARTED" and second[-1]["type"] == "RUN_FINISHED"
        assert second[-1].get("outcome", {"type": "success"})["type"] == "success"
        result = next(e for e in second if e["type"] == "TOOL_CALL_RESULT")
        assert result["toolCallId"] == interrupt["toolCallId"] and "approved-output" in result["content"]
        assert text_of(second) == "It printed it."
        await watcher.wait_for(lambda m, e: (watcher.state(chat) or {}).get("activeTurn") is None
                               and len(watcher.state(chat)["turns"]) == 1)
        [call] = [p["toolCall"] for p in watcher.state(chat)["turns"][0]["responseParts"] if p["kind"] == "toolCall"]
        assert (call["status"], call["confirmed"]) == ("completed", "user-action")


async def test_a_new_message_is_refused_until_answered_and_a_cancelled_resume_frees_the_thread(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("shell", {"command": "rm -rf build"})), reply("Understood, I left it."), reply("Hello again.")])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, _):
        history = [user("m1", "clean up")]
        interrupt = interrupt_of(await run(running.http_url, run_input("thread-deny", "run-1", history, forwardedProps={"agent": "scripted"})))

        blocked = await run(running.http_url, run_input("thread-deny", "run-2", [*history, user("m2", "hello?")]))
        assert types(blocked) == ["RUN_STARTED", "RUN_ERROR"]
        assert blocked[-1]["code"] == "confirmationPending"
        assert interrupt["id"] in blocked[-1]["message"] and "resume" in blocked[-1]["message"]

        wrong = await run(running.http_url, run_input("thread-deny", "run-3", history, resume=resume("ahp-confirm:nope", approved=True)))
        assert types(wrong) == ["RUN_STARTED", "RUN_ERROR"] and wrong[-1]["code"] == "resumeMismatch"
        assert "ahp-confirm:nope" in wrong[-1]["message"] and interrupt["id"] in wrong[-1]["message"]

        unclear = await run(running.http_url, run_input("thread-deny", "run-4", history, resume=resume(interrupt["id"], maybe=True)))
        assert unclear[-1]["code"] == "resumeInvalid" and "approved" in unclear[-1]["message"]

        denied = await run(running.http_url, run_input("thread-deny", "run-5", history, resume=resume(interrupt["id"], "cancelled")))
        result = next(e for e in denied if e["type"] == "TOOL_CALL_RESULT")
        assert result["toolCallId"] == interrupt["toolCallId"] and "dismissed" in result["content"]
        assert text_of(denied) == "Understood, I left it." and denied[-1]["type"] == "RUN_FINISHED"
        assert not (tmp_path / "build").exists()

        again = await run(running.http_url, run_input("thread-deny", "run-6", [*history, user("m2", "hello?")]))
        assert text_of(again) == "Hello again." and again[-1]["type"] == "RUN_FINISHED"


async def test_an_interrupt_answered_by_an_ahp_client_makes_the_resume_a_join(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("shell", {"command": "echo from-ahp"})), reply("Done.")])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, watcher):
        history = [user("m1", "go")]
        interrupt = interrupt_of(await run(running.http_url, run_input("thread-both", "run-1", history, forwardedProps={"agent": "scripted"})))
        chat = default_chat_uri(session_uri_for("thread-both", provider="scripted"))
        await watcher.subscribe(chat)
        call = await wait_pending(watcher, chat)
        watcher.dispatch(chat, {"type": "chat/toolCallConfirmed", "turnId": call["turnId"], "toolCallId": call["toolCallId"],
                                "approved": True, "confirmed": "user-action", "selectedOptionId": "allow-once"})
        await watcher.wait_for(lambda m, e: (watcher.state(chat) or {}).get("activeTurn") is None)
        joined = await run(running.http_url, run_input("thread-both", "run-2", history, resume=resume(interrupt["id"], approved=True)))
        assert types(joined) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
        messages = joined[1]["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
        assert messages[1]["toolCalls"][0]["id"] == interrupt["toolCallId"]
        assert "from-ahp" in messages[2]["content"] and messages[3]["content"] == "Done."
