"""Marketplaces added and plugins installed on this host (``ClaudePlugins``): a folder, a local bare
git repository as the "remote", plugins kept in other git repositories, and a Claude Code user's
own installs used where they are. Real ``git``; never the network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from host.runtime.customizations.claude_plugins import ClaudePlugins, MarketplaceError
from tests.host.runtime.customizations.claude_fixtures import (
    bare_remote,
    claude_home,
    git,
    local_marketplace,
    marketplace,
    plugin,
)


def store(tmp_path: Path) -> ClaudePlugins:
    return ClaudePlugins(tmp_path / "claude", tmp_path / "data")


def test_a_folder_marketplace_is_read_in_place_and_an_install_is_a_versioned_copy(tmp_path: Path) -> None:
    market = local_marketplace(tmp_path / "market", plugins=("commit-commands", "feature-dev"))
    plugins = store(tmp_path)
    added = plugins.add_marketplace(str(market))
    assert [entry.name for entry in added.plugins] == ["commit-commands", "feature-dev"]
    assert plugins.marketplaces()["claude-code-plugins"].root == market
    record = plugins.install("commit-commands@claude-code-plugins")
    path = Path(record["installPath"])
    assert path.parent == tmp_path / "data" / "claude-code" / "cache" / "claude-code-plugins" / "commit-commands"
    assert (path / "commands" / "commit-commands.md").is_file()
    assert plugins.resolve("commit-commands@claude-code-plugins") == path
    assert plugins.enabled_here == {"commit-commands@claude-code-plugins": True}
    # Another ClaudePlugins on the same data directory (the command line, a restarted host) sees it all.
    again = store(tmp_path)
    assert again.resolve("commit-commands@claude-code-plugins") == path
    again.uninstall("commit-commands@claude-code-plugins")
    assert not path.exists()
    assert "not installed" in str(again.resolve("commit-commands@claude-code-plugins"))


def test_a_git_marketplace_is_cloned_installed_by_commit_and_updated(tmp_path: Path) -> None:
    source = local_marketplace(tmp_path / "src", name="team", plugins=("linter",))
    remote = bare_remote(source, tmp_path / "remote.git")
    plugins = store(tmp_path)
    market = plugins.add_marketplace(f"file://{remote}")
    assert market.name == "team"
    assert market.root == tmp_path / "data" / "claude-code" / "marketplaces" / "team"
    first = plugins.install("linter@team")
    commit = git("rev-parse", "HEAD", cwd=source)
    assert first["gitCommitSha"] == commit and Path(first["installPath"]).name == commit
    # The remote moves on: update reads the new marketplace; installing again takes the new commit.
    plugin(source / "plugins", "formatter")
    data = json.loads((source / ".claude-plugin" / "marketplace.json").read_text())
    data["plugins"].append({"name": "formatter", "source": "./plugins/formatter"})
    (source / ".claude-plugin" / "marketplace.json").write_text(json.dumps(data))
    git("add", "-A", cwd=source)
    git("commit", "--quiet", "-m", "formatter", cwd=source)
    git("push", "--quiet", str(remote), "main", cwd=source)
    updated = plugins.update_marketplace("team")
    assert [entry.name for entry in updated.plugins] == ["linter", "formatter"]
    second = plugins.install("linter@team")
    assert second["gitCommitSha"] == git("rev-parse", "HEAD", cwd=source) != commit
    assert not Path(first["installPath"]).exists()  # the older copy is gone
    assert plugins.remove_marketplace("team") == ["linter@team"]
    assert not market.root.exists() and "team" not in plugins.marketplaces()


def test_a_plugin_kept_in_another_git_repository_is_cloned_at_its_commit(tmp_path: Path) -> None:
    lone = plugin(tmp_path / "lone-src", "lone-plugin").parent
    plugin_remote = bare_remote(lone, tmp_path / "lone.git")
    market = marketplace(tmp_path / "market", "mixed", [
        {"name": "lone-plugin", "source": {"source": "url", "url": f"file://{plugin_remote}"}},
        {"name": "sub", "source": {"source": "git-subdir", "url": f"file://{plugin_remote}", "path": "lone-plugin"}},
        {"name": "inline", "source": "./inline", "strict": False, "description": "from the entry",
         "commands": ["./extra.md"]},
    ])
    (market / "inline").mkdir()
    (market / "inline" / "extra.md").write_text("---\ndescription: extra\n---\nExtra.\n")
    plugins = store(tmp_path)
    plugins.add_marketplace(str(market))
    record = plugins.install("lone-plugin@mixed")
    assert record["gitCommitSha"] == git("rev-parse", "HEAD", cwd=lone)
    assert (Path(record["installPath"]) / "lone-plugin" / ".claude-plugin" / "plugin.json").is_file()
    sub = Path(plugins.install("sub@mixed")["installPath"])
    assert (sub / ".claude-plugin" / "plugin.json").is_file() and not (sub / ".git").exists()
    inline = Path(plugins.install("inline@mixed")["installPath"])
    manifest = json.loads((inline / ".claude-plugin" / "plugin.json").read_text())
    assert manifest == {"name": "inline", "description": "from the entry", "commands": ["./extra.md"]}


def test_an_unreachable_source_is_an_error_naming_it(tmp_path: Path) -> None:
    plugins = store(tmp_path)
    with pytest.raises(MarketplaceError, match=r"cannot fetch file://.*/missing\.git: .*does not appear to be a git repository"):
        plugins.add_marketplace(f"file://{tmp_path}/missing.git")
    with pytest.raises(MarketplaceError, match="is not a Claude Code marketplace"):
        plugins.add_marketplace(str(tmp_path))
    with pytest.raises(MarketplaceError, match="no marketplace named 'nowhere'"):
        plugins.install("x@nowhere")
    assert not (tmp_path / "data" / "claude-code" / "marketplaces").exists()


def test_a_claude_code_users_installs_are_used_in_place_and_never_removed(tmp_path: Path) -> None:
    installed = plugin(tmp_path / "claude" / "plugins" / "cache" / "claude-code-plugins", "hookify")
    market = local_marketplace(tmp_path / "claude" / "plugins" / "marketplaces" / "claude-code-plugins", plugins=("hookify",))
    claude_home(tmp_path / "claude", installed={"hookify@claude-code-plugins": installed},
                known={"claude-code-plugins": market})
    plugins = store(tmp_path)
    assert plugins.resolve("hookify@claude-code-plugins") == installed
    assert plugins.marketplaces()["claude-code-plugins"].origin == "claude-code"
    with pytest.raises(MarketplaceError, match="was installed by Claude Code"):
        plugins.uninstall("hookify@claude-code-plugins")
    assert installed.is_dir()
    assert not (tmp_path / "data" / "claude-code" / "cache").exists()  # nothing copied


def test_enabling_is_recorded_and_wins_over_user_settings(tmp_path: Path) -> None:
    plugins = store(tmp_path)
    plugins.set_enabled("a@m", False)
    assert plugins.effective_enabled({"a@m": True, "b@m": True}) == {"a@m": False, "b@m": True}
    plugins.set_enabled("a@m", None)
    assert plugins.effective_enabled({"a@m": True}) == {"a@m": True}
    with pytest.raises(MarketplaceError, match="write name@marketplace"):
        plugins.set_enabled("nomarket", True)


def test_installing_from_a_marketplace_settings_declare_adds_it_first(tmp_path: Path) -> None:
    remote = bare_remote(local_marketplace(tmp_path / "src", name="team", plugins=("linter",)), tmp_path / "team.git")
    plugins = store(tmp_path)
    declared = {"team": {"source": "git", "url": f"file://{remote}"}}
    assert plugins.marketplaces(declared)["team"].root is None  # declared only
    record = plugins.install("linter@team", declared)
    assert Path(record["installPath"]).is_dir()
    assert plugins.marketplaces()["team"].origin == "here"
