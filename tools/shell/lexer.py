"""The one lexer of POSIX shell command lines (never executes anything).

Hand-written because no maintained library fits: ``shlex`` splits words but knows no control
operators, redirections, substitutions or heredocs, and real shell parsers (bashlex) are
unmaintained and fail on everyday input. This lexer is deliberately small and conservative.

Contract: ``lex(command)`` returns a ``Lexed``:

* ``tokens``: ``Word`` (quotes removed, expansions kept literally; flags say whether it holds an
  expansion known only at run time, a command substitution, or an unquoted glob),
  ``Operator`` (``&&``, ``||``, ``;``, ``;;``, ``|``, ``|&``, ``&``, ``(``, ``)``, newline) and
  ``Redirect`` (``>``, ``>>``, ``>|``, ``&>``, ``&>>``, ``<``, ``<<``, ``<<-``, ``<<<``, ``<>``,
  ``<&``, ``>&``). A digit word right before a redirection is its file descriptor and is dropped.
  Heredoc bodies are skipped.
* ``nested``: the text of every ``$(…)``, backtick and ``<(…)``/``>(…)`` substitution, to be
  read as command lines too.
* ``opaque``: in order of appearance, each reason a rule cannot see through the line: a
  redirection, a subshell or grouping, a substitution or ``${…}`` expansion, a comment, an
  unterminated quote, a lone trailing backslash. Empty for a *plain* line. (A bare ``$NAME`` is
  not opaque: it cannot run anything.)

Tolerant: it never raises; unterminated constructs run to the end of the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Word", "Operator", "Redirect", "Token", "Lexed", "lex", "CONTROL_OPERATORS"]

CONTROL_OPERATORS = frozenset({"&&", "||", ";", ";;", "|", "|&", "&", "\n"})
"""Operators that end one simple command and start the next."""

REDIRECTS = "it redirects input or output"
SUBSHELL = "it uses a subshell or grouping"
SUBSTITUTION = "it uses command substitution or expansion"
COMMENT = "it contains a comment"
UNTERMINATED = "it has an unterminated quote"
BACKSLASH = "it ends with a lone backslash"


@dataclass
class Word:
    text: str
    """The word with quotes removed; expansions are kept literally."""
    dynamic: bool = False
    """Contains an expansion (``$NAME``, ``${…}``, ``$(…)``, backticks) known only at run time."""
    substituted: bool = False
    """Contains ``$(…)``, ``${…}``, backticks or ``<(…)``: something a rule cannot see through."""
    glob: bool = False
    """Contains an unquoted ``*``, ``?`` or ``[``."""


@dataclass(frozen=True)
class Operator:
    op: str


@dataclass(frozen=True)
class Redirect:
    op: str


Token = Word | Operator | Redirect


@dataclass
class Lexed:
    tokens: list[Token] = field(default_factory=list)
    nested: list[str] = field(default_factory=list)
    opaque: list[str] = field(default_factory=list)


def matching(text: str, start: int, opener: str, closer: str) -> int:
    """Index just past the ``closer`` that balances ``text[start]`` (an opener); len on none."""
    depth = 0
    i = start
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            end = text.find("'", i + 1)
            i = len(text) if end == -1 else end + 1
            continue
        if c == opener:
            depth += 1
        elif c == closer:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]")
_REDIRECT = re.compile(r"&>>|&>|<<<|<<-|<<|<>|<&|>>|>\||>&|>|<")
_OPERATOR = re.compile(r"&&|\|\||;;|\|&|[;&|()\n]")


def lex(command: str) -> Lexed:
    """Tokens, nested substitutions and opaque constructs of one command line."""
    out = Lexed()
    tokens, nested, opaque = out.tokens, out.nested, out.opaque
    word: Word | None = None
    quoted = False  # whether the current word had quotes (so "2">x is not an fd number)
    heredocs: list[tuple[str, bool]] = []
    expect_heredoc_word = False
    n = len(command)
    i = 0

    def note(reason: str) -> None:
        if reason not in opaque:
            opaque.append(reason)

    def chars(text: str) -> Word:
        nonlocal word
        if word is None:
            word = Word("")
        word.text += text
        return word

    def end_word() -> None:
        nonlocal word, quoted, expect_heredoc_word
        if word is not None:
            if expect_heredoc_word:
                heredocs.append((word.text, tokens[-1] == Redirect("<<-")))
                expect_heredoc_word = False
            tokens.append(word)
        word, quoted = None, False

    def substituted(text: str) -> None:
        w = chars(text)
        w.dynamic = w.substituted = True
        note(SUBSTITUTION)

    def substitution(at: int) -> int:
        """Handle ``$(``, ``$((``, ``${``, ``$NAME``, backticks at ``at``; return the next index."""
        c = command[at]
        if c == "`":
            end = command.find("`", at + 1)
            end = n if end == -1 else end
            nested.append(command[at + 1 : end])
            substituted(command[at : end + 1])
            return end + 1
        nxt = command[at + 1] if at + 1 < n else ""
        if nxt == "(":
            end = matching(command, at + 1, "(", ")")
            nested.append(command[at + 2 : end - 1])
            substituted(command[at:end])
            return end
        if nxt == "{":
            end = matching(command, at + 1, "{", "}")
            substituted(command[at:end])
            return end
        match = _VARIABLE.match(command, at + 1)
        if match:
            chars("$" + match.group(0)).dynamic = True
            return match.end()
        chars("$")
        return at + 1

    while i < n:
        c = command[i]
        nxt = command[i + 1] if i + 1 < n else ""
        if c == "\\":
            if nxt == "":
                note(BACKSLASH)
            elif nxt != "\n":  # a backslash-newline continues the line
                chars(nxt)
            i += 2
        elif c == "'":
            end = command.find("'", i + 1)
            if end == -1:
                note(UNTERMINATED)
                end = n
            chars(command[i + 1 : end])
            quoted = True
            i = end + 1
        elif c == '"':
            quoted = True
            chars("")
            i += 1
            while i < n and command[i] != '"':
                d = command[i]
                if d == "\\" and i + 1 < n and command[i + 1] in '$`"\\\n':
                    if command[i + 1] != "\n":
                        chars(command[i + 1])
                    i += 2
                elif d in "$`":
                    i = substitution(i)
                else:
                    chars(d)
                    i += 1
            if i >= n:
                note(UNTERMINATED)
            i += 1
        elif c in "$`":
            i = substitution(i)
        elif c in " \t":
            end_word()
            i += 1
        elif c == "#" and word is None:
            note(COMMENT)
            end = command.find("\n", i)
            i = n if end == -1 else end
        elif c in "<>" and nxt == "(":  # process substitution
            end = matching(command, i + 1, "(", ")")
            nested.append(command[i + 2 : end - 1])
            substituted(command[i:end])
            i = end
        elif c in "<>" or (c == "&" and nxt == ">"):
            if word is not None and not quoted and word.text.isdigit() and not word.dynamic:
                word, quoted = None, False  # an fd number: 2>file
            end_word()
            op = _REDIRECT.match(command, i).group(0)  # type: ignore[union-attr]  # c starts a redirect
            tokens.append(Redirect(op))
            note(REDIRECTS)
            expect_heredoc_word = op in ("<<", "<<-")
            i += len(op)
        elif c in ";&|()\n":
            end_word()
            op = _OPERATOR.match(command, i).group(0)  # type: ignore[union-attr]  # c starts an operator
            tokens.append(Operator(op))
            if op in "()":
                note(SUBSHELL)
            i += len(op)
            if op == "\n" and heredocs:
                i = _skip_heredocs(command, i, heredocs)
                heredocs = []
        else:
            w = chars(c)
            if c in "*?[" and not quoted:
                w.glob = True
            i += 1
    end_word()
    return out


def _skip_heredocs(command: str, i: int, heredocs: list[tuple[str, bool]]) -> int:
    """Skip the bodies of pending heredocs starting at ``i``; return the index after them."""
    lines = command[i:].split("\n")
    consumed = 0
    for delimiter, strip_tabs in heredocs:
        while consumed < len(lines):
            line = lines[consumed]
            consumed += 1
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                break
    return i + sum(len(line) + 1 for line in lines[:consumed])
