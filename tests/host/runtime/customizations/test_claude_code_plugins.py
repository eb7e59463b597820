"""A plugin in the shape of published Claude Code plugins acts on the turn as its author meant.

The fixture is written for this project but copies their layout: ``.claude-plugin/plugin.json``,
``hooks/hooks.json`` naming scripts through ``${CLAUDE_PLUGIN_ROOT}``, an output-style
``SessionStart`` hook printing JSON, a ``UserPromptSubmit`` hook printing plain text, a
``PostToolUse`` hook adding context, and a ``Stop`` hook that blocks once. A local fake
OpenAI-compatible provider records what the model is sent."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import config_for, idle, ready_session, serving
from tests.host.runtime.agents.harness import run_chat_turn as run_turn
from tests.host.runtime.agents.test_faults import fake_agent_toml
from tests.providers.fake_server import FakeProviderServer, Reply, chat_sse

HOOKS = {
    "description": "Explanatory output style, sprint context, lint reminder, test gate",
    "hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/hooks-handlers/session-start.sh"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo 'Current sprint: S42'"}]}],
        "PostToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "python3 ${CLAUDE_PLUGIN_ROOT}/hooks-handlers/lint.py"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/hooks-handlers/stop.sh", "timeout": 30}]}],
    },
}

SESSION_START = """#!/usr/bin/env bash
# An output style: the hook prints JSON whose additionalContext changes how the model writes.
cat << 'EOF'
{
  "hookSpecificOutput": {
    "hookEventName": "SessionStart",
    "additionalContext": "You are in 'explanatory' output style mode: explain each choice in a short Insight block."
  }
}
EOF
"""

LINT = """import json, sys
event = json.load(sys.stdin)
assert event["hook_event_name"] == "PostToolUse"
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse",
      "additionalContext": "Remember to run the linter on " + event["tool_input"].get("file_path", "?")}}))
"""

STOP = """#!/bin/sh
# Blocks the first stop of the session only (a marker file remembers it), like a test gate.
marker="$CLAUDE_PLUGIN_ROOT/.stopped-once"
if [ -e "$marker" ]; then exit 0; fi
touch "$marker"
echo '{"decision": "block", "reason": "Run the tests before you stop."}'
"""


def _plugin(root: Path) -> Path:
    plugin = root / "explanatory-style"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "explanatory-style", "version": "1.0.0"}))
    (plugin / "hooks").mkdir()
    (plugin / "hooks" / "hooks.json").write_text(json.dumps(HOOKS, indent=2))
    handlers = plugin / "hooks-handlers"
    handlers.mkdir()
    for name, text in (("session-start.sh", SESSION_START), ("lint.py", LINT), ("stop.sh", STOP)):
        (handlers / name).write_text(text)
        (handlers / name).chmod((handlers / name).stat().st_mode | stat.S_IXUSR)
    return plugin


async def test_hook_context_reaches_the_model_and_a_stop_hook_keeps_the_turn_going(tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugins = tmp_path / "plugins"
    _plugin(plugins)
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("todo: ship\n")
    replies = [
        Reply(200, chat_sse(tool_calls=[("call-1", "read_file", json.dumps({"path": "notes.txt"}))])),
        Reply(200, chat_sse("I read the notes.")),
        Reply(200, chat_sse("Tests pass; stopping now.")),
    ]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        config = config_for(tmp_path, toml=fake_agent_toml(server.base_url), plugins={"directories": [str(plugins)]})
        async with serving(config, frame_checker, versions=PROTOCOL_VERSIONS) as (_, client):
            session = await ready_session(client, provider="fake", working_directory=work.as_uri())
            turn = await run_turn(client, session, "what is left to do?")
            await idle(client, default_chat_uri(session))
    assert turn["state"] == "complete"
    first, second, third = (request.json()["messages"] for request in server.requests)
    system = first[0]["content"]
    assert "explanatory' output style mode" in system
    assert first[-1]["content"].endswith("[Context added by a plugin hook]\nCurrent sprint: S42")
    tool_result = second[-1]
    assert tool_result["role"] == "tool"
    assert tool_result["content"].endswith(f"[Context added by a plugin hook]\nRemember to run the linter on {work / 'notes.txt'}")
    assert third[-1] == {"role": "user", "content": "[A Stop hook asked you to continue]\nRun the tests before you stop."}
    notes = [p["content"] for p in turn["responseParts"] if p["kind"] == "systemNotification"]
    assert "A plugin's Stop hook asked the agent to go on: Run the tests before you stop." in notes
    answer = [p["content"] for p in turn["responseParts"] if p["kind"] == "markdown"]
    assert answer[-1] == "Tests pass; stopping now."
    assert len(server.requests) == 3


async def test_bang_lines_in_a_command_run_through_the_shell_tool_and_their_output_is_put_in_place(
    tmp_path: Path, frame_checker: FrameChecker
) -> None:
    plugins = tmp_path / "plugins"
    plugin = _plugin(plugins)
    (plugin / "commands").mkdir()
    (plugin / "commands" / "status.md").write_text(
        "---\ndescription: Summarise the state of the work: files, notes\nallowed-tools: Bash(echo:*)\n---\n"
        "## Context\n\n- Greeting: !`echo hello-from-shell`\n- Notes: !`echo secret-notes`\n\nSummarise $ARGUMENTS.\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    replies = [Reply(200, chat_sse("Summary done.")), Reply(200, chat_sse("ok"))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        config = config_for(
            tmp_path, toml=fake_agent_toml(server.base_url), plugins={"directories": [str(plugins)]},
            tools={"allow": ["shell(echo hello-from-shell)"], "deny": ["shell(echo secret-notes)"]},
        )
        async with serving(config, frame_checker, versions=PROTOCOL_VERSIONS) as (_, client):
            session = await ready_session(client, provider="fake", working_directory=work.as_uri())
            turn = await run_turn(client, session, "/status the release")
            await idle(client, default_chat_uri(session))
    assert turn["state"] == "complete"
    sent = server.requests[0].json()["messages"][-1]["content"]
    assert "- Greeting: hello-from-shell" in sent
    assert "!`" not in sent
    assert "Summarise the release." in sent
    calls = [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]
    assert [c["toolName"] for c in calls] == ["shell", "shell"]
    assert (calls[0]["status"], calls[0]["success"], calls[0]["confirmed"]) == ("completed", True, "setting")
    assert (calls[1]["success"], calls[1]["error"]["code"]) == (False, "denied_by_rule")  # rules apply to these lines too
    assert "- Notes: " in sent and "- Notes: secret-notes" not in sent
