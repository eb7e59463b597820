"""Finding the writes a shell command line would make outside the allowed roots, before it runs.

Contract: `outside_writes(command, working_directory, extra_roots)` reads a POSIX command line
(it never runs it) and returns one `Finding` per place where the command would write outside
the working directory and the extra roots, or where the host cannot tell where it writes. The
``shell`` tool asks the user again (``ctx.reconfirm``) when the list is not empty.

What counts as a write:
* output redirections to a file: ``>``, ``>>``, ``>|``, ``&>``, ``&>>``, ``<>``, ``N>``,
  ``>& file`` (``/dev/null``, ``/dev/stdout``, ``/dev/stderr``, ``/dev/tty``, ``/dev/fd/N``
  and fd duplications like ``2>&1`` are not);
* the targets of well-known writing commands (``tools.shell.commands``): ``tee``, ``cp``/``ln``/``install``/``rsync``
  (the destination, or ``-t DIR``), ``mv``, ``rm``, ``rmdir``, ``mkdir``, ``touch``,
  ``unlink``, ``shred``, ``truncate``, ``chmod``/``chown``/``chgrp`` (the files), ``dd of=``,
  ``sed -i`` (the files) and ``find … -delete`` (the start points), also behind ``sudo``,
  ``env``, ``nohup``, ``xargs``, ``command``, ``exec``, ``nice``, ``time``;
* any command at all after a ``cd``/``pushd`` out of the roots (or to a place the host cannot
  work out), since it then runs, and may write, out there;
* the same inside ``$(…)``, backticks, ``<(…)``, ``sh -c '…'`` / ``bash -c '…'`` and ``eval``.

Invariants:
* Paths are resolved the way file tools resolve theirs (``tools.sandbox.resolve_path``:
  realpath, symlinks followed, the not-yet-existing rest applied lexically) against the
  directory the command would be in at that point; ``~`` and ``~/x`` use ``$HOME``.
* Conservative: a target that depends on something known only at run time (``$VAR``,
  ``$(…)``, ``~user``, a relative path after ``cd -``) is reported as undetermined, not
  assumed safe. Unquoted globs are checked both literally and against what they match now.
* Limits, stated so nobody relies on more: this reads the command line, not what programs do;
  a script, ``make`` or ``python -c`` that writes elsewhere is not detected. It is a prompt
  for the user, not a sandbox.
* Pure apart from reading the file system (realpath, glob); no execution.
"""

from __future__ import annotations

import glob as globbing
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..errors import SandboxError
from ..sandbox import resolve_path
from .commands import (
    OPTIONS_WITH_VALUES,
    SHELLS,
    WRAPPERS,
    WRITES_AFTER_MODE,
    WRITES_ALL_OPERANDS,
    WRITES_DESTINATION,
)
from .lexer import Redirect, Word, lex

__all__ = ["Finding", "outside_writes", "describe_findings", "write_targets"]


@dataclass(frozen=True)
class Finding:
    """One write the user should know about before the command runs."""

    kind: Literal["outside", "undetermined", "cd-outside", "cd-unknown"]
    """``outside``: a path outside the roots; ``undetermined``: unknown until run time;
    ``cd-outside``: commands run in a directory outside the roots; ``cd-unknown``: commands run
    in a directory known only at run time."""
    target: str
    """The resolved path (``outside``, ``cd-outside``) or the word as written (``undetermined``)."""
    via: str
    """What writes there: ``output redirection``, a command name, or the command run after ``cd``."""


@dataclass
class _Command:
    words: list[Word] = field(default_factory=list)
    redirects: list[tuple[str, Word]] = field(default_factory=list)


_WRITE_REDIRECTS = {">", ">>", ">|", "&>", "&>>", "<>", ">&"}
_SAFE_DEVICES = re.compile(r"^/dev/(null|stdout|stderr|tty|fd/\d+)$")
_KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!", "case", "esac"}


# -- simple commands ------------------------------------------------------------------------


def _commands(tokens: list) -> list[tuple[str, _Command]]:
    """Simple commands, each with the operator that preceded it (``(``, ``)`` kept as markers)."""
    out: list[tuple[str, _Command]] = []
    current = _Command()
    before = ";"
    pending_redirect: str | None = None
    for token in tokens:
        if isinstance(token, Word):
            if pending_redirect is not None:
                current.redirects.append((pending_redirect, token))
                pending_redirect = None
            else:
                current.words.append(token)
        elif isinstance(token, Redirect):
            pending_redirect = token.op
        else:
            op = token.op
            out.append((before, current))
            current, before = _Command(), op
            if op in "()":
                out.append((op, _Command()))
    out.append((before, current))
    return out


# -- analysis ---------------------------------------------------------------------------------


