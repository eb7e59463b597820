"""The official AG-UI client (``@ag-ui/client`` from npm, run by Node) drives threads against the
host: a server tool with reasoning and text, a front-end tool answered in a second run, and a
server tool needing confirmation answered through the client's interrupt/resume support, then
the thread joined by a second front end; an ``ask_user`` question answered the same way, the
next one cancelled with its turn; and the workspace-trust question of a hostile folder, answered
"don't trust" in one thread and "trust this folder" in another.

Skipped, saying why, when ``node``/``npm`` are missing or the package cannot be installed (the
install is the one step that needs the npm registry; the runs themselves are loopback only)."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from client import PROTOCOL_VERSIONS
from providers import ScriptedProvider
from providers.scripted import Script, call_tools, finish, reasoning, text
from tests.conftest import TOKEN, FrameChecker
from tests.host.runtime.agents.harness import config_for, serving

from .test_endpoint import scripted
from .test_runs import FrontEndToolAgent

SCRIPT = Path(__file__).with_name("node_thread.mjs")


async def _install_client(directory: Path) -> str | None:
    """Install @ag-ui/client into ``directory``; the reason it failed, or None."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node and npm are not both on PATH"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "package.json").write_text('{"name": "agui-host-test", "private": true, "type": "module"}')
    process = await asyncio.create_subprocess_exec(
        "npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "@ag-ui/client",
        cwd=directory, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), 60)
    except TimeoutError:
        process.kill()
        await process.wait()
        return "npm install @ag-ui/client did not finish within 60 s (no registry access?)"
    if process.returncode != 0:
        return "npm install @ag-ui/client failed: " + output.decode(errors="replace").strip().splitlines()[-1:][0]
    return None


RUNS_HELPER = Path(__file__).with_name("agui_runs.mjs")


async def _prepared(tmp_path: Path, script: Path) -> Path:
    """A directory with @ag-ui/client installed and ``script`` in it (the test is skipped, saying
    why, when that cannot be done)."""
    workdir = tmp_path / "node"
    reason = await _install_client(workdir)
    if reason is not None:
        pytest.skip(reason)
    shutil.copy(script, workdir / script.name)
    shutil.copy(RUNS_HELPER, workdir / RUNS_HELPER.name)
    return workdir


