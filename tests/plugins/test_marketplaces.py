"""Marketplace files, sources and Claude Code's install records in their published shapes (``plugins.marketplaces``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plugins.marketplaces import (
    MarketplaceError,
    parse_source,
    read_installed_plugins,
    read_known_marketplaces,
    read_marketplace,
)
from tests.host.runtime.customizations.claude_fixtures import claude_home, marketplace


def test_sources_as_a_user_types_them(tmp_path: Path) -> None:
    assert parse_source("anthropics/claude-code").git_url == "https://github.com/anthropics/claude-code.git"
    assert parse_source("https://gitlab.com/team/plugins.git").kind == "git"
    assert parse_source("git@github.com:acme/tools.git").kind == "git"
    assert parse_source("owner/repo#v2").ref == "v2"
    (tmp_path / "m").mkdir()
    assert parse_source("./m", base=tmp_path).location == str(tmp_path / "m")
    with pytest.raises(MarketplaceError, match="give a GitHub owner/repo, a git URL, or a folder"):
        parse_source("not a source")


def test_sources_as_settings_write_them() -> None:
    assert parse_source({"source": "github", "repo": "acme/tools", "ref": "main"}).to_settings() == {
        "source": "github", "repo": "acme/tools", "ref": "main"}
    assert parse_source({"source": "git", "url": "https://example.com/x.git"}).git_url == "https://example.com/x.git"
    assert parse_source({"source": "directory", "path": "/opt/m"}).kind == "directory"
    assert parse_source({"source": "file", "path": "/opt/m/.claude-plugin/marketplace.json"}).location == "/opt/m"
    with pytest.raises(MarketplaceError, match="unsupported marketplace source"):
        parse_source({"source": "npm", "package": "x"})
    with pytest.raises(MarketplaceError, match="marketplace.json address, which this host does not download"):
        parse_source({"source": "url", "url": "https://example.com/marketplace.json"})


def test_a_marketplace_in_anthropics_shape_lists_its_plugins_with_their_sources(tmp_path: Path) -> None:
    marketplace(tmp_path, "claude-code-plugins", [
        {"name": "commit-commands", "source": "./plugins/commit-commands", "version": "1.0.0", "category": "productivity"},
        {"name": "remote-one", "source": {"source": "github", "repo": "acme/remote-one", "sha": "a" * 40}},
        {"name": "gitlab-one", "source": {"source": "url", "url": "https://gitlab.com/t/p.git", "ref": "main"}},
        {"name": "npm-one", "source": {"source": "npm", "package": "@x/y"}},
        {"name": "escape", "source": "../outside"},
        {"description": "no name"},
        {"name": "commit-commands", "source": "./again"},
    ])
    market = read_marketplace(tmp_path)
    assert market.name == "claude-code-plugins" and market.owner == "Anthropic"
    kinds = {entry.name: (entry.source.kind, entry.source.describe()) for entry in market.plugins}
    assert kinds["commit-commands"] == ("path", "./plugins/commit-commands")
    assert kinds["remote-one"] == ("git", "acme/remote-one")
    assert kinds["gitlab-one"] == ("git", "https://gitlab.com/t/p.git#main")
    assert kinds["npm-one"][0] == "unsupported" and "'npm' sources are not supported" in kinds["npm-one"][1]
    assert kinds["escape"][0] == "unsupported" and "leaves the marketplace" in kinds["escape"][1]
    assert len(market.problems) == 2 and "listed twice" in market.problems[1]


def test_plugin_root_places_bare_names(tmp_path: Path) -> None:
    marketplace(tmp_path, "m", [{"name": "x", "source": "x"}])
    data = json.loads((tmp_path / ".claude-plugin" / "marketplace.json").read_text())
    data["metadata"] = {"pluginRoot": "./plugins"}
    (tmp_path / ".claude-plugin" / "marketplace.json").write_text(json.dumps(data))
    assert read_marketplace(tmp_path).plugins[0].source.path == "plugins/x"


def test_a_folder_without_a_marketplace_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(MarketplaceError, match="has no .claude-plugin/marketplace.json"):
        read_marketplace(tmp_path)
    (tmp_path / ".claude-plugin").mkdir()
    (tmp_path / ".claude-plugin" / "marketplace.json").write_text("[1, 2]")
    with pytest.raises(MarketplaceError, match="expected a JSON object"):
        read_marketplace(tmp_path)


def test_claude_codes_install_records_are_read_in_both_versions(tmp_path: Path) -> None:
    home = claude_home(tmp_path / "claude", installed={"a@m": tmp_path / "a"}, known={"m": tmp_path / "market"})
    installed, problem = read_installed_plugins(home)
    assert problem is None and installed["a@m"]["installPath"] == str(tmp_path / "a")
    known, _ = read_known_marketplaces(home)
    assert known["m"]["installLocation"] == str(tmp_path / "market")
    (home / "plugins" / "installed_plugins.json").write_text(json.dumps({"version": 1, "plugins": {
        "b@m": {"version": "1.0.0", "installPath": "/x/b", "gitCommitSha": "abc", "isLocal": True}}}))
    assert read_installed_plugins(home)[0]["b@m"]["installPath"] == "/x/b"
    (home / "plugins" / "installed_plugins.json").write_text("{broken")
    installed, problem = read_installed_plugins(home)
    assert installed == {} and problem is not None and "not valid JSON" in problem
