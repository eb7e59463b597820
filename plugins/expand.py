"""Variable expansion for plugin config strings (FORMAT.md section 4).

Contract:
- :func:`expand_config` expands, in MCP ``command``/``args``/``env``/``cwd``/``url``/``headers``:
  ``${PLUGIN_ROOT}``, ``${CLAUDE_PLUGIN_ROOT}``, ``${PLUGIN_DATA}`` (only when the host gave a
  data folder), and ``${VAR}`` / ``${VAR:-default}`` from the supplied environment. Any other
  ``${...}`` text, and unset variables without a default, stay literal.
- :func:`expand_hook_command` expands only the plugin variables: everything else in a hook
  command is shell text the shell expands itself (``${TMPDIR:-/tmp}``). A substituted path
  that needs quoting for ``sh`` is shell-quoted.
- :func:`plugin_environment` is the env a plugin subprocess gets on top of the host env:
  ``PLUGIN_ROOT``, ``CLAUDE_PLUGIN_ROOT`` and (if known) ``PLUGIN_DATA``. These override
  same-named entries a plugin declares, so a plugin cannot lie about its own root.
- Pure functions: the environment is passed in, never read from ``os.environ`` here.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path

__all__ = ["expand_config", "expand_hook_command", "plugin_environment", "plugin_variables"]

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def plugin_variables(root: Path, data_dir: Path | None = None) -> dict[str, str]:
    """The plugin's own variables: root under both names, plus the data folder if any."""
    values = {"PLUGIN_ROOT": str(root), "CLAUDE_PLUGIN_ROOT": str(root)}
    if data_dir is not None:
        values["PLUGIN_DATA"] = str(data_dir)
    return values


def plugin_environment(root: Path, data_dir: Path | None = None) -> dict[str, str]:
    """Env vars exported to every plugin subprocess (hooks and MCP servers)."""
    return plugin_variables(root, data_dir)


def expand_config(value: str, plugin_vars: Mapping[str, str], environ: Mapping[str, str]) -> str:
    """Expand plugin variables first, then host environment variables, in a config string."""

    def replace(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in plugin_vars:
            return plugin_vars[name]
        if name in environ:
            return environ[name]
        if default is not None:
            return default
        return match.group(0)

    return _VAR.sub(replace, value)


def expand_hook_command(command: str, plugin_vars: Mapping[str, str]) -> str:
    """Expand only ``${PLUGIN_ROOT}``-style plugin variables in a shell command."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in plugin_vars:
            return match.group(0)
        value = plugin_vars[name]
        # A path with spaces would split into several words; quote only when needed so the
        # common case stays readable (and keeps working inside author-written double quotes).
        return value if shlex.quote(value) == value else shlex.quote(value)

    return _VAR.sub(replace, command)
