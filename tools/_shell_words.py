"""A conservative reading of a POSIX shell command line, for confirmation rules.

Contract: `analyse(command)` splits a command line into simple commands (lists of
words, quotes removed) at the control operators `&&`, `||`, `;`, `|`, `|&`, `&` and
newlines, and reports whether the line is *plain*: nothing in it but words and those
operators. Anything a prefix rule cannot see through makes it not plain, with a reason:
command or process substitution (`$(…)`, backticks, `<(…)`), parameter expansion with
braces (`${…}`, which can hide substitutions), redirections (`>`, `<`, heredocs),
subshells and grouping parentheses, comments, and unbalanced quotes. A rule may only
allow a command that is plain and whose every simple command it allows.

`loose_words(command)` is the opposite, deliberately over-inclusive reading used for
deny rules on non-plain lines: every run of characters between shell punctuation.

Pure: no I/O, no execution; this is a lexer, not a shell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CommandLine", "analyse", "loose_words"]


@dataclass(frozen=True)
class CommandLine:
    """The outcome of `analyse`."""

    segments: tuple[tuple[str, ...], ...]
    """Words of each simple command, in order; empty commands are dropped."""
    plain: bool
    """True when only words and control operators occur (see module contract)."""
    reason: str | None = None
    """Why the line is not plain, for messages."""


class _NotPlain(Exception):
    def __init__(self, reason: str) -> None:
        self.reason = reason


def _split(command: str) -> list[list[str]]:
    segments: list[list[str]] = [[]]
    word: list[str] = []
    in_word = False
    i = 0
    n = len(command)

    def end_word() -> None:
        nonlocal word, in_word
        if in_word:
            segments[-1].append("".join(word))
        word, in_word = [], False

    def new_segment() -> None:
        end_word()
        segments.append([])

    while i < n:
        char = command[i]
        nxt = command[i + 1] if i + 1 < n else ""
        if char == "\\":
            if nxt == "\n":  # line continuation
                i += 2
                continue
            if nxt == "":
                raise _NotPlain("it ends with a lone backslash")
            word.append(nxt)
            in_word = True
            i += 2
            continue
        if char == "'":
            end = command.find("'", i + 1)
            if end == -1:
                raise _NotPlain("it has an unterminated quote")
            word.append(command[i + 1 : end])
            in_word = True
            i = end + 1
            continue
        if char == '"':
            i += 1
            in_word = True
            while True:
                if i >= n:
                    raise _NotPlain("it has an unterminated quote")
                c = command[i]
                if c == '"':
                    i += 1
                    break
                if c == "\\" and i + 1 < n and command[i + 1] in '$`"\\\n':
                    if command[i + 1] != "\n":
                        word.append(command[i + 1])
                    i += 2
                    continue
                if c == "`" or (c == "$" and i + 1 < n and command[i + 1] in "({"):
                    raise _NotPlain("it uses command substitution or expansion")
                word.append(c)
                i += 1
            continue
        if char in " \t":
            end_word()
            i += 1
            continue
        if char == "\n" or char == ";":
            new_segment()
            i += 1
            continue
        if char == "&":
            if nxt == ">":
                raise _NotPlain("it redirects output")
            new_segment()
            i += 2 if nxt == "&" else 1
            continue
        if char == "|":
            new_segment()
            i += 2 if nxt and nxt in "|&" else 1
            continue
        if char in "<>":
            raise _NotPlain("it redirects input or output")
        if char == "`" or (char == "$" and nxt in ("(", "{")):
            raise _NotPlain("it uses command substitution or expansion")
        if char in "()":
            raise _NotPlain("it uses a subshell or grouping")
        if char == "#" and not in_word:
            raise _NotPlain("it contains a comment")
        word.append(char)
        in_word = True
        i += 1
    end_word()
    return segments


def analyse(command: str) -> CommandLine:
    """Split `command` into simple commands and decide whether it is plain."""
    try:
        segments = _split(command)
    except _NotPlain as exc:
        return CommandLine(tuple(tuple(s) for s in _best_effort(command)), False, exc.reason)
    return CommandLine(tuple(tuple(s) for s in segments if s), True)


def _best_effort(command: str) -> list[list[str]]:
    """Segments of a non-plain line, split naively; only ever used to find *more* matches."""
    parts = re.split(r"&&|\|\||[;|&\n]", command)
    return [p.split() for p in parts if p.split()]


_PUNCTUATION = re.compile(r"[\s;&|()`$<>\"'{}\\]+")


def loose_words(command: str) -> list[str]:
    """Every token between shell punctuation, quotes dropped: over-inclusive on purpose."""
    return [w for w in _PUNCTUATION.split(command) if w]
