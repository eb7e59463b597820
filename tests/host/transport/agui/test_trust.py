"""Workspace trust on AG-UI, over real HTTP with the official AG-UI types: a thread whose session
opens a hostile folder (hooks and an ``.mcp.json`` server writing marker files) gets the trust
question as an interrupt before its first message runs; "don't trust" and a cancel let the message
run with nothing of the folder, "trust" runs the folder's hooks for it. The official
``@ag-ui/client`` does the same in ``test_node_client.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ag_ui.core import ResumeEntry

from ahp.workspace_trust import CONFIG_KEY, DONT_TRUST, QUESTION_ID, TRUST_FOLDER, TRUST_SESSION
from client import PROTOCOL_VERSIONS
from providers import ScriptedProvider
from providers.scripted import reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import serving
from tests.host.runtime.test_trust import agent, config, events, hostile_folder, mcp_starts

from .agui_client import run, text_of, types
from .test_questions import body, finished, said


def trust_answer(interrupt_id: str, choice: str) -> list[ResumeEntry]:
    return [ResumeEntry(interrupt_id=interrupt_id, status="resolved", payload={"answers": {QUESTION_ID: choice}})]


async def test_the_trust_question_is_an_interrupt_answered_before_the_threads_first_message(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    folder, markers = hostile_folder(tmp_path)
    provider = ScriptedProvider([reply("Hello without the folder."), reply("Still without it."), reply("Dismissed, still here."),
                                 reply("Hello with it.")])
    async with serving(config(tmp_path, folder), frame_checker, [agent(provider)], versions=PROTOCOL_VERSIONS) as (running, _):
        url = running.http_url
        history = [said("m1", "hello untrusted")]
        first = await run(url, body("no", "run-1", history, agent="scripted"))
        outcome = finished(first).outcome
        assert outcome is not None and outcome.type == "interrupt", first
        [interrupt] = outcome.interrupts
        assert interrupt.id.startswith("ahp-input:workspace-trust:") and interrupt.reason == "input_required"
        assert f"Do you trust the files in {folder.resolve()}?" in interrupt.message
        assert "SessionStart" in interrupt.message and "MCP server evil" in interrupt.message
        choices = interrupt.response_schema["properties"]["answers"]["properties"][QUESTION_ID]
        assert choices["enum"] == [TRUST_FOLDER, TRUST_SESSION, DONT_TRUST]
        assert "TEXT_MESSAGE_START" not in types(first) and not provider.requests

        # The message is not run before the answer, however often it is sent.
        again = await run(url, body("no", "run-2", history))
        assert [i.id for i in finished(again).outcome.interrupts] == [interrupt.id]
        # An answer that is not one of the choices is refused, naming them; the question stays open.
        wrong = await run(url, body("no", "run-3", history, resume=trust_answer(interrupt.id, "maybe")))
        assert wrong[-1]["type"] == "RUN_ERROR" and wrong[-1]["code"] == "resumeInvalid" and TRUST_FOLDER in wrong[-1]["message"]
        assert not provider.requests

        # "Don't trust": the message runs now, and nothing of the folder with it.
        declined = await run(url, body("no", "run-4", history, resume=trust_answer(interrupt.id, DONT_TRUST)))
        assert finished(declined).outcome is None or finished(declined).outcome.type == "success"
        assert text_of(declined) == "Hello without the folder."
        assert events(markers) == [] and mcp_starts(markers) == 0
        assert not (markers / "settings.log").exists()
        # The thread is not asked again; its next messages run without the folder too.
        more = await run(url, body("no", "run-5", [*history, said("m2", "more")]))
        assert text_of(more) == "Still without it." and events(markers) == []

        # A cancel run dismisses the question of a new thread: not trusted, and its message runs next.
        asked = await run(url, body("dismissed", "run-6", [said("d1", "hello dismissed")], agent="scripted"))
        [dismissed] = finished(asked).outcome.interrupts
        cancelled = await run(url, body("dismissed", "run-7", [said("d1", "hello dismissed")], cancel=True,
                                        resume=[ResumeEntry(interrupt_id=dismissed.id, status="cancelled")]))
        assert types(cancelled) == ["RUN_STARTED", "RUN_FINISHED"]
        after = await run(url, body("dismissed", "run-8", [said("d1", "hello dismissed")]))
        assert text_of(after) == "Dismissed, still here."
        assert events(markers) == [] and mcp_starts(markers) == 0

        # "Trust this folder" in a third thread: the folder's hooks run, before its message's turn.
        asked = await run(url, body("yes", "run-9", [said("y1", "hello trusted")], agent="scripted"))
        [trust] = finished(asked).outcome.interrupts
        assert events(markers) == []
        trusted = await run(url, body("yes", "run-10", [said("y1", "hello trusted")], resume=trust_answer(trust.id, TRUST_FOLDER)))
        assert text_of(trusted) == "Hello with it."
        assert running.host.store.state("ahp-root://")["config"]["values"][CONFIG_KEY] == [str(folder.resolve())]
        ran = hook_payloads(markers)
        [prompt] = [p for p in ran if p["hook_event_name"] == "UserPromptSubmit"]
        assert prompt["prompt"] == "hello trusted"
        # Its session's SessionStart ran before its prompt's hook (the other sessions in the folder,
        # released by the same answer, run theirs meanwhile).
        start = next(p for p in ran if p["hook_event_name"] == "SessionStart" and p["session_id"] == prompt["session_id"])
        assert ran.index(start) < ran.index(prompt)


def hook_payloads(markers: Path) -> list[dict[str, Any]]:
    """Every payload in the hooks' log, in order (hooks of several sessions that run at once
    may write theirs on one line)."""
    text = (markers / "hooks.log").read_text()
    decoder, found, at = json.JSONDecoder(), [], text.find("{")
    while at >= 0:
        payload, end = decoder.raw_decode(text, at)
        found.append(payload)
        at = text.find("{", end)
    return found


async def test_a_thread_restored_at_host_start_is_asked_again_before_its_next_message_runs(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    folder, markers = hostile_folder(tmp_path)
    history = [said("m1", "hello")]
    async with serving(config(tmp_path, folder), frame_checker, [agent(provider := ScriptedProvider([reply("First.")]))],
                       versions=PROTOCOL_VERSIONS) as (running, _):
        [interrupt] = finished(await run(running.http_url, body("back", "run-1", history, agent="scripted"))).outcome.interrupts
        declined = await run(running.http_url, body("back", "run-2", history, resume=trust_answer(interrupt.id, DONT_TRUST)))
        assert text_of(declined) == "First."

    provider = ScriptedProvider([reply("After the restart.")])
    async with serving(config(tmp_path, folder), frame_checker, [agent(provider)], versions=PROTOCOL_VERSIONS) as (running, _):
        history = [*history, said("m2", "still there?")]
        # The thread's first run after the restart resumes its session: the question comes first,
        # outside a turn, and the message waits for it.
        asked = await run(running.http_url, body("back", "run-3", history))
        outcome = finished(asked).outcome
        assert outcome is not None and outcome.type == "interrupt", asked
        [again] = outcome.interrupts
        assert again.id.startswith("ahp-input:workspace-trust:") and again.id != interrupt.id
        assert not provider.requests and events(markers) == []
        resumed = await run(running.http_url, body("back", "run-4", history, resume=trust_answer(again.id, TRUST_SESSION)))
        assert text_of(resumed) == "After the restart."
        starts = [p for p in hook_payloads(markers) if p["hook_event_name"] == "SessionStart"]
        assert [p["source"] for p in starts] == ["resume"]
