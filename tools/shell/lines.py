"""A conservative reading of a command line for confirmation rules (``tools.policy``).

Contract: ``analyse(command)`` splits a command line into simple commands (lists of words,
quotes removed) at the control operators ``&&``, ``||``, ``;``, ``|``, ``|&``, ``&`` and
newlines, and reports whether the line is *plain*: nothing in it but words and those
operators. Anything a prefix rule cannot see through makes it not plain, with the first
reason the lexer met (``tools.shell.lexer``): command or process substitution, ``${…}``,
redirections and heredocs, subshells and grouping, comments, unbalanced quotes. A rule may
only allow a command that is plain and whose every simple command it allows.

``loose_words(command)`` is the opposite, deliberately over-inclusive reading used for deny
rules on lines that are not plain: every run of characters between shell punctuation.

Pure: no I/O, no execution.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .lexer import CONTROL_OPERATORS, Operator, Word, lex

__all__ = ["CommandLine", "analyse", "loose_words"]


@dataclass(frozen=True)
class CommandLine:
    """The outcome of ``analyse``."""

    segments: tuple[tuple[str, ...], ...]
    """Words of each simple command, in order; empty commands are dropped."""
    plain: bool
    """True when only words and control operators occur (see module contract)."""
    reason: str | None = None
    """Why the line is not plain, for messages."""


def analyse(command: str) -> CommandLine:
    """Split ``command`` into simple commands and decide whether it is plain."""
    lexed = lex(command)
    if lexed.opaque:
        return CommandLine(tuple(tuple(s) for s in _best_effort(command)), False, lexed.opaque[0])
    segments: list[list[str]] = [[]]
    for token in lexed.tokens:
        if isinstance(token, Word):
            segments[-1].append(token.text)
        elif isinstance(token, Operator) and token.op in CONTROL_OPERATORS:
            segments.append([])
    return CommandLine(tuple(tuple(s) for s in segments if s), True)


def _best_effort(command: str) -> list[list[str]]:
    """Segments of a line that is not plain, split naively; only ever used to find *more* matches."""
    parts = re.split(r"&&|\|\||[;|&\n]", command)
    return [p.split() for p in parts if p.split()]


_PUNCTUATION = re.compile(r"[\s;&|()`$<>\"'{}\\]+")


def loose_words(command: str) -> list[str]:
    """Every token between shell punctuation, quotes dropped: over-inclusive on purpose."""
    return [w for w in _PUNCTUATION.split(command) if w]
