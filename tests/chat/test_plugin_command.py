"""``/plugin`` in the terminal client: a marketplace added (a local bare git repository as the
remote), a plugin installed, listed and disabled, an unreachable source named, all through the
root config against a real host in a real pty; and the view itself."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ahp.workspace_trust import WAITING
from chat._plugin_command import render_plugin_view
from chat.render import Style
from host.transport.server import RunningHost
from tests.chat._pty import ChatProcess
from tests.host.runtime.customizations.claude_fixtures import bare_remote, local_marketplace

Spawn = Callable[..., ChatProcess]


async def test_plugin_marketplace_add_install_list_and_disable(spawn_chat: Spawn, chat_host: RunningHost, tmp_path: Path) -> None:
    remote = bare_remote(local_marketplace(tmp_path / "src", name="team", plugins=("linter",)), tmp_path / "team.git")
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send(f"/plugin marketplace add file://{remote}")
    await chat.expect("(added the marketplace team: linter; /plugin install NAME@team)", timeout=60)
    chat.send("/plugin install linter")
    await chat.expect("(installed and enabled linter@team 1.0.0: from the next turn of every session)", timeout=60)
    chat.send("/plugin")
    await chat.expect("● linter@team 1.0.0  installed")
    chat.send("/plugin disable linter@team")
    await chat.expect("(disabled linter@team: from the next turn of every session)")
    chat.send(f"/plugin marketplace add file://{tmp_path}/nowhere.git")
    await chat.expect(f"cannot fetch file://{tmp_path}/nowhere.git", timeout=60)
    chat.send("/plugin frobnicate")
    await chat.expect("usage: /plugin, /plugin marketplace add SOURCE")
    chat.send("/quit")
    assert await chat.wait() == 0


def test_the_view_lists_marketplaces_plugins_problems_and_what_waits_for_trust() -> None:
    config = {"values": {
        "pluginMarketplaces": [
            {"name": "claude-code-plugins", "source": "anthropics/claude-code", "origin": "claude-code", "plugins": ["a", "b"]},
            {"source": "acme/missing", "error": "cannot fetch acme/missing: repository not found"},
        ],
        "claudePlugins": [
            {"id": "a@claude-code-plugins", "enabled": True, "installed": "claude-code", "version": "1.0.0"},
            {"id": "ghost@x", "enabled": True, "installed": None, "problem": "ghost@x is enabled but not installed"},
        ],
    }}
    session = {"customizations": [{"id": "claude-plugin:team@x", "name": "team",
                                   "load": {"kind": "degraded", "message": f"{WAITING}: .claude/settings.json switches it on"}}]}
    shown = render_plugin_view(config, session, Style())
    assert "  claude-code-plugins  anthropics/claude-code  (Claude Code's; 2 plugins)" in shown
    assert "  ✗ acme/missing: cannot fetch acme/missing: repository not found" in shown
    assert "  ● a@claude-code-plugins 1.0.0  Claude Code's install" in shown
    assert "  ● ghost@x  not installed  ghost@x is enabled but not installed" in shown
    assert "Waiting for you to trust this folder (/trust add):\n  ◌ team@x" in shown
