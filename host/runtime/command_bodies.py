"""What a slash command's body may hold that runs before its prompt reaches the model.

Claude Code's commands and skills embed shell commands as ``!`cmd``` spans and ```` ```! ````
fenced blocks: the turn runs each (as a shell tool call, under the session's confirmation rules
and the turn's grants) and puts its output in their place; an untrusted folder's commands get a
note in their place instead. The pattern lives with the other body rules in ``plugins.bodies``;
this module is the turn machinery's one door to it.

:func:`context_rules` is what a trusted command's own shell commands grant themselves: Claude
Code runs read-only commands without asking (``git status``, ``git diff``, ``git log``, ``git
branch --show-current``...), and published commands rely on it for the context they gather
(commit-commands' ``/commit`` lists only ``git add``, ``git status`` and ``git commit`` in its
``allowed-tools`` but reads ``git diff HEAD``, the branch and the log). Each such command, when
every command of its line is on the short read-only list below and the line is plain (no
redirection, substitution or subshell: ``tools.shell.lines``), becomes an exact allow rule for
its turn; anything else is decided by the rules as usual.
"""

from __future__ import annotations

import shlex

from plugins.bodies import BANG_COMMAND, bang_command, replace_bang_commands
from tools.shell.lines import analyse

__all__ = ["BANG_COMMAND", "bang_command", "context_rules", "replace_bang_commands"]

_READ_ONLY_GIT = frozenset({"status", "diff", "log", "show", "rev-parse", "ls-files", "describe", "shortlog",
                            "blame", "cat-file", "merge-base", "rev-list"})
"""git subcommands that only read (whatever their arguments, except ``--output``)."""
_LISTING_GIT = {
    "branch": frozenset({"--show-current", "--list", "-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose",
                         "--no-color", "--merged", "--no-merged"}),
    "remote": frozenset({"-v", "--verbose"}),
    "tag": frozenset({"--list", "-l"}),
    "stash": frozenset({"list"}),
}
"""git subcommands that only read when every argument is one of these."""
_READ_ONLY_PROGRAMS = frozenset({"pwd", "ls", "date", "whoami", "uname", "echo", "which", "true"})


def _read_only(words: tuple[str, ...]) -> bool:
    if not words:
        return False
    program, arguments = words[0], words[1:]
    if program in _READ_ONLY_PROGRAMS:
        return True
    if program != "git" or not arguments:
        return False
    subcommand, rest = arguments[0], arguments[1:]
    if any(word.startswith("--output") for word in rest):
        return False
    if subcommand in _READ_ONLY_GIT:
        return True
    allowed = _LISTING_GIT.get(subcommand)
    return allowed is not None and all(word in allowed for word in rest)


def context_rules(text: str) -> list[str]:
    """Exact ``shell(...)`` allow rules for the read-only shell commands in a command's body."""
    rules: list[str] = []
    for match in BANG_COMMAND.finditer(text):
        line = analyse(bang_command(match))
        if line.plain and line.segments and all(_read_only(words) for words in line.segments):
            rules.extend(f"shell({shlex.join(words)})" for words in line.segments)
    return list(dict.fromkeys(rules))
