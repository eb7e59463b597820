"""Finding the writes a shell command line would make outside the allowed roots, before it runs.

Contract: `outside_writes(command, working_directory, extra_roots)` reads a POSIX command line
(it never runs it) and returns one `Finding` per place where the command would write outside
the working directory and the extra roots, or where the host cannot tell where it writes. The
``shell`` tool asks the user again (``ctx.reconfirm``) when the list is not empty.

What counts as a write:
* output redirections to a file: ``>``, ``>>``, ``>|``, ``&>``, ``&>>``, ``<>``, ``N>``,
  ``>& file`` (``/dev/null``, ``/dev/stdout``, ``/dev/stderr``, ``/dev/tty``, ``/dev/fd/N``
  and fd duplications like ``2>&1`` are not);
* the targets of well-known writing commands: ``tee``, ``cp``/``ln``/``install``/``rsync``
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

from .errors import SandboxError
from .sandbox import resolve_path

__all__ = ["Finding", "outside_writes", "describe_findings"]


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
class _Word:
    text: str
    """The word with quotes removed; expansions are kept literally."""
    dynamic: bool = False
    """Contains an expansion (``$…``, backticks) whose value is known only at run time."""
    glob: bool = False
    """Contains an unquoted ``*``, ``?`` or ``[``."""


@dataclass
class _Command:
    words: list[_Word] = field(default_factory=list)
    redirects: list[tuple[str, _Word]] = field(default_factory=list)


_WRITE_REDIRECTS = {">", ">>", ">|", "&>", "&>>", "<>", ">&"}
_SAFE_DEVICES = re.compile(r"^/dev/(null|stdout|stderr|tty|fd/\d+)$")
_KEYWORDS = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!", "case", "esac"}
# Prefix commands that run the rest of their words as a command, with options taking a value.
_WRAPPERS: dict[str, set[str]] = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"},
    "doas": {"-u", "-C"},
    "env": {"-u", "-C", "-S"},
    "nohup": set(),
    "time": set(),
    "command": set(),
    "builtin": set(),
    "exec": {"-a"},
    "nice": {"-n"},
    "ionice": {"-c", "-n", "-p"},
    "stdbuf": {"-i", "-o", "-e"},
    "timeout": {"-s", "-k"},
    "xargs": {"-I", "-i", "-n", "-P", "-d", "-L", "-l", "-s", "-E", "-e", "-a"},
}
_ALL_ARGS = {"rm", "rmdir", "mkdir", "touch", "unlink", "shred", "tee", "truncate", "mv"}
_DESTINATION = {"cp", "ln", "install", "rsync"}
_AFTER_MODE = {"chmod", "chown", "chgrp"}
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "ash"}
_OPTION_VALUES: dict[str, set[str]] = {
    "cp": {"-S", "--suffix"},
    "mv": {"-S", "--suffix"},
    "ln": {"-S", "--suffix"},
    "install": {"-S", "-m", "-o", "-g", "--suffix", "--mode", "--owner", "--group"},
    "rsync": {"-e", "--rsh", "--exclude", "--include", "--filter", "-f"},
    "mkdir": {"-m", "--mode"},
    "touch": {"-d", "-t", "-r", "--date", "--reference"},
    "truncate": {"-s", "-r", "--size", "--reference"},
    "shred": {"-n", "-s", "--iterations", "--size", "--random-source"},
    "chown": {"--reference"},
    "chgrp": {"--reference"},
    "chmod": {"--reference"},
}


# -- lexing -----------------------------------------------------------------------------------


def _matching(text: str, start: int, opener: str, closer: str) -> int:
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


def _lex(command: str, nested: list[str]) -> list[object]:
    """Tokens: ``_Word``, ``("op", text)`` for control operators, ``("redir", op)``.

    Command substitutions found anywhere are appended to ``nested`` (to be analysed too).
    """
    tokens: list[object] = []
    word: _Word | None = None
    quoted = False  # whether the current word had quotes (so "2">x is not an fd number)
    heredocs: list[tuple[str, bool]] = []
    expect_heredoc_word = False
    n = len(command)
    i = 0

    def chars(text: str) -> _Word:
        nonlocal word
        if word is None:
            word = _Word("")
        word.text += text
        return word

    def end_word() -> None:
        nonlocal word, quoted, expect_heredoc_word
        if word is not None:
            if expect_heredoc_word:
                heredocs.append((word.text, tokens[-1] == ("redir", "<<-")))
                expect_heredoc_word = False
            tokens.append(word)
        word, quoted = None, False

    def substitution(at: int) -> int:
        """Handle ``$(``, ``$((``, ``${``, ``$NAME``, backticks at ``at``; return the next index."""
        c = command[at]
        if c == "`":
            end = command.find("`", at + 1)
            end = n if end == -1 else end
            nested.append(command[at + 1 : end])
            chars(command[at : end + 1]).dynamic = True
            return end + 1
        nxt = command[at + 1] if at + 1 < n else ""
        if nxt == "(":
            end = _matching(command, at + 1, "(", ")")
            nested.append(command[at + 2 : end - 1])
            chars(command[at:end]).dynamic = True
            return end
        if nxt == "{":
            end = _matching(command, at + 1, "{", "}")
            chars(command[at:end]).dynamic = True
            return end
        match = re.match(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]", command[at + 1 :])
        if match:
            chars("$" + match.group(0)).dynamic = True
            return at + 1 + match.end()
        chars("$")
        return at + 1

    while i < n:
        c = command[i]
        nxt = command[i + 1] if i + 1 < n else ""
        if c == "\\":
            if nxt != "\n":
                chars(nxt)
            i += 2
        elif c == "'":
            end = command.find("'", i + 1)
            end = n if end == -1 else end
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
            i += 1
        elif c in "$`":
            i = substitution(i)
        elif c in " \t":
            end_word()
            i += 1
        elif c == "#" and word is None:
            end = command.find("\n", i)
            i = n if end == -1 else end
        elif c in "<>" and nxt == "(":  # process substitution
            end = _matching(command, i + 1, "(", ")")
            nested.append(command[i + 2 : end - 1])
            chars(command[i:end]).dynamic = True
            i = end
        elif c in "<>" or (c == "&" and nxt == ">"):
            if word is not None and not quoted and word.text.isdigit() and not word.dynamic:
                word, quoted = None, False  # an fd number: 2>file
            end_word()
            op = re.match(r"&>>|&>|<<<|<<-|<<|<>|<&|>>|>\||>&|>|<", command[i:]).group(0)  # type: ignore[union-attr]
            tokens.append(("redir", op))
            expect_heredoc_word = op in ("<<", "<<-")
            i += len(op)
        elif c in ";&|()\n":
            end_word()
            op = re.match(r"&&|\|\||;;|\|&|[;&|()\n]", command[i:]).group(0)  # type: ignore[union-attr]
            tokens.append(("op", op))
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
    return tokens


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


def _commands(tokens: list[object]) -> list[tuple[str, _Command]]:
    """Simple commands, each with the operator that preceded it (``(``, ``)`` kept as markers)."""
    out: list[tuple[str, _Command]] = []
    current = _Command()
    before = ";"
    pending_redirect: str | None = None
    for token in tokens:
        if isinstance(token, _Word):
            if pending_redirect is not None:
                current.redirects.append((pending_redirect, token))
                pending_redirect = None
            else:
                current.words.append(token)
        elif token[0] == "redir":  # type: ignore[index]
            pending_redirect = token[1]  # type: ignore[index]
        else:
            op = token[1]  # type: ignore[index]
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
        nested: list[str] = []
        tokens = _lex(command, nested)
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
        if name in _SHELLS:
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

    def change_directory(self, name: str, args: list[_Word], cwd: str | None) -> str | None:
        operands = [w for w in args if not (w.text.startswith("-") and w.text != "-")]
        if name == "popd" or (operands and operands[0].text == "-"):
            return None
        target = operands[0] if operands else _Word("~")
        path = self.place(target, cwd)
        return None if path is None else os.path.realpath(path)

    def place(self, word: _Word, cwd: str | None) -> str | None:
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

    def target(self, word: _Word, cwd: str | None, via: str) -> None:
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


def _strip_prefixes(words: list[_Word]) -> list[_Word]:
    """Drop keywords, ``NAME=value`` assignments and wrappers like ``sudo`` before the command."""
    i = 0
    while i < len(words):
        text = words[i].text
        if text in _KEYWORDS or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", text):
            i += 1
            continue
        wrapper = _WRAPPERS.get(os.path.basename(text))
        if wrapper is None:
            break
        i += 1
        while i < len(words) and words[i].text.startswith("-"):
            i += 2 if words[i].text in wrapper else 1
        while os.path.basename(text) == "env" and i < len(words) and "=" in words[i].text:
            i += 1
    return words[i:]


def _option_value(words: list[_Word], option: str) -> _Word | None:
    for index, word in enumerate(words):
        if word.text == option and index + 1 < len(words):
            return words[index + 1]
        if word.text.startswith("-") and not word.text.startswith("--") and option[1] in word.text[1:] and word.text.endswith(option[1]):
            if index + 1 < len(words):
                return words[index + 1]  # combined flags, e.g. -xc 'script'
    return None


def _operands(name: str, words: list[_Word]) -> tuple[list[_Word], list[_Word]]:
    """(operands, values of options that name a target directory such as ``-t DIR``)."""
    takes_value = _OPTION_VALUES.get(name, set())
    operands: list[_Word] = []
    directories: list[_Word] = []
    i = 0
    options_done = False
    while i < len(words):
        word = words[i]
        text = word.text
        if options_done or not text.startswith("-") or text == "-":
            operands.append(word)
        elif text == "--":
            options_done = True
        elif name in _DESTINATION | {"mv"} and text in ("-t", "--target-directory"):
            if i + 1 < len(words):
                directories.append(words[i + 1])
            i += 1
        elif name in _DESTINATION | {"mv"} and text.startswith("--target-directory="):
            directories.append(_Word(text.split("=", 1)[1], word.dynamic, word.glob))
        elif text in takes_value:
            i += 1
        i += 1
    return operands, directories


def _write_targets(name: str, args: list[_Word]) -> list[_Word]:
    if name == "dd":
        return [_Word(w.text[3:], w.dynamic, w.glob) for w in args if w.text.startswith("of=")]
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
        return starts or [_Word(".")]
    operands, directories = _operands(name, args)
    if name in _ALL_ARGS:
        return operands + directories
    if name in _DESTINATION:
        if directories:
            return directories
        if name == "ln" and len(operands) == 1:
            return [_Word(".")]
        return operands[-1:] if len(operands) >= 2 else []
    if name in _AFTER_MODE:
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
