"""The OS sandbox commands run in: bubblewrap (``bwrap``) on Linux.

Contract: ``OsSandbox(writable, network).command(argv)`` returns the argv that runs ``argv``
inside a bubblewrap sandbox where

* the whole file system is visible read-only (``--ro-bind / /``), with a fresh ``/dev`` and
  ``/proc``;
* ``/tmp`` is a private, empty, writable temporary directory (a tmpfs that disappears with the
  command: programs' scratch files work, the host's ``/tmp`` is neither read nor written);
* each folder in ``writable`` (the session's folders) is bound read-write at its own path, after
  the private ``/tmp``, so a session folder that lives under ``/tmp`` stays visible and writable;
* the network is cut off (``--unshare-net``: only a loopback device) unless ``network`` is True;
* the sandbox ends with the process that started it (``--die-with-parent``); process ids, the
  process group and the terminal are shared, so the host's handling of a command's processes
  (timeouts, background jobs) works unchanged.

A write anywhere else fails in the command as on a read-only file system (``EROFS``).

``unavailable()`` says why this platform cannot sandbox (None when it can): not Linux (macOS
Seatbelt is not implemented), no ``bwrap`` on ``PATH`` (Debian/Ubuntu package ``bubblewrap``),
or ``bwrap`` that cannot create its namespaces here (unprivileged user namespaces disabled).
The probe runs ``bwrap`` once per process and remembers the answer.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["OsSandbox", "unavailable", "INSTALL_HINT"]

INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap), "
                "or set [tools] sandbox = \"off\" to run commands without one")


@dataclass(frozen=True)
class OsSandbox:
    writable: tuple[Path, ...]
    """Folders the command may write (besides its private /tmp)."""
    network: bool = False
    """Whether the command reaches the network."""
    program: str = "bwrap"

    def command(self, argv: Sequence[str]) -> list[str]:
        wrapped = [self.program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        for folder in dict.fromkeys(str(path) for path in self.writable):
            wrapped += ["--bind", folder, folder]
        if not self.network:
            wrapped.append("--unshare-net")
        wrapped += ["--die-with-parent", "--", *argv]
        return wrapped


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
        probe = subprocess.run([program, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net", "true"],
                               capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError) as error:
        return f"bubblewrap could not be started ({error}): {INSTALL_HINT}"
    if probe.returncode != 0:
        said = probe.stderr.decode(errors="replace").strip().splitlines()
        return (f"bubblewrap cannot create a sandbox here ({said[-1] if said else f'exit {probe.returncode}'}); "
                "enable unprivileged user namespaces, or set [tools] sandbox = \"off\" to run commands without one")
    return None
