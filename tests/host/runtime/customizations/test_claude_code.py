"""A Claude Code user's set-up in a fresh host with no configuration of ours, end to end over real
WebSockets: the user settings' plugins (installed by Claude Code, used where they are), hooks, env
and permission rules act on turns; a project's settings wait for workspace trust; a malformed
settings file is a diagnostic in the load state and loses nothing else."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from ahp.workspace_trust import TRUST_FOLDER, is_trust_request, trust_answers
from client import AhpClient
from host.runtime.agents import ModelSpec, ProviderAgent, StaticSource, TurnSettings
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import config_for, idle, ready_session, run_turn, serving
from tests.host.runtime.customizations.claude_fixtures import bare_remote, claude_home, local_marketplace, plugin
from tests.tools.mcp.conftest import KITCHEN_SINK

MARKET = "claude-code-plugins"


def agent(provider: ScriptedProvider) -> ProviderAgent:
    return ProviderAgent("scripted", StaticSource(provider), display_name="Scripted", models=[ModelSpec("m1")],
                         settings=TurnSettings(title="first-words"))


def containers(client: AhpClient, session: str) -> dict[str, dict[str, Any]]:
    """By name, and Claude Code plugins by their ``name@marketplace`` too."""
    found = {}
    for c in (client.state(session) or {}).get("customizations") or ():
        found[c["name"]] = c
        if str(c["id"]).startswith("claude-plugin:"):
            found[c["id"].removeprefix("claude-plugin:")] = c
    return found


def trust_question(client: AhpClient, session: str) -> dict[str, Any] | None:
    return next((r for r in (client.state(session) or {}).get("inputRequests") or () if is_trust_request(r)), None)


def calls(turn: dict[str, Any]) -> list[dict[str, Any]]:
    return [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]


def user_setup(tmp_path: Path, markers: Path, **settings: Any) -> Path:
    """A ~/.claude whose settings switch on a plugin Claude Code installed, with hooks, env and rules."""
    installed = plugin(tmp_path / "claude" / "plugins" / "cache" / MARKET, "commit-commands", command="commit",
                       hook_marker=markers / "plugin-hooks.log")
    user_hook = {"type": "command", "command": f'echo "user-hook $MARKER_ENV" >> {markers / "user-hooks.log"}; '
                                               f'echo "${{CLAUDE_PROJECT_DIR}}" >> {markers / "project-dir.log"}'}
    return claude_home(tmp_path / "claude", installed={f"commit-commands@{MARKET}": installed}, settings={
        "enabledPlugins": {f"commit-commands@{MARKET}": True},
        "env": {"MARKER_ENV": "from-settings"},
        "permissions": {"allow": ["Bash(echo:*)"], "deny": ["Bash(rm:*)"]},
        "hooks": {"UserPromptSubmit": [{"hooks": [user_hook]}]},
        **settings,
    })


async def test_a_fresh_host_uses_the_claude_code_users_settings_plugins_hooks_env_and_rules(
        tmp_path: Path, frame_checker: FrameChecker, monkeypatch: pytest.MonkeyPatch) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    home = user_setup(tmp_path, markers)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home))
    # The plugin's MCP server records the environment it got, then serves.
    start = f"echo mcp $MARKER_ENV >> {markers / 'mcp.log'}; exec {sys.executable} {KITCHEN_SINK} stdio"
    installed = home / "plugins" / "cache" / MARKET / "commit-commands"
    (installed / ".mcp.json").write_text(json.dumps({"mcpServers": {"sink": {"command": "sh", "args": ["-c", start]}}}))
    work = tmp_path / "work"
    work.mkdir()
    provider = ScriptedProvider([
        call_tools(("shell", {"command": "echo value=$MARKER_ENV"}), ("shell", {"command": "rm -rf build"})),
        reply("done"),
        reply("committed"),
    ])
    # No [plugins] directories, nothing trusted: only the Claude Code set-up brings anything.
    config = config_for(tmp_path, trust={"folders": []}, tools={"enabled": True})
    async with serving(config, frame_checker, agents=[agent(provider)]) as (_, client):
        session = await ready_session(client, provider="scripted", working_directory=work.as_uri())
        shown = containers(client, session)
        assert shown["Claude Code user settings"]["load"] == {"kind": "loaded"}
        assert shown[f"commit-commands@{MARKET}"]["load"] == {"kind": "loaded"}
        assert trust_question(client, session) is None  # the user's own settings need no trust
        turn = await run_turn(client, session, "tidy up")
        await idle(client, session)
        assert turn["state"] == "complete"
        echo, remove = calls(turn)
        assert (echo["success"], echo["confirmed"]) == (True, "setting")  # Bash(echo:*) allowed it
        assert "value=from-settings" in json.dumps(echo)  # the settings' env reached the command
        assert (remove["success"], remove["error"]["code"]) == (False, "denied_by_rule")
        assert (markers / "user-hooks.log").read_text() == "user-hook from-settings\n"
        # The user's own hook sees the session's project as CLAUDE_PROJECT_DIR, not ~/.claude.
        assert (markers / "project-dir.log").read_text() == f"{work}\n"
        assert (markers / "plugin-hooks.log").read_text() == "commit-commands from-settings\n"
        assert (markers / "mcp.log").read_text() == "mcp from-settings\n"  # and the plugin's MCP server
        # The plugin's command, as its author wrote it.
        await run_turn(client, session, "/commit-commands:commit the release")
        await idle(client, session)
    assert "Do the commit-commands thing with the release." in repr(provider.requests[-1].messages[-1])


async def test_a_projects_settings_and_the_plugins_it_switches_on_wait_for_trust(
        tmp_path: Path, frame_checker: FrameChecker, monkeypatch: pytest.MonkeyPatch) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    home = user_setup(tmp_path, markers)
    # The project switches on a plugin of a marketplace it declares: a folder, so the plugin is used where it is.
    market = local_marketplace(tmp_path / "team-market", name="team", plugins=("reviewer",), hook_marker=markers / "team.log")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home))
    work = tmp_path / "work"
    (work / ".claude").mkdir(parents=True)
    (work / ".claude" / "settings.json").write_text(json.dumps({
        "enabledPlugins": {"reviewer@team": True, f"commit-commands@{MARKET}": False},
        "extraKnownMarketplaces": {"team": {"source": {"source": "directory", "path": str(market)}}},
        "permissions": {"allow": ["Bash(touch:*)"], "defaultMode": "yolo"},
        "env": {"MARKER_ENV": "from-project"},
    }))
    config = config_for(tmp_path, trust={"folders": []}, tools={"enabled": True})
    provider = ScriptedProvider([call_tools(("shell", {"command": "touch touched"}))])
    async with serving(config, frame_checker, agents=[agent(provider)]) as (_, client):
        session = await ready_session(client, provider="scripted", working_directory=work.as_uri())
        shown = containers(client, session)
        assert "Waiting for trust" in shown["reviewer@team"]["load"]["message"]
        assert ".claude/settings.json switches it on" in shown["reviewer@team"]["load"]["message"]
        assert shown[f"commit-commands@{MARKET}"]["enabled"] is False  # the project switched it off
        settings = shown[".claude/settings.json"]["load"]  # a malformed key is shown; the rest counts
        assert settings["kind"] == "degraded" and "permissions ==> defaultMode: expected one of" in settings["message"]
        question = trust_question(client, session)
        assert question is not None and "plugin reviewer@team (switched on by .claude/settings.json)" in json.dumps(question)
        # Before trust: the project's allow rule does not count, so the touch waits for confirmation; cancel the turn.
        turn_id = client.send_message(session, "touch it")
        await client.wait_for(lambda m, e: any(p.get("kind") == "toolCall" and p["toolCall"].get("status") == "pending-confirmation"
                                               for p in ((client.state(session) or {}).get("activeTurn") or {}).get("responseParts", ())),
                              timeout=20)
        client.dispatch(session, {"type": "session/turnCancelled", "turnId": turn_id})
        await idle(client, session)
        assert not (markers / "team.log").exists()  # the held plugin's hook did not run
        client.dispatch(session, {"type": "session/inputCompleted", "requestId": question["id"], "response": "accept",
                                  "answers": trust_answers(TRUST_FOLDER)})
        await client.wait_for(lambda m, e: "message" not in containers(client, session)["reviewer@team"]["load"], timeout=20)
        provider.add(call_tools(("shell", {"command": "touch touched"})))
        provider.add(reply("done"))
        turn = await run_turn(client, session, "touch it now")
        await idle(client, session)
        assert calls(turn)[0]["confirmed"] == "setting" and (work / "touched").exists()
        assert (markers / "team.log").read_text().splitlines()[-1] == "reviewer from-project"
        assert not (markers / "plugin-hooks.log").exists()  # the project switched commit-commands off


async def test_a_malformed_user_settings_file_is_a_diagnostic_and_loses_nothing_else(
        tmp_path: Path, frame_checker: FrameChecker, monkeypatch: pytest.MonkeyPatch) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    home = user_setup(tmp_path, markers, permissions={"allow": "Bash(echo:*)", "deny": ["Bash(rm:*)"]},
                      enabledPlugins={f"commit-commands@{MARKET}": True, "missing@elsewhere": True})
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home))
    config = config_for(tmp_path, tools={"enabled": True})
    async with serving(config, frame_checker, agents=[agent(ScriptedProvider([reply("hi")]))]) as (_, client):
        session = await ready_session(client, provider="scripted")
        shown = containers(client, session)
        settings = shown["Claude Code user settings"]["load"]
        assert settings["kind"] == "degraded" and "permissions ==> allow: expected a list of strings" in settings["message"]
        missing = shown["missing@elsewhere"]["load"]
        assert missing["kind"] == "error"
        assert "agent-host plugin install missing@elsewhere" in missing["message"]
        assert shown[f"commit-commands@{MARKET}"]["load"] == {"kind": "loaded"}
        await run_turn(client, session, "hello")
        await idle(client, session)
    assert (markers / "user-hooks.log").read_text() == "user-hook from-settings\n"


def test_a_project_cannot_redirect_a_plugin_the_user_switched_on(tmp_path: Path) -> None:
    """A project declaring a marketplace of the same name as the user's does not decide where the
    user's plugin is loaded from (it would run without trust)."""
    from host.runtime.customizations.claude_code import ClaudeCode

    mine = local_marketplace(tmp_path / "mine", name="tools", plugins=("fmt",))
    theirs = local_marketplace(tmp_path / "theirs", name="tools", plugins=("fmt", "extra"))
    home = claude_home(tmp_path / "claude", settings={
        "enabledPlugins": {"fmt@tools": True},
        "extraKnownMarketplaces": {"tools": {"source": {"source": "directory", "path": str(mine)}}}})
    work = tmp_path / "work"
    (work / ".claude").mkdir(parents=True)
    (work / ".claude" / "settings.json").write_text(json.dumps({
        "enabledPlugins": {"extra@tools": True},
        "extraKnownMarketplaces": {"tools": {"source": {"source": "directory", "path": str(theirs)}}}}))
    claude = ClaudeCode(home, tmp_path / "data")
    claude.load()
    view = claude.session_view(work, trusted=False)
    by_id = {plugin.plugin_id: plugin for plugin in view.plugins}
    assert by_id["fmt@tools"].loaded.root == (mine / "plugins" / "fmt").resolve() and by_id["fmt@tools"].held_by is None
    assert by_id["extra@tools"].held_by == work / ".claude" / "settings.json"


