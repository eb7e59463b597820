"""What a command's or skill's body holds beyond plain text: shell commands, arguments, plugin
variables. Pure functions on strings.

Contract:
- Shell commands run before the prompt reaches the model are written two ways, as in Claude
  Code: an inline ``!`cmd``` span, or a fenced block opened with ````` ```! ````` on its own line
  and closed by ````` ``` ````` (its lines are one shell script). :data:`BANG_COMMAND` finds both
  (a fenced block first, so the inline form inside one is part of its script);
  :func:`bang_command` is the shell text of one match and :func:`replace_bang_commands` puts
  something in place of each.
- :func:`expand_plugin_variables` replaces ``${CLAUDE_PLUGIN_ROOT}`` (and ``${PLUGIN_ROOT}``,
  ``${PLUGIN_DATA}``, ``${CLAUDE_PLUGIN_DATA}``, ``${CLAUDE_SKILL_DIR}`` when given) in a body:
  as plain text in prose, and shell-quoted when needed inside a shell command, so a plugin
  installed under a folder with spaces still runs. Other ``${...}`` text is left alone (a shell
  expands it when a command runs).
- :func:`substitute_arguments`: ``$ARGUMENTS`` / ``${ARGUMENTS}`` is the whole text typed after
  the slash name, ``$1`` ... ``$9`` its shell-style words (first word is ``$1``, as in Claude Code
  commands), ``$ARGUMENTS[N]`` the word N counted from 0 (Claude Code skills); a missing word is
  empty. When the body uses none of them and something was typed, ``ARGUMENTS: <text>`` is
  appended, which is what Claude Code does, so nothing the user typed is lost.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping

__all__ = [
    "BANG_COMMAND",
    "bang_command",
    "expand_plugin_variables",
    "replace_bang_commands",
    "substitute_arguments",
]

BANG_COMMAND = re.compile(
    r"^```![ \t]*\n(?P<block>.*?)^```[ \t]*$"  # a fenced ```! block: its lines are one script
    r"|!`(?P<inline>[^`\n]+)`",  # an inline !`cmd`
    re.MULTILINE | re.DOTALL,
)
"""A shell command in a command's or skill's body, run before the prompt reaches the model."""

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ARGUMENT = re.compile(r"\$ARGUMENTS\[(\d+)\]|\$\{ARGUMENTS\}|\$ARGUMENTS\b|\$([1-9])(?![0-9])")


def bang_command(match: re.Match[str]) -> str:
    """The shell text of one :data:`BANG_COMMAND` match."""
    block = match.group("block")
    return block.rstrip("\n") if block is not None else match.group("inline")


def replace_bang_commands(text: str, replace: Callable[[str], str]) -> str:
    """``text`` with each shell command replaced by ``replace(command)``."""
    return BANG_COMMAND.sub(lambda match: replace(bang_command(match)), text)


def expand_plugin_variables(body: str, variables: Mapping[str, str]) -> str:
    """``body`` with the plugin's own ``${NAME}`` variables filled in (see the module docstring)."""
    if not variables or "${" not in body:
        return body

    def plain(text: str) -> str:
        return _VARIABLE.sub(lambda m: variables.get(m.group(1), m.group(0)), text)

    def quoted(text: str) -> str:
        def one(m: re.Match[str]) -> str:
            value = variables.get(m.group(1))
            if value is None:
                return m.group(0)
            return value if shlex.quote(value) == value else shlex.quote(value)

        return _VARIABLE.sub(one, text)

    out: list[str] = []
    last = 0
    for match in BANG_COMMAND.finditer(body):
        out.append(plain(body[last:match.start()]))
        out.append(quoted(match.group(0)))
        last = match.end()
    out.append(plain(body[last:]))
    return "".join(out)


def substitute_arguments(body: str, arguments: str) -> str:
    """Fill a command/skill/prompt body with what the user typed after the slash name."""
    arguments = arguments.strip()
    try:
        words = shlex.split(arguments)
    except ValueError:  # unbalanced quotes: fall back to plain whitespace words
        words = arguments.split()
    used = False

    def word(index: int) -> str:
        return words[index] if 0 <= index < len(words) else ""

    def replace(match: re.Match[str]) -> str:
        nonlocal used
        used = True
        if match.group(1) is not None:
            return word(int(match.group(1)))
        if match.group(2) is not None:
            return word(int(match.group(2)) - 1)
        return arguments

    result = _ARGUMENT.sub(replace, body)
    if not used and arguments:
        result = result.rstrip("\n") + f"\n\nARGUMENTS: {arguments}"
    return result
