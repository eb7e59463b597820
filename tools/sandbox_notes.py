"""What the OS sandbox refused a command, in words: the notes added to a sandboxed command's result.

Contract: ``denials(output, sandbox, working_directory)`` reads a command's output (plain text) for
the errors the sandbox causes and returns one sentence per rule that was hit, each once, in the
order first seen, naming the path and the rule and, where there is one, the setting that changes it:

* "Read-only file system" on a path outside the writable folders: writes go only to the folders
  and /tmp; on a protected path inside them (``.git/hooks``, ``.git/config``, ``.claude``,
  ``.mcp.json``): that path stays read-only.
* "Permission denied" on a hidden path (or below one): the path is hidden, and which list hides it
  (the built-in secrets or ``[tools] sandbox_hidden``/the host's data directory).
* "Connection refused" on a Unix socket path outside the folders: sockets are unreachable unless
  listed in ``[tools] sandbox_unix_sockets``.
* "No such process": the host's processes are not visible from the sandbox.

A line whose path cannot be told gets the rule's general sentence. No I/O beyond resolving paths
(``os.path.realpath``: a link out of a folder is named by where it leads); the output is never changed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .os_sandbox import PROTECTED, SECRETS, OsSandbox

__all__ = ["denials"]

_QUOTED = re.compile(r"'([^']+)'|\"([^\"]+)\"|‘([^’]+)’")
_BARE = re.compile(r"(?<![\w.])((?:/|~/|\./|\.\./)[^\s:'\"]*)")
_ERRORS = ("Read-only file system", "Permission denied", "Connection refused", "No such process")


def denials(output: str, sandbox: OsSandbox, working_directory: Path) -> list[str]:
    notes: dict[str, None] = {}
    for line in output.splitlines():
        for error in _ERRORS:
            if error in line:
                note = _note(error, _paths(line, error, working_directory), sandbox)
                if note:
                    notes[note] = None
    return list(notes)


def _paths(line: str, error: str, working_directory: Path) -> list[Path]:
    """The paths a line names, the one the error is about first: the text just before
    ``: <error>`` (``cat: /x: Permission denied``), else a quoted one after it (Python's
    ``[Errno 13] Permission denied: '/x'``), then any other path-like word."""
    before, _, after = line.partition(error)
    last = before.rstrip().removesuffix(":").rsplit(": ", 1)[-1].strip()
    quoted = [next(group for group in match.groups() if group) for match in _QUOTED.finditer(last)]
    found = [quoted[-1] if quoted else last.split()[-1] if last.split() else ""]
    found += [next(group for group in match.groups() if group) for match in _QUOTED.finditer(after)]
    found += [match.group(1).rstrip(".,;:") for match in _BARE.finditer(line) if not line.startswith(match.group(1) + ":")]
    paths = []
    for text in found:
        if not text or "/" not in text and not text.startswith(".") or text.startswith(("http:", "https:")):
            continue
        path = Path(os.path.expanduser(text))
        paths.append(Path(os.path.realpath(path if path.is_absolute() else working_directory / path)))  # links followed, as the kernel did
    return list(dict.fromkeys(paths))


def _note(error: str, paths: list[Path], sandbox: OsSandbox) -> str | None:
    folders = [Path(os.path.realpath(folder)) for folder in sandbox.writable]
    shown = ", ".join(str(folder) for folder in folders)
    if error == "No such process":
        return ("[sandbox] Processes outside the sandbox are not visible to commands in it and cannot be signalled: "
                "each command has its own process ids.")
    if error == "Read-only file system":
        for path in paths:
            protected = _protected(path, folders)
            if protected:
                return (f"[sandbox] {path} is read-only in the sandbox: {protected} inside the session's folders stays "
                        "read-only so that nothing planted there runs later outside the sandbox.")
            if not any(path.is_relative_to(folder) for folder in folders) and not path.is_relative_to("/tmp"):
                return (f"[sandbox] {path} is outside the folders sandboxed commands may write ({shown} and a private /tmp): "
                        "the write was refused.")
        return f"[sandbox] Sandboxed commands may write only in {shown} and a private /tmp: a write elsewhere was refused."
    if error == "Permission denied":
        hidden = sandbox.hidden_paths()
        for path in paths:
            real = Path(os.path.realpath(path))
            for place in hidden:
                if real == place or real.is_relative_to(place) or path == place or path.is_relative_to(place):
                    return f"[sandbox] {path} is hidden from sandboxed commands ({_which(place, sandbox)})."
            protected = _protected(path, folders)
            if protected:
                return f"[sandbox] {path} is not available in the sandbox: {protected} stays covered and read-only there."
        return None  # an ordinary permission error, not the sandbox's doing
    if error == "Connection refused":
        for path in paths:
            if not any(path.is_relative_to(folder) for folder in folders):
                return (f"[sandbox] {path}: Unix sockets outside the session's folders are unreachable from sandboxed commands; "
                        "list one in [tools] sandbox_unix_sockets to allow it.")
        return None
    return None


def _protected(path: Path, folders: list[Path]) -> str | None:
    for folder in folders:
        for name in PROTECTED:
            place = folder / name
            if path == place or path.is_relative_to(place):
                return name
    return None


def _which(place: Path, sandbox: OsSandbox) -> str:
    if any(place in (Path(os.path.abspath(sandbox.home / name)), Path(os.path.realpath(sandbox.home / name))) for name in SECRETS):
        return "credentials and keys are never readable there"
    return "hidden by the host: its data directory, or [tools] sandbox_hidden"