async def test_a_trusted_project_gets_the_plugins_it_switches_on_installed_from_its_git_marketplace(
        tmp_path: Path, frame_checker: FrameChecker, monkeypatch: pytest.MonkeyPatch) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    remote = bare_remote(local_marketplace(tmp_path / "src", name="team", plugins=("reviewer",), hook_marker=markers / "team.log"),
                         tmp_path / "team.git")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_home(tmp_path / "claude", settings={"env": {"MARKER_ENV": "x"}})))
    work = tmp_path / "work"
    (work / ".claude").mkdir(parents=True)
    (work / ".claude" / "settings.json").write_text(json.dumps({
        "enabledPlugins": {"reviewer@team": True},
        "extraKnownMarketplaces": {"team": {"source": {"source": "git", "url": f"file://{remote}"}}}}))
    provider = ScriptedProvider([reply("reviewed")])
    async with serving(config_for(tmp_path, trust={"folders": []}), frame_checker, agents=[agent(provider)]) as (running, client):
        session = await ready_session(client, provider="scripted", working_directory=work.as_uri())
        held = containers(client, session)["reviewer@team"]["load"]
        assert "Waiting for trust" in held["message"]
        assert not (tmp_path / "data" / "claude-code" / "marketplaces").exists()  # nothing fetched before trust
        question = trust_question(client, session)
        assert question is not None
        client.dispatch(session, {"type": "session/inputCompleted", "requestId": question["id"], "response": "accept",
                                  "answers": trust_answers(TRUST_FOLDER)})
        await client.wait_for(lambda m, e: containers(client, session)["reviewer@team"]["load"] == {"kind": "loaded"}, timeout=60)
        await run_turn(client, session, "review")
        await idle(client, session)
        assert (markers / "team.log").read_text() == "reviewer x\n"
        # Installed for the project: not switched on for the user's other projects.
        assert "reviewer@team" not in running.host.claude.user_enabled()


