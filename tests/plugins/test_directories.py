"""Workspace directory containers: missing folders, instruction files, skills and hooks folders."""

from __future__ import annotations

import json
from pathlib import Path

from plugins import (
    CLAUDE_SETTINGS,
    INSTRUCTION_FILES,
    DirectorySpec,
    HookEvent,
    directory_customization,
    load_directory,
    load_workspace_directories,
)


def _write(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_a_folder_that_does_not_exist_yet_is_loaded_and_empty(tmp_path: Path) -> None:
    directory = load_directory(tmp_path, DirectorySpec(".github/prompts", "prompts"))
    assert (directory.exists, directory.state.kind) == (False, "loaded")
    wire = directory_customization(directory, id="d1")
    assert wire == {"type": "directory", "id": "d1", "uri": (tmp_path / ".github/prompts").as_uri(),
                    "name": ".github/prompts", "enabled": True, "load": {"kind": "loaded"}, "children": [],
                    "contents": "prompt", "writable": True}


def test_agents_md_and_claude_md_are_always_on_rules(tmp_path: Path) -> None:
    _write(tmp_path, {"AGENTS.md": "Use tabs.\n", "CLAUDE.md": "Be brief.\n"})
    directory = load_directory(tmp_path, INSTRUCTION_FILES)
    assert [(r.name, r.always_apply, r.body) for r in directory.rules] == [
        ("AGENTS.md", True, "Use tabs.\n"), ("CLAUDE.md", True, "Be brief.\n")]
    wire = directory_customization(directory)
    assert (wire["name"], wire["contents"], wire["writable"]) == ("Workspace instructions", "rule", False)
    assert [c["uri"] for c in wire["children"]] == [(tmp_path / "AGENTS.md").as_uri(), (tmp_path / "CLAUDE.md").as_uri()]


def test_skill_folders_and_cursor_rules_in_the_workspace(tmp_path: Path) -> None:
    _write(tmp_path, {
        ".claude/skills/lint/SKILL.md": "---\ndescription: Lint it.\n---\nRun the linter.\n",
        ".claude/skills/notes/README.md": "not a skill",
        ".cursor/rules/ts.mdc": "---\ndescription: TS rules\nglobs: *.ts,*.tsx\n---\nStrict mode.\n",
    })
    loaded = {d.name: d for d in load_workspace_directories(tmp_path)}
    assert [s.name for s in loaded[".claude/skills"].skills] == ["lint"]
    (rule,) = loaded[".cursor/rules"].rules
    assert rule.globs == ("*.ts", "*.tsx") and rule.always_apply is False
    assert all(d.state.kind == "loaded" for d in loaded.values())


def test_hooks_folder_gives_one_hook_child_per_file(tmp_path: Path) -> None:
    config = {"version": 1, "hooks": {"sessionStart": [{"type": "command", "bash": "echo hi", "timeoutSec": 5}]}}
    _write(tmp_path, {".github/hooks/start.json": json.dumps(config), ".github/hooks/bad.json": "{"})
    directory = load_directory(tmp_path, DirectorySpec(".github/hooks", "hooks"))
    (hook_file,) = directory.hook_files
    (hook,) = hook_file.hooks
    assert (hook.event, hook.command, hook.timeout) == (HookEvent.SESSION_START, "echo hi", 5)
    assert directory.state.kind == "degraded"
    assert directory.state.message.startswith("directory .github/hooks ==> bad.json: not valid JSON")
    wire = directory_customization(directory)
    assert [(c["type"], c["name"]) for c in wire["children"]] == [("hook", "start.json")]


def test_bad_agent_file_degrades_the_directory_but_keeps_the_rest(tmp_path: Path) -> None:
    _write(tmp_path, {
        ".github/agents/good.agent.md": "---\ndescription: Good.\ntools: ['read']\nmodel: [gpt-5, gpt-4.1]\n---\nPlan.\n",
        ".github/agents/bad.agent.md": "Just text.\n",
    })
    directory = load_directory(tmp_path, DirectorySpec(".github/agents", "agents"))
    (agent,) = directory.agents
    assert (agent.name, agent.tools, agent.model, agent.models) == ("good", ("read",), "gpt-5", ("gpt-5", "gpt-4.1"))
    assert directory.state.kind == "degraded"
    assert "directory .github/agents ==> bad.agent.md ==> frontmatter" in directory.state.message


def test_claude_settings_hooks_are_read_and_their_other_keys_ignored(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps({
        "permissions": {"allow": ["Bash(ls)"]}, "env": {"X": "1"},
        "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "$CLAUDE_PROJECT_DIR/.claude/start.sh"}]}]}}))
    (tmp_path / ".claude" / "settings.local.json").write_text(json.dumps({"permissions": {}}))
    loaded = load_directory(tmp_path, CLAUDE_SETTINGS)
    assert loaded.state.kind == "loaded" and loaded.exists and loaded.contents == "hook"
    [hook_file] = loaded.hook_files
    [hook] = hook_file.hooks
    assert hook.event.value == "SessionStart"
    assert hook.env["CLAUDE_PROJECT_DIR"] == str(tmp_path.absolute())
    assert not load_directory(tmp_path / "nothing-here", CLAUDE_SETTINGS).exists
