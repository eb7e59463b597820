"""Variable expansion for plugin config strings (FORMAT.md section 4).

Contract:
- :func:`expand_config` expands, in MCP ``command``/``args``/``env``/``cwd``/``url``/``headers``:
  ``${PLUGIN_ROOT}``, ``${CLAUDE_PLUGIN_ROOT}``, ``${PLUGIN_DATA}`` (only when the host gave a
  data folder), and ``${VAR}`` / ``${VAR:-default}`` (and ``-``, ``:+``, ``+``, nested as a POSIX
  shell nests them) from the supplied environment. Any other ``${...}`` text, and unset variables
  without a default, stay literal.
- :func:`expand_hook_command` expands only the plugin variables: everything else in a hook
  command is shell text the shell expands itself (``${TMPDIR:-/tmp}``). A plugin variable's
  default is read as the shell reads it, nested expansions included
  (``${CLAUDE_PLUGIN_ROOT:-${PLUGIN_ROOT:-}}/x`` is the root and ``/x``). A substituted path that
  needs quoting for ``sh`` is shell-quoted.
- :func:`plugin_environment` is the env a plugin subprocess gets on top of the host env:
  ``PLUGIN_ROOT``, ``CLAUDE_PLUGIN_ROOT`` and (if known) ``PLUGIN_DATA``. These override
  same-named entries a plugin declares, so a plugin cannot lie about its own root.
- Pure functions: the environment is passed in, never read from ``os.environ`` here.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path

__all__ = ["expand_config", "expand_hook_command", "plugin_environment", "plugin_variables"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPERATORS = (":-", ":+", "-", "+")
"""The parameter expansions filled in here, as a POSIX shell reads them: ``${V:-word}`` word when V
is unset or empty, ``${V-word}`` when unset; ``${V:+word}`` word when V is set and not empty,
``${V+word}`` when set. A word may hold expansions of its own (``${A:-${B:-}}``)."""

Lookup = Callable[[str], "str | None"]


def _closing(text: str, start: int) -> int:
    """The index of the ``}`` closing the ``${`` at ``start``, nested ``${...}`` counted; -1 if none."""
    depth, index = 0, start
    while index < len(text):
        if text.startswith("${", index):
            depth += 1
            index += 2
            continue
        if text[index] == "}":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return -1


def _substitute(text: str, lookup: Lookup, known: Callable[[str], bool]) -> str:
    """``text`` with each ``${NAME...}`` whose NAME ``known`` accepts expanded (``lookup`` gives
    its value, None when unset); any other ``${...}`` text stays as written."""
    out: list[str] = []
    index = 0
    while (found := text.find("${", index)) != -1:
        end = _closing(text, found)
        if end == -1:
            break
        inner = text[found + 2:end]
        name = _NAME.match(inner)
        rest = inner[name.end():] if name else ""
        operator = next((op for op in _OPERATORS if rest.startswith(op)), None)
        if name is None or not known(name.group(0)) or (rest and operator is None):
            out.append(text[index:found + 2])  # not ours: leave it, but look inside it
            index = found + 2
            continue
        value = lookup(name.group(0))
        word = rest[len(operator):] if operator else ""
        if operator is None:
            replaced = value
        elif operator in (":-", "-"):
            use_word = value is None or (operator == ":-" and value == "")
            replaced = _substitute(word, lookup, known) if use_word else value
        else:  # :+ and +
            use_word = value is not None and (operator == "+" or value != "")
            replaced = _substitute(word, lookup, known) if use_word else ""
        out.append(text[index:found])
        out.append(text[found:end + 1] if replaced is None else replaced)
        index = end + 1
    out.append(text[index:])
    return "".join(out)


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
    """Expand plugin variables first, then host environment variables, in a config string; an
    unset variable without a default stays as written."""

    def lookup(name: str) -> str | None:
        return plugin_vars[name] if name in plugin_vars else environ.get(name)

    return _substitute(value, lookup, lambda name: True)


def expand_hook_command(command: str, plugin_vars: Mapping[str, str]) -> str:
    """Expand only ``${PLUGIN_ROOT}``-style plugin variables in a shell command, with the shell's
    defaults and alternatives around them (``${CLAUDE_PLUGIN_ROOT:-${PLUGIN_ROOT:-}}``)."""

    def lookup(name: str) -> str | None:
        value = plugin_vars.get(name)
        # A path with spaces would split into several words; quote only when needed so the
        # common case stays readable (and keeps working inside author-written double quotes).
        return value if value is None or shlex.quote(value) == value else shlex.quote(value)

    return _substitute(command, lookup, lambda name: name in plugin_vars)