async def test_a_trusted_projects_default_mode_is_its_new_sessions_permission_mode(
        tmp_path: Path, frame_checker: FrameChecker, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_home(tmp_path / "claude", settings={"permissions": {"defaultMode": "plan"}})))
    trusted, untrusted = tmp_path / "trusted", tmp_path / "untrusted"
    for folder in (trusted, untrusted):
        (folder / ".claude").mkdir(parents=True)
        (folder / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"defaultMode": "acceptEdits"}}))
    config = config_for(tmp_path, trust={"folders": [str(trusted)]}, tools={"enabled": True})
    async with serving(config, frame_checker, agents=[agent(ScriptedProvider([]))]) as (_, client):
        modes = {}
        for folder in (trusted, untrusted):
            session = await ready_session(client, provider="scripted", working_directory=folder.as_uri())
            modes[folder.name] = client.state(session)["config"]["values"]["permissionMode"]
    # The trusted project's own settings win; the untrusted one's wait, so the user's applies there.
    assert modes == {"trusted": "accept-edits", "untrusted": "plan"}


async def test_the_users_own_claude_md_reaches_the_model_in_every_folder(
        tmp_path: Path, frame_checker: FrameChecker, monkeypatch: pytest.MonkeyPatch) -> None:
    home = claude_home(tmp_path / "claude")
    (home / "CLAUDE.md").write_text("Always answer in French.\nSee @style.md.\n")
    (home / "style.md").write_text("Keep answers under ten lines.\n")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home))
    work = tmp_path / "work"
    work.mkdir()
    provider = ScriptedProvider([reply("d'accord")])
    config = config_for(tmp_path, trust={"folders": []}, tools={"enabled": True})
    async with serving(config, frame_checker, agents=[agent(provider)]) as (_, client):
        session = await ready_session(client, provider="scripted", working_directory=work.as_uri())
        assert containers(client, session)["Claude Code user instructions"]["load"] == {"kind": "loaded"}
        assert trust_question(client, session) is None  # the user's own file needs no trust
        await run_turn(client, session, "hello")
        await idle(client, session)
    sent = repr(provider.requests[0])
    assert "Always answer in French." in sent and "Keep answers under ten lines." in sent


async def test_the_first_turn_waits_for_the_plugins_the_user_settings_switch_on_to_be_installed(
        tmp_path: Path, frame_checker: FrameChecker, monkeypatch: pytest.MonkeyPatch) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    remote = bare_remote(local_marketplace(tmp_path / "src", name="team", plugins=("reviewer",), hook_marker=markers / "team.log"),
                         tmp_path / "team.git")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_home(tmp_path / "claude", settings={
        "env": {"MARKER_ENV": "x"}, "enabledPlugins": {"reviewer@team": True},
        "extraKnownMarketplaces": {"team": {"source": {"source": "git", "url": f"file://{remote}"}}}})))
    work = tmp_path / "work"
    work.mkdir()
    provider = ScriptedProvider([reply("reviewed")])
    async with serving(config_for(tmp_path, trust={"folders": []}), frame_checker, agents=[agent(provider)]) as (_, client):
        session = await ready_session(client, provider="scripted", working_directory=work.as_uri())
        await run_turn(client, session, "review")  # at once: the install has only begun
        await idle(client, session)
    assert (markers / "team.log").read_text() == "reviewer x\n"  # the plugin's hook ran in that very turn
