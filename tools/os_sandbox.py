"""The OS sandbox commands run in: bubblewrap (``bwrap``) on Linux.

Contract: ``OsSandbox(writable, network, ...).confine(argv)`` returns a ``Confined``: the argv that
runs ``argv`` inside a bubblewrap sandbox, and the mount points bubblewrap will create in the
session's folders (``Confined.release()`` removes those that are still empty placeholders once the
command has ended). Inside the sandbox:

* **Processes.** The command has its own PID, IPC and UTS namespaces and its own ``/proc``: it sees
  only its own processes, cannot signal, trace or read (``/proc/<pid>/root``, ``cwd``, ``environ``,
  ``cmdline``) any process of the host, and every process it starts ends when it ends (the
  namespace's first process is bubblewrap's, which goes with the command: ``--die-with-parent``).
  Every capability is dropped (``--cap-drop ALL``, which matters when the host runs as root: no
  ``mount``, no remount read-write) and ``no_new_privs`` is set (bubblewrap does it), so no setuid
  program gains anything.
* **Writes** only in the folders of ``writable`` (the session's folders) and a private, empty
  ``/tmp`` (a tmpfs that disappears with the command). Inside each folder ``PROTECTED`` stays
  read-only: ``.git/hooks`` and ``.git/config`` (a command cannot plant a hook or an alias that
  runs later outside the sandbox; commits still work) and the folder's own ``.claude/`` and
  ``.mcp.json`` (settings and servers the host would run). A protected name the folder does not
  have is still covered (an empty, read-only placeholder: a file or directory created for the
  mount, removed again by ``release`` when nothing else put it there). ``.git`` is a mount point
  of its own, so it cannot be renamed away and replaced by one with hooks. A protected name that
  is a symbolic link is not covered (a mount cannot be put on a link). Everything else is
  read-only (``EROFS``, "Read-only file system").
* **Reads** everywhere except the hidden paths: ``SECRETS`` under the home directory (keys,
  cloud credentials, keyrings, our own client settings and chat history) plus ``hidden`` (the host's
  data directory: journal, transcripts, token; and what the user adds). A hidden directory is an
  empty directory nobody may list, a hidden file one nobody may read ("Permission denied"). A
  hidden path that holds one of the session's folders is not hidden (the user chose to work
  there). Symbolic links are followed when hiding, so a link to a hidden place finds it hidden.
* **Unix sockets.** ``/run`` is an empty read-only directory (the files ``/etc`` links into it, such
  as ``resolv.conf``, stay); ``/tmp`` is private; abstract sockets belong to the network namespace,
  so they are out of reach while the network is cut. Sockets found elsewhere under the home
  directory and ``/var`` (``SOCKET_SCAN_DEPTH`` levels down) are covered ("Connection refused").
  Sockets inside the session's folders work, and so do those in ``unix_sockets`` (the user's
  allow-list).
* **Network** cut off (``--unshare-net``: only a loopback device of its own) unless ``network``.
* **Environment** built from an allow-list (``environ``): ``ENVIRONMENT`` plus the names the user
  lists (``environment``; a trailing ``*`` matches a prefix) plus the variables the host sets for
  the session (Claude Code settings' ``env``). Nothing else of the host's passes, API keys least.

``describe()`` says all of this in a few sentences for the model's system prompt and the shell
tool's description; ``tools.sandbox_notes`` turns a denial in a command's output into words.

``unavailable()`` says why this platform cannot sandbox (None when it can): not Linux (macOS
Seatbelt is not implemented), no ``bwrap`` on ``PATH`` (Debian/Ubuntu package ``bubblewrap``),
or ``bwrap`` that cannot create its namespaces here (unprivileged user namespaces disabled).
The probe runs ``bwrap`` once per process and remembers the answer.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import child_processes

__all__ = ["OsSandbox", "Confined", "unavailable", "INSTALL_HINT", "SECRETS", "ENVIRONMENT", "PROTECTED"]

INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap), "
                "or set [tools] sandbox = \"off\" to run commands without one")

SECRETS = (
    ".ssh", ".aws", ".config/gcloud", ".azure", ".netrc", ".gnupg", ".local/share/keyrings", ".password-store",
    ".git-credentials", ".config/gh", ".docker/config.json", ".kube", ".pypirc", ".claude/.credentials.json",
    ".config/agent-host", ".local/state/agent-host",
)
"""Paths under the home directory a sandboxed command may not read."""

ENVIRONMENT = ("PATH", "HOME", "LANG", "LANGUAGE", "LC_*", "TERM", "COLORTERM", "USER", "LOGNAME", "SHELL", "TZ")
"""Variables of the host's environment a sandboxed command receives (besides the user's list)."""

PROTECTED = (".git/hooks", ".git/config", ".claude", ".mcp.json")
"""Paths inside each writable folder that stay read-only (directories: ``.git/hooks``, ``.claude``)."""

_PROTECTED_DIRECTORIES = {".git/hooks", ".claude"}
SOCKET_SCAN_DEPTH = 4
_SOCKET_SCAN_LIMIT = 20_000
"""Directory entries one scan for sockets looks at, at most (a huge home is not walked whole)."""


@dataclass(frozen=True)
class Confined:
    """A command wrapped in the sandbox, and the placeholders its mounts create."""

    argv: list[str]
    placeholders: tuple[Path, ...] = ()
    """Protected paths that did not exist: bubblewrap creates them as mount points."""

    def release(self) -> None:
        """Remove the placeholders that are still what bubblewrap made (an empty file or directory)."""
        for path in self.placeholders:
            try:
                info = path.lstat()
                if stat.S_ISDIR(info.st_mode):
                    path.rmdir()  # fails (and stays) when something else filled it since
                elif stat.S_ISREG(info.st_mode) and info.st_size == 0:
                    path.unlink()
            except OSError:
                pass


@dataclass(frozen=True)
class OsSandbox:
    writable: tuple[Path, ...]
    """Folders the command may write (besides its private /tmp)."""
    network: bool = False
    """Whether the command reaches the network."""
    hidden: tuple[Path, ...] = ()
    """Paths hidden besides ``SECRETS`` (the host's data directory, the user's ``sandbox_hidden``)."""
    environment: tuple[str, ...] = ()
    """Names of host variables passed besides ``ENVIRONMENT`` (``*`` at the end: a prefix)."""
    unix_sockets: tuple[Path, ...] = ()
    """Unix sockets outside the folders the command may still reach."""
    home: Path = field(default_factory=Path.home)
    program: str = "bwrap"

    # -- what is hidden -------------------------------------------------------------------------

    def hidden_paths(self) -> list[Path]:
        """Every hidden path as written and as its links resolve, existing or not, each once."""
        wanted = [self.home / name for name in SECRETS] + [Path(os.path.expanduser(p)) for p in self.hidden]
        found: dict[Path, None] = {}
        for path in wanted:
            found[Path(os.path.abspath(path))] = None
            found[Path(os.path.realpath(path))] = None
        folders = self._folders()
        return [path for path in found if not any(folder == path or folder.is_relative_to(path) for folder in folders)]

    def _folders(self) -> list[Path]:
        return [Path(os.path.realpath(folder)) for folder in dict.fromkeys(self.writable)]

    # -- the command line -----------------------------------------------------------------------

    def confine(self, argv: Sequence[str]) -> Confined:
        folders = self._folders()
        wrapped = [self.program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                   "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--cap-drop", "ALL", "--die-with-parent",
                   "--tmpfs", "/tmp"]
        if not self.network:
            wrapped.append("--unshare-net")
        run = Path("/run")
        if run.is_dir():
            wrapped += ["--tmpfs", "/run"]
            for target in _etc_links_into(run):
                wrapped += ["--ro-bind", str(target), str(target)]
        for folder in folders:
            wrapped += ["--bind", str(folder), str(folder)]
        placeholders: list[Path] = []
        for folder in folders:
            git = folder / ".git"
            if git.is_dir() and not git.is_symlink():
                # A mount point cannot be renamed: the sandbox cannot move .git away and make a new one.
                wrapped += ["--bind", str(git), str(git)]
            for name in PROTECTED:
                path = folder / name
                if name.startswith(".git/") and not (git.is_dir() and not git.is_symlink()):
                    continue  # no repository here (or a worktree's .git file: its directory lies outside, read-only)
                if path.is_symlink():
                    continue  # a link's target is outside (read-only) or inside (covered by its own name)
                if name in _PROTECTED_DIRECTORIES:
                    if path.is_dir():
                        wrapped += ["--ro-bind", str(path), str(path)]
                    elif not path.exists():
                        placeholders.append(path)
                        wrapped += ["--tmpfs", str(path), "--remount-ro", str(path)]
                elif path.is_file():
                    wrapped += ["--ro-bind", str(path), str(path)]
                elif not path.exists():
                    placeholders.append(path)
                    wrapped += ["--ro-bind", "/dev/null", str(path)]
        allowed = {Path(os.path.realpath(os.path.expanduser(sock))) for sock in self.unix_sockets}
        hidden = self.hidden_paths()
        for socket in _sockets((self.home, Path("/var")), skip=(*folders, run, Path("/tmp"), Path("/proc"), *hidden)):
            if socket not in allowed:
                wrapped += ["--ro-bind", "/dev/null", str(socket)]
        for path in hidden:
            if path.is_dir() and not path.is_symlink():
                wrapped += ["--perms", "0000", "--tmpfs", str(path), "--remount-ro", str(path)]
            elif path.exists() and not path.is_symlink():
                wrapped += ["--ro-bind", "/dev/null", str(path)]
        for socket in sorted(allowed):
            if socket.exists():
                wrapped += ["--bind", str(socket), str(socket)]
        if run.is_dir():
            wrapped += ["--remount-ro", "/run"]
        wrapped += ["--", *argv]
        return Confined(wrapped, tuple(placeholders))

    def command(self, argv: Sequence[str]) -> list[str]:
        """The wrapped argv alone (placeholders left for the caller to ignore)."""
        return self.confine(argv).argv

    # -- the environment ------------------------------------------------------------------------

    def environ(self, host: Mapping[str, str], session: Mapping[str, str] = {}) -> dict[str, str]:
        """The command's environment: the allowed host variables, then the session's own."""
        patterns = (*ENVIRONMENT, *self.environment)
        chosen = {name: value for name, value in host.items() if any(_matches(name, pattern) for pattern in patterns)}
        return {**chosen, **session}

    # -- in words -------------------------------------------------------------------------------

    def describe(self) -> str:
        folders = ", ".join(str(folder) for folder in dict.fromkeys(self.writable)) or "(none)"
        hidden = ", ".join(_short(path, self.home) for path in dict.fromkeys(
            [self.home / name for name in SECRETS] + [Path(os.path.expanduser(p)) for p in self.hidden]))
        network = "The network is reachable." if self.network else "There is no network (only a loopback device of its own)."
        return (
            "Shell commands run in an OS sandbox (bubblewrap). They may write only in "
            f"{folders} and in a private /tmp that is emptied when each command ends; the rest of the file "
            "system is read-only (\"Read-only file system\"), and inside those folders .git/hooks, .git/config, "
            ".claude/ and .mcp.json are read-only too (git commits still work). These paths cannot be read "
            f"(\"Permission denied\"): {hidden}. Each command has its own processes: it cannot see or signal the "
            "host's, and anything it starts in the background ends when it ends. Unix sockets outside those "
            f"folders are unreachable. {network} Only PATH, HOME, LANG, TERM and a few other harmless variables "
            "of the host's environment are passed; API keys are not."
        )


def _matches(name: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(name, pattern) if pattern.endswith("*") else name == pattern


def _short(path: Path, home: Path) -> str:
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) and path != home else str(path)


def _etc_links_into(run: Path) -> list[Path]:
    """Files that links directly in /etc point to under ``run`` (resolv.conf on systemd machines)."""
    targets = []
    try:
        entries = list(os.scandir("/etc"))
    except OSError:
        return []
    for entry in entries:
        if entry.is_symlink():
            target = Path(os.path.realpath(entry.path))
            if target.is_relative_to(run) and target.is_file():
                targets.append(target)
    return sorted(set(targets))


def _sockets(roots: Sequence[Path], skip: Sequence[Path]) -> Iterator[Path]:
    """Unix sockets under ``roots`` (``SOCKET_SCAN_DEPTH`` levels, ``_SOCKET_SCAN_LIMIT`` entries at most)."""
    skipped = {Path(os.path.realpath(path)) for path in skip}
    budget = _SOCKET_SCAN_LIMIT
    stack = [(Path(os.path.realpath(root)), 0) for root in roots]
    seen: set[Path] = set()
    while stack and budget > 0:
        directory, depth = stack.pop()
        if directory in seen or directory in skipped:
            continue
        seen.add(directory)
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            budget -= 1
            try:
                if entry.is_symlink():
                    continue
                if entry.is_dir() and depth + 1 < SOCKET_SCAN_DEPTH:
                    stack.append((Path(entry.path), depth + 1))
                elif stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                    yield Path(entry.path)
            except OSError:
                continue


@functools.cache
def unavailable() -> str | None:
    """Why commands cannot be sandboxed on this machine, or None when they can."""
    if sys.platform == "darwin":
        return "this host has no sandbox for macOS (Seatbelt is not implemented); set [tools] sandbox = \"off\" to run commands without one"
    if not sys.platform.startswith("linux"):
        return f"this host has no sandbox for {sys.platform}; set [tools] sandbox = \"off\" to run commands without one"
    program = shutil.which("bwrap")
    if program is None:
        return f"bubblewrap (bwrap) is not installed: {INSTALL_HINT}"
    try:
        probe = child_processes.run([program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
                                "--unshare-ipc", "--unshare-uts", "--cap-drop", "ALL", "--unshare-net", "true"],
                               capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as error:
        return f"bubblewrap could not be started ({error}): {INSTALL_HINT}"
    if probe.returncode != 0:
        said = probe.stderr.decode(errors="replace").strip().splitlines()
        return (f"bubblewrap cannot create a sandbox here ({said[-1] if said else f'exit {probe.returncode}'}); "
                "enable unprivileged user namespaces, or set [tools] sandbox = \"off\" to run commands without one")
    return None