class _Analysis:
    def __init__(self, working_directory: Path, extra_roots: tuple[Path, ...]) -> None:
        self.root = working_directory
        self.extra_roots = extra_roots
        self.findings: list[Finding] = []

    def inside(self, path: str) -> Path | None:
        """The resolved path when it lies inside a root, else None."""
        try:
            return resolve_path(path, self.root, self.extra_roots)
        except SandboxError:
            return None

    def add(self, finding: Finding) -> None:
        if finding not in self.findings:
            self.findings.append(finding)

    def line(self, command: str, cwd: str | None, depth: int = 0) -> None:
        if depth > 8:  # nested deeper than anyone writes by hand: do not guess
            self.add(Finding("undetermined", command.strip()[:80], "deeply nested command"))
            return
        lexed = lex(command)
        tokens, nested = lexed.tokens, lexed.nested
        stack: list[str | None] = []
        for before, simple in _commands(tokens):
            if before == "(":
                stack.append(cwd)
                continue
            if before == ")":
                cwd = stack.pop() if stack else cwd
                continue
            cwd = self.simple(simple, cwd, depth)
        for inner in nested:
            self.line(inner, cwd, depth + 1)

    def simple(self, command: _Command, cwd: str | None, depth: int) -> str | None:
        """Record the findings of one simple command; return the directory after it."""
        for op, target in command.redirects:
            if op in _WRITE_REDIRECTS and not (op == ">&" and re.fullmatch(r"\d+|-", target.text)):
                self.target(target, cwd, "output redirection")
        words = _strip_prefixes(command.words)
        if not words:
            return cwd
        name = os.path.basename(words[0].text)
        if name in ("cd", "pushd", "popd"):
            return self.change_directory(name, words[1:], cwd)
        ran = " ".join(w.text for w in words)[:80]
        if cwd is None:
            self.add(Finding("cd-unknown", "", ran))
        elif self.inside(cwd) is None:
            self.add(Finding("cd-outside", cwd, ran))
        if name in SHELLS:
            script = _option_value(words[1:], "-c")
            if script is not None and not script.dynamic:
                self.line(script.text, cwd, depth + 1)
            return cwd
        if name == "eval":
            self.line(" ".join(w.text for w in words[1:]), cwd, depth + 1)
            return cwd
        for target in _write_targets(name, words[1:]):
            self.target(target, cwd, name)
        return cwd

    def change_directory(self, name: str, args: list[Word], cwd: str | None) -> str | None:
        operands = [w for w in args if not (w.text.startswith("-") and w.text != "-")]
        if name == "popd" or (operands and operands[0].text == "-"):
            return None
        target = operands[0] if operands else Word("~")
        path = self.place(target, cwd)
        return None if path is None else os.path.realpath(path)

    def place(self, word: Word, cwd: str | None) -> str | None:
        """The absolute path a word names, or None when it is known only at run time."""
        if word.dynamic:
            return None
        text = word.text
        if text == "~" or text.startswith("~/"):
            home = os.environ.get("HOME")
            if not home:
                return None
            text = home + text[1:]
        elif text.startswith("~"):
            return None  # ~user
        if os.path.isabs(text):
            return text
        return None if cwd is None else os.path.join(cwd, text)

    def target(self, word: Word, cwd: str | None, via: str) -> None:
        if _SAFE_DEVICES.match(word.text):
            return
        path = self.place(word, cwd)
        if path is None:
            self.add(Finding("undetermined", word.text, via))
            return
        candidates = [path]
        if word.glob:
            candidates += globbing.glob(path)[:200]
        for candidate in candidates:
            if self.inside(candidate) is None:
                self.add(Finding("outside", os.path.realpath(candidate), via))


def _strip_prefixes(words: list[Word]) -> list[Word]:
    """Drop keywords, ``NAME=value`` assignments and wrappers like ``sudo`` before the command."""
    i = 0
    while i < len(words):
        text = words[i].text
        if text in _KEYWORDS or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", text):
            i += 1
            continue
        wrapper = WRAPPERS.get(os.path.basename(text))
        if wrapper is None:
            break
        i += 1
        while i < len(words) and words[i].text.startswith("-"):
            i += 2 if words[i].text in wrapper else 1
        while os.path.basename(text) == "env" and i < len(words) and "=" in words[i].text:
            i += 1
    return words[i:]


def _option_value(words: list[Word], option: str) -> Word | None:
    for index, word in enumerate(words):
        if word.text == option and index + 1 < len(words):
            return words[index + 1]
        if word.text.startswith("-") and not word.text.startswith("--") and option[1] in word.text[1:] and word.text.endswith(option[1]):
            if index + 1 < len(words):
                return words[index + 1]  # combined flags, e.g. -xc 'script'
    return None


