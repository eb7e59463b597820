"""``agent-host plugin ...``: marketplaces and plugins from the command line, as a person types them
(a real ``agent-host`` process; a local bare git repository stands in for GitHub)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.host.runtime.customizations.claude_fixtures import bare_remote, claude_home, local_marketplace, plugin

ROOT = Path(__file__).resolve().parents[2]


def agent_host(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
           "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    command = [sys.executable, "-m", "cli.main", "plugin", "--data-dir", str(tmp_path / "data"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)


def test_add_a_marketplace_install_disable_and_remove_from_the_command_line(tmp_path: Path) -> None:
    source = local_marketplace(tmp_path / "src", name="team", plugins=("linter", "formatter"))
    remote = bare_remote(source, tmp_path / "team.git")
    added = agent_host(tmp_path, "marketplace", "add", f"file://{remote}")
    assert added.returncode == 0, added.stderr
    assert added.stdout.splitlines()[0] == "Added the marketplace team (2 plugins: linter, formatter)"
    listed = agent_host(tmp_path, "marketplace", "list")
    assert listed.stdout.strip() == f"team  file://{remote}  (added here; 2 plugins)"
    installed = agent_host(tmp_path, "install", "linter")  # a bare name only one marketplace lists
    assert installed.returncode == 0 and installed.stdout.startswith("Installed linter@team ")
    assert agent_host(tmp_path, "disable", "linter@team").stdout.strip() == "Disabled linter@team"
    assert agent_host(tmp_path, "list").stdout.strip() == "off linter@team 1.0.0  (installed here)"
    agent_host(tmp_path, "enable", "linter@team")
    assert agent_host(tmp_path, "list").stdout.strip() == "on  linter@team 1.0.0  (installed here)"
    record = json.loads((tmp_path / "data" / "claude-code" / "plugins.json").read_text())
    assert record["enabled"] == {"linter@team": True}
    removed = agent_host(tmp_path, "marketplace", "remove", "team")
    assert removed.stdout.strip() == "Removed the marketplace team and its plugins linter@team"
    assert agent_host(tmp_path, "list").stdout.strip().startswith("No plugins.")


def test_a_claude_code_users_plugins_are_listed_without_installing_anything(tmp_path: Path) -> None:
    hookify = plugin(tmp_path / "claude" / "plugins" / "cache" / "claude-code-plugins", "hookify")
    market = local_marketplace(tmp_path / "claude" / "plugins" / "marketplaces" / "claude-code-plugins", plugins=("hookify",))
    claude_home(tmp_path / "claude", settings={"enabledPlugins": {"hookify@claude-code-plugins": True,
                                                                  "ghost@claude-code-plugins": True}},
                installed={"hookify@claude-code-plugins": hookify}, known={"claude-code-plugins": market})
    listed = agent_host(tmp_path, "list")
    assert listed.stdout.splitlines() == [
        "on  ghost@claude-code-plugins  (not installed)  problem: ghost@claude-code-plugins is enabled but not installed: "
        "agent-host plugin install ghost@claude-code-plugins (or /plugin install ghost@claude-code-plugins)",
        "on  hookify@claude-code-plugins 1.0.0  (Claude Code's install)",
    ]
    markets = agent_host(tmp_path, "marketplace", "list")
    assert markets.stdout.strip() == "claude-code-plugins  anthropics/claude-code-plugins  (Claude Code's; 1 plugins)"


def test_an_unreachable_marketplace_and_an_unknown_plugin_say_what_is_wrong(tmp_path: Path) -> None:
    failed = agent_host(tmp_path, "marketplace", "add", f"file://{tmp_path}/nowhere.git")
    assert failed.returncode == 1
    assert f"cannot fetch file://{tmp_path}/nowhere.git" in failed.stderr and "Traceback" not in failed.stderr
    unknown = agent_host(tmp_path, "install", "nothing")
    assert unknown.returncode == 1
    assert "no known marketplace lists a plugin 'nothing'" in unknown.stderr
