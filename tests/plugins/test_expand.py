"""``plugins.expand``: plugin variables in hook commands and MCP config strings, expanded as a
POSIX shell expands them (checked against ``sh`` itself)."""

from __future__ import annotations

import subprocess

import pytest

from plugins.expand import expand_config, expand_hook_command

ROOT = {"CLAUDE_PLUGIN_ROOT": "/opt/plugin", "PLUGIN_ROOT": "/opt/plugin"}


def _sh(command: str, env: dict[str, str]) -> str:
    return subprocess.run(["sh", "-c", f"printf '%s' {command}"], env={"PATH": "/usr/bin:/bin", **env},
                          capture_output=True, text=True, check=True, timeout=10).stdout


@pytest.mark.parametrize("command", [
    "${CLAUDE_PLUGIN_ROOT:-${PLUGIN_ROOT:-}}/hooks/start.sh",  # claude-mem's hooks
    "${CLAUDE_PLUGIN_ROOT}/a",
    "${CLAUDE_PLUGIN_ROOT-/fallback}/b",
    "${MISSING:-${CLAUDE_PLUGIN_ROOT}}/c",
    "${CLAUDE_PLUGIN_ROOT:+set}",
    "\"${CLAUDE_PLUGIN_ROOT}/d e\"",
])
def test_a_hook_command_means_what_sh_makes_of_it_with_the_plugins_variables_set(command: str) -> None:
    assert _sh(expand_hook_command(command, ROOT), {}) == _sh(command, ROOT)


def test_only_plugin_variables_are_filled_in_a_hook_command_the_shell_does_the_rest() -> None:
    assert expand_hook_command("${TMPDIR:-/tmp} ${#X} ${CLAUDE_PLUGIN_ROOT%/}", ROOT) == "${TMPDIR:-/tmp} ${#X} ${CLAUDE_PLUGIN_ROOT%/}"
    assert expand_hook_command("${CLAUDE_PLUGIN_ROOT}/x", {"CLAUDE_PLUGIN_ROOT": "/a b"}) == "'/a b'/x"


def test_a_config_string_takes_nested_defaults_and_leaves_unset_variables_as_written() -> None:
    assert expand_config("${A:-${B:-z}}|${CLAUDE_PLUGIN_ROOT}|${UNSET}|${E:-e}|${E-f}", ROOT, {"B": "b", "E": ""}) == "b|/opt/plugin|${UNSET}|e|"