def _operands(name: str, words: list[Word]) -> tuple[list[Word], list[Word]]:
    """(operands, values of options that name a target directory such as ``-t DIR``)."""
    takes_value = OPTIONS_WITH_VALUES.get(name, frozenset())
    operands: list[Word] = []
    directories: list[Word] = []
    i = 0
    options_done = False
    while i < len(words):
        word = words[i]
        text = word.text
        if options_done or not text.startswith("-") or text == "-":
            operands.append(word)
        elif text == "--":
            options_done = True
        elif name in WRITES_DESTINATION | {"mv"} and text in ("-t", "--target-directory"):
            if i + 1 < len(words):
                directories.append(words[i + 1])
            i += 1
        elif name in WRITES_DESTINATION | {"mv"} and text.startswith("--target-directory="):
            directories.append(Word(text.split("=", 1)[1], dynamic=word.dynamic, glob=word.glob))
        elif text in takes_value:
            i += 1
        i += 1
    return operands, directories


def _write_targets(name: str, args: list[Word]) -> list[Word]:
    if name == "dd":
        return [Word(w.text[3:], dynamic=w.dynamic, glob=w.glob) for w in args if w.text.startswith("of=")]
    if name == "sed":
        if not any(w.text == "-i" or w.text.startswith(("-i", "--in-place")) for w in args):
            return []
        operands, _ = _operands("sed", [w for w in args if not w.text.startswith("-i")])
        has_script_option = any(w.text in ("-e", "-f", "--expression", "--file") for w in args)
        return operands if has_script_option else operands[1:]
    if name == "find":
        if not any(w.text == "-delete" for w in args):
            return []
        starts = []
        for word in args:
            if word.text.startswith(("-", "(", "!")):
                break
            starts.append(word)
        return starts or [Word(".")]
    operands, directories = _operands(name, args)
    if name in WRITES_ALL_OPERANDS:
        return operands + directories
    if name in WRITES_DESTINATION:
        if directories:
            return directories
        if name == "ln" and len(operands) == 1:
            return [Word(".")]
        return operands[-1:] if len(operands) >= 2 else []
    if name in WRITES_AFTER_MODE:
        if any(w.text.startswith("--reference") for w in args):
            return operands
        return operands[1:]
    return []


def outside_writes(
    command: str, working_directory: str | os.PathLike[str], extra_roots: Iterable[str | os.PathLike[str]] = ()
) -> list[Finding]:
    """The writes ``command`` would make outside the allowed roots (see the module contract)."""
    root = Path(os.path.realpath(os.fspath(working_directory)))
    analysis = _Analysis(root, tuple(Path(r) for r in extra_roots))
    analysis.line(command, str(root))
    return analysis.findings


def describe_findings(findings: list[Finding], working_directory: str | os.PathLike[str]) -> str:
    """One sentence for the user (and the model) naming every finding."""
    outside = [f.target for f in findings if f.kind == "outside"]
    elsewhere = [f for f in findings if f.kind == "cd-outside"]
    unknown = [f for f in findings if f.kind == "undetermined"]
    lost = [f for f in findings if f.kind == "cd-unknown"]
    parts: list[str] = []
    if outside:
        parts.append(f"would write to {_join(outside)} outside the working directory")
    if elsewhere:
        places = _join(sorted({f.target for f in elsewhere}))
        parts.append(f"would run `{elsewhere[0].via}` in {places}, outside the working directory")
    if lost:
        parts.append(f"would run `{lost[0].via}` after changing to a directory the host cannot work out before it runs")
    if unknown:
        words = _join([f"`{f.target}`" for f in unknown])
        parts.append(f"writes to {words}, which the host cannot check before it runs")
    return f"This command {'; it '.join(parts)} (the working directory is {os.fspath(working_directory)})."


def _join(items: list[str]) -> str:
    items = list(dict.fromkeys(items))
    if len(items) > 4:
        items = items[:4] + [f"{len(items) - 4} more"]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def write_targets(command: str, working_directory: Path, within: Iterable[Path]) -> list[Path]:
    """The places outside ``working_directory`` the command line writes to (a file, or a folder
    it ``cd``s to and runs commands in) that lie in one of the folders ``within``; what is known
    only at run time is left out. For recording what a command changed, not for deciding."""
    folders = [Path(os.path.realpath(folder)) for folder in within]
    targets: list[Path] = []
    for finding in outside_writes(command, working_directory, ()):
        if finding.kind not in ("outside", "cd-outside"):
            continue
        path = Path(finding.target)
        if any(path.is_relative_to(folder) for folder in folders) and path not in targets:
            targets.append(path)
    return targets
