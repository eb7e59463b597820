"""The per-session turn environment: contributors add tools, system prompt text and tool hooks
to a provider-backed agent's turns, observed here through what the model received and what the
client saw."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS
from host.runtime.agents.environment import Contributor
from host.runtime.agents.tooling import PreToolVerdict
from providers import ScriptedProvider, ToolResultsMessage
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tools.base import Tool, ToolContext

from .harness import config_for, idle, ready_session, serving
from .harness import run_chat_turn as run_turn
from .test_turn_loop import EchoTool, agent


class Extras(Contributor):
    def __init__(self) -> None:
        self.after: list[tuple[str, bool]] = []

    def tools(self, ctx: Any) -> list[Tool]:
        return [EchoTool()]

    def system_prompt(self, ctx: Any) -> list[str]:
        return ["Always answer in French."]

    async def before_tool_call(self, ctx: Any, request: Any, arguments: Any) -> PreToolVerdict:
        return PreToolVerdict(blocked="Blocked by the project's guard hook: no shouting." if arguments.get("text") == "SHOUT" else None)

    async def after_tool_call(self, ctx: Any, request: Any, result: dict[str, Any]) -> None:
        self.after.append((request.tool_name, result["success"]))

    def tool_context(self, ctx: Any, context: ToolContext) -> ToolContext:
        context.extra_roots = (Path("/tmp"),)
        return context


async def test_contributors_add_tools_prompt_and_hooks(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("echo", {"text": "hi"}), ("echo", {"text": "SHOUT"})), reply("fini")])
    scripted = agent(provider)
    extras = Extras()
    # Without the <environment> preamble, so the prompt is exactly the contributors' text.
    async with serving(config_for(tmp_path, sessions={"preamble": False}), frame_checker, [scripted], versions=PROTOCOL_VERSIONS) as (running, client):
        running.host.environment.contributors.append(extras)
        session = await ready_session(client)
        turn = await run_turn(client, session, "go")
        await idle(client, default_chat_uri(session))
    first = provider.requests[0]
    assert first.system == "Always answer in French."
    assert [t.name for t in first.tools] == ["echo"]
    calls = [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]
    assert [c["success"] for c in calls] == [True, False]
    assert calls[1]["error"]["message"] == "Blocked by the project's guard hook: no shouting."
    [results] = [m for m in provider.requests[1].messages if isinstance(m, ToolResultsMessage)]
    assert [r.is_error for r in results.results] == [False, True]
    assert "no shouting" in results.results[1].text
    assert extras.after == [("echo", True)]
