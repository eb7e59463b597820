"""Claude Code settings files read and layered as Claude Code reads them (``plugins.claude_settings``)."""

from __future__ import annotations

import json
from pathlib import Path

from plugins.claude_settings import (
    claude_config_dir,
    merge_layers,
    permission_rules,
    read_settings,
    settings_paths,
)

# The shape of a real ~/.claude/settings.json (keys this host does not act on included).
USER_SETTINGS = {
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "model": "opus",
    "includeCoAuthoredBy": False,
    "permissions": {
        "allow": ["Bash(npm run test:*)", "Read(~/.zshrc)", "WebFetch(domain:github.com)"],
        "deny": ["Read(./.env)", "Bash(curl:*)"],
        "ask": ["Bash(git push:*)"],
        "additionalDirectories": ["~/shared-docs"],
        "defaultMode": "acceptEdits",
    },
    "env": {"DISABLE_TELEMETRY": "1", "MAX_RETRIES": 3},
    "enabledPlugins": {"commit-commands@claude-code-plugins": True, "hookify@claude-code-plugins": False},
    "extraKnownMarketplaces": {"team-tools": {"source": {"source": "github", "repo": "acme/claude-tools"}}},
    "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo checked"}]}]},
}


def test_the_config_dir_is_claude_config_dir_else_dot_claude_in_home(tmp_path: Path) -> None:
    assert claude_config_dir({"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}, home="/nowhere") == tmp_path / "cfg"
    assert claude_config_dir({}, home=tmp_path) == tmp_path / ".claude"


def test_a_user_settings_file_in_the_published_shape_is_read_without_diagnostics(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(USER_SETTINGS))
    layer = read_settings(path, "user", home="/home/me")
    assert layer.exists and layer.has_hooks
    assert layer.enabled_plugins == {"commit-commands@claude-code-plugins": True, "hookify@claude-code-plugins": False}
    assert layer.marketplaces == {"team-tools": {"source": "github", "repo": "acme/claude-tools"}}
    assert layer.env == {"DISABLE_TELEMETRY": "1", "MAX_RETRIES": "3"}
    assert layer.permissions.additional_directories == ("/home/me/shared-docs",)
    assert layer.permissions.default_mode == "accept-edits"
    assert layer.diagnostics == ()


def test_permission_rules_become_this_hosts_rules_and_unknown_tools_are_noted(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    path = project / ".claude" / "settings.json"
    path.write_text(json.dumps({"permissions": USER_SETTINGS["permissions"]}))
    rules, notes = permission_rules(read_settings(path, "project", home="/home/me"), home="/home/me")
    assert rules["allow"] == ["shell(npm run test:*)", "read_file(/home/me/.zshrc)", "glob(/home/me/.zshrc)",
                              "grep(/home/me/.zshrc)", "list_dir(/home/me/.zshrc)"]
    assert rules["deny"][:1] == ["read_file(.env)"] and "shell(curl:*)" in rules["deny"]
    assert rules["ask"] == ["shell(git push:*)"]
    assert [(n.severity.value, n.message) for n in notes] == [
        ("info", "'WebFetch(domain:github.com)' names a tool this host does not have; ignored")]


def test_a_malformed_key_is_a_diagnostic_naming_it_and_the_rest_of_the_file_still_counts(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({
        "enabledPlugins": {"no-marketplace": True, "ok@market": "yes", "good@market": True},
        "permissions": {"allow": "Bash(ls)", "deny": ["Bash(rm:*)", 7], "defaultMode": "yolo"},
        "env": ["A=1"],
        "extraKnownMarketplaces": {"broken": {"repo": "x/y"}},
    }))
    layer = read_settings(path, "user")
    assert layer.enabled_plugins == {"good@market": True}
    assert layer.permissions.deny == ("Bash(rm:*)",) and layer.permissions.allow == ()
    assert layer.permissions.default_mode is None and layer.env == {} and layer.marketplaces == {}
    shown = [str(d) for d in layer.diagnostics]
    assert any("enabledPlugins ==> no-marketplace: expected a plugin id" in line for line in shown)
    assert any("enabledPlugins ==> ok@market: expected true or false" in line for line in shown)
    assert any("permissions ==> allow: expected a list of strings" in line for line in shown)
    assert any("permissions ==> deny ==> 1: expected a non-empty string" in line for line in shown)
    assert any("permissions ==> defaultMode: expected one of default, acceptEdits" in line for line in shown)
    assert any("env: expected an object" in line for line in shown)
    assert any("extraKnownMarketplaces ==> broken" in line for line in shown)
    assert all(d.severity.value == "problem" for d in layer.diagnostics)


def test_a_file_that_is_not_json_is_one_diagnostic_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"enabledPlugins": {')
    layer = read_settings(path, "user")
    assert layer.exists and layer.enabled_plugins == {}
    assert len(layer.diagnostics) == 1 and "not valid JSON" in layer.diagnostics[0].message


def test_layers_merge_as_claude_code_does_local_over_project_over_user(tmp_path: Path) -> None:
    config, project = tmp_path / "cfg", tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    config.mkdir()
    (config / "settings.json").write_text(json.dumps({
        "enabledPlugins": {"a@m": True, "b@m": True}, "env": {"X": "user", "Y": "user"},
        "permissions": {"allow": ["Bash(ls)"], "defaultMode": "plan"}}))
    (project / ".claude" / "settings.json").write_text(json.dumps({
        "enabledPlugins": {"b@m": False, "c@m": True}, "env": {"X": "project"}, "permissions": {"deny": ["Bash(rm:*)"]}}))
    (project / ".claude" / "settings.local.json").write_text(json.dumps({
        "enabledPlugins": {"c@m": False}, "permissions": {"allow": ["Bash(ls)", "Bash(make)"], "defaultMode": "default"}}))
    layers = [read_settings(path, scope) for scope, path in settings_paths(config, project)]
    merged = merge_layers(layers)
    assert merged.enabled_plugins == {"a@m": True, "b@m": False, "c@m": False}
    assert merged.env == {"X": "project", "Y": "user"}
    assert merged.permissions.allow == ("Bash(ls)", "Bash(make)")
    assert merged.permissions.deny == ("Bash(rm:*)",)
    assert merged.permissions.default_mode == "default"


def test_project_relative_rule_paths_are_placed_in_the_project(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    path = project / ".claude" / "settings.json"
    path.write_text(json.dumps({"permissions": {"deny": ["Edit(/secrets/**)"], "additionalDirectories": ["../lib"]}}))
    layer = read_settings(path, "project")
    rules, _ = permission_rules(layer)
    assert f"write_file({project}/secrets/**)" in rules["deny"] and f"edit_file({project}/secrets/**)" in rules["deny"]
    assert layer.permissions.additional_directories == (str(tmp_path / "lib"),)