async def _run_script(workdir: Path, script: Path, running: Any, *extra: str) -> dict[str, Any]:
    """Run ``script`` under Node against ``running``'s /agui (``extra``: more arguments); the one
    JSON object it prints."""
    process = await asyncio.create_subprocess_exec(
        "node", script.name, f"{running.http_url}/agui", TOKEN, *extra,
        cwd=workdir, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, stderr.decode(errors="replace")[-2000:]
    return json.loads(stdout)


@pytest.mark.timeout(180)
async def test_the_official_ag_ui_client_runs_threads_against_the_host(tmp_path: Path, frame_checker: FrameChecker) -> None:
    workdir = tmp_path / "node"
    reason = await _install_client(workdir)
    if reason is not None:
        pytest.skip(reason)
    shutil.copy(SCRIPT, workdir / SCRIPT.name)
    provider = ScriptedProvider(
        [
            call_tools(("echo", {"text": "hi"})),
            Script((*reasoning("thinking", index=0), *text("The tool said HI.", index=1), *finish("stop", input_tokens=5, output_tokens=4))),
        ]
    )
    front_end = FrontEndToolAgent()
    async with serving(config_for(tmp_path), frame_checker, [scripted(provider), front_end], versions=PROTOCOL_VERSIONS) as (running, _):
        front_end.store = running.host.store
        process = await asyncio.create_subprocess_exec(
            "node", SCRIPT.name, f"{running.http_url}/agui", TOKEN,
            cwd=workdir, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, stderr.decode(errors="replace")[-2000:]
    seen = json.loads(stdout)

    server = seen["server"]
    assert server["types"][0] == "RUN_STARTED" and server["types"][-1] == "RUN_FINISHED"
    assert "TOOL_CALL_RESULT" in server["types"] and "REASONING_MESSAGE_CONTENT" in server["types"]
    roles = [m["role"] for m in server["messages"]]
    assert roles[0] == "user" and "tool" in roles and roles[-1] == "assistant"
    assert server["messages"][-1]["content"] == "The tool said HI."
    tool_message = next(m for m in server["messages"] if m["role"] == "tool")
    assert tool_message["content"] == "HI"

    front = seen["frontEnd"]
    assert front["first"][-4:] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"]
    assert front["call"]["function"]["name"] == "pick_color"
    assert front["second"][-1] == "RUN_FINISHED" and "TEXT_MESSAGE_CONTENT" in front["second"]
    assert front["messages"][-1] == {"id": front["messages"][-1]["id"], "role": "assistant", "content": "You picked teal."}


CONFIRM_SCRIPT = Path(__file__).with_name("node_confirm.mjs")


@pytest.mark.timeout(180)
async def test_the_official_ag_ui_client_answers_a_confirmation_interrupt_and_joins_a_thread(tmp_path: Path, frame_checker: FrameChecker) -> None:
    from tests.host.runtime.tools._support import scripted as tool_agent
    from tests.host.runtime.tools._support import tools_config

    workdir = await _prepared(tmp_path, CONFIRM_SCRIPT)
    provider = ScriptedProvider([call_tools(("shell", {"command": "echo node-approved"})), Script((*text("Printed.", index=0), *finish("stop")))])
    async with serving(tools_config(tmp_path), frame_checker, [tool_agent(provider)], versions=PROTOCOL_VERSIONS) as (running, _):
        seen = await _run_script(workdir, CONFIRM_SCRIPT, running)

    first = seen["first"]
    assert first["types"][-1] == "RUN_FINISHED" and first["outcome"] == "interrupt"
    [pending] = first["pending"]
    assert pending["id"].startswith("ahp-confirm:") and pending["reason"] == "tool_approval"
    assert seen["refusedByClient"] is not None and pending["id"] in seen["refusedByClient"]  # the client itself will not run on without an answer

    second = seen["second"]
    assert second["outcome"] == "success" and second["pending"] == []
    assert "TOOL_CALL_RESULT" in second["types"]
    tool_message = next(m for m in second["messages"] if m["role"] == "tool")
    assert "node-approved" in tool_message["content"]
    assert second["messages"][-1]["content"] == "Printed."

    join = seen["join"]
    assert join["types"] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert [m["role"] for m in join["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert join["messages"][0]["id"] == "u1" and join["messages"][-1]["content"] == "Printed."


QUESTION_SCRIPT = Path(__file__).with_name("node_question.mjs")


@pytest.mark.timeout(180)
async def test_the_official_ag_ui_client_answers_a_question_and_cancels_the_next_turn(tmp_path: Path, frame_checker: FrameChecker) -> None:
    from tests.host.runtime.tools._support import scripted as tool_agent
    from tests.host.runtime.tools._support import tools_config

    workdir = await _prepared(tmp_path, QUESTION_SCRIPT)
    question = {"id": "colour", "kind": "single-select", "message": "Which colour?", "required": True,
                "options": [{"id": "red", "label": "Red"}, {"id": "blue", "label": "Blue"}]}
    provider = ScriptedProvider([
        call_tools(("ask_user", {"questions": [question]})), Script((*text("Blue socks it is.", index=0), *finish("stop"))),
        call_tools(("ask_user", {"questions": [question]})),
    ])
    async with serving(tools_config(tmp_path), frame_checker, [tool_agent(provider)], versions=PROTOCOL_VERSIONS) as (running, _):
        seen = await _run_script(workdir, QUESTION_SCRIPT, running)
        chat = running.host.store.state(running.host.store.state(
            next(uri for uri, _ in running.host.store.channels("session")))["defaultChat"])

    first = seen["first"]
    assert first["outcome"] == "interrupt"
    [pending] = first["pending"]
    assert pending["id"].startswith("ahp-input:") and pending["reason"] == "input_required"
    assert pending["responseSchema"]["properties"]["answers"]["properties"]["colour"]["enum"] == ["red", "blue"]

    second = seen["second"]
    assert second["outcome"] == "success" and second["pending"] == []
    tool_message = next(m for m in second["messages"] if m["role"] == "tool")
    assert "Which colour? → blue" in tool_message["content"]
    assert second["messages"][-1]["content"] == "Blue socks it is."

    assert seen["third"]["outcome"] == "interrupt" and len(seen["third"]["pending"]) == 1
    cancel = seen["cancel"]
    assert cancel["outcome"] == "cancelled" and cancel["pending"] == []
    assert chat.get("activeTurn") is None and [turn["state"] for turn in chat["turns"]] == ["complete", "cancelled"]


TRUST_SCRIPT = Path(__file__).with_name("node_trust.mjs")


@pytest.mark.timeout(180)
async def test_the_official_ag_ui_client_answers_the_workspace_trust_question(tmp_path: Path, frame_checker: FrameChecker) -> None:
    from tests.host.runtime.test_trust import agent, config, hostile_folder

    workdir = await _prepared(tmp_path, TRUST_SCRIPT)
    folder, markers = hostile_folder(tmp_path)
    provider = ScriptedProvider([Script((*text("Without the folder.", index=0), *finish("stop"))),
                                 Script((*text("With the folder.", index=0), *finish("stop")))])
    async with serving(config(tmp_path, folder), frame_checker, [agent(provider)], versions=PROTOCOL_VERSIONS) as (running, _):
        seen = await _run_script(workdir, TRUST_SCRIPT, running, str(markers / "hooks.log"))

    asked = seen["asked"]
    assert asked["outcome"] == "interrupt" and "TEXT_MESSAGE_START" not in asked["types"]
    [question] = asked["pending"]
    assert question["id"].startswith("ahp-input:workspace-trust:") and question["reason"] == "input_required"
    assert str(folder.resolve()) in question["message"]
    assert asked["hooks"] == []  # the folder's hooks did not run before the answer
    assert seen["refusedByClient"] is not None and question["id"] in seen["refusedByClient"]

    declined = seen["declined"]
    assert declined["outcome"] == "success" and declined["messages"][-1]["content"] == "Without the folder."
    assert declined["hooks"] == []  # nor after "don't trust", though a turn ran

    assert seen["askedAgain"]["outcome"] == "interrupt" and seen["askedAgain"]["hooks"] == []  # a new session asks again
    trusted = seen["trusted"]
    assert trusted["outcome"] == "success" and trusted["messages"][-1]["content"] == "With the folder."
    # "Trust this folder": the session's SessionStart runs, then its message's UserPromptSubmit and
    # Stop (the untrusted thread's session, released by the same answer, runs its SessionStart too).
    hooks = trusted["hooks"]
    assert hooks.count("UserPromptSubmit") == 1 and hooks.count("Stop") == 1 and 1 <= hooks.count("SessionStart") <= 2
    assert hooks.index("SessionStart") < hooks.index("UserPromptSubmit") < hooks.index("Stop")
