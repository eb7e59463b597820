"""Which directories a session may work in, and the checks a requested one must pass.

A client names a session's working directory in ``createSession`` (``workingDirectory``, a
``file://`` URI); ``agent-host chat`` sends its own current directory. The host then runs tools,
reads instruction files and starts MCP servers there, so the directory is checked before the
session exists:

* it must be a local ``file://`` URI of an absolute path without NUL bytes;
* it must exist and be a directory (symlinks are resolved first; the resolved path is used);
* it must lie inside one of the allowed directories: ``[sessions] allowed_directories`` when set,
  otherwise the user's home directory, the host's default directory and the system temporary
  directory.

``WorkingDirectoryError`` carries a sentence saying what was wrong and what to do; the service turns
it into a ``-32602`` error. Nothing here touches the store; the only I/O is ``stat``.
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from host.errors import AgentHostError

__all__ = ["WorkingDirectoryError", "allowed_directories", "check_working_directory", "directory_of", "session_directory"]


class WorkingDirectoryError(AgentHostError, ValueError):
    """A requested working directory is refused; the message says why and what to do."""


def allowed_directories(configured: Iterable[str] | None, default_directory: Path) -> list[Path]:
    """The resolved roots sessions may work in (``configured``, or the built-in defaults)."""
    if configured is None:
        raw = [os.path.expanduser("~"), str(default_directory), tempfile.gettempdir()]
    else:
        raw = [os.path.expanduser(entry) for entry in configured]
    roots: list[Path] = []
    for entry in raw:
        resolved = Path(os.path.realpath(entry))
        if resolved not in roots:
            roots.append(resolved)
    return roots


def directory_of(uri: str) -> Path | None:
    """The local path of a ``file://`` URI, or ``None`` when it is not one."""
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    return Path(unquote(parsed.path))


def session_directory(state: dict[str, Any]) -> Path | None:
    """The working directory in a session's state (the first of ``workingDirectories``, internal
    model AHP 0.9.0), or None."""
    directories = state.get("workingDirectories")
    uri = directories[0] if isinstance(directories, list) and directories else None
    return _state_directory(uri) if isinstance(uri, str) else None


@functools.lru_cache(maxsize=256)
def _state_directory(uri: str) -> Path | None:
    """``directory_of`` for the URIs sessions' states hold: a turn asks for its session's
    working directory several times (preamble, tools, customizations), and most sessions share
    a few; a ``Path`` is immutable, so the same one serves every ask. Only URIs already in a
    session's state come here (a client's unchecked ones go to ``directory_of``)."""
    return directory_of(uri)


def check_working_directory(uri: object, allowed: list[Path]) -> str:
    """The canonical ``file://`` URI for ``uri`` after the checks above, or ``WorkingDirectoryError``."""
    if not isinstance(uri, str) or not uri:
        raise WorkingDirectoryError("workingDirectory must be a file:// URI naming a directory.")
    path = directory_of(uri)
    if path is None:
        raise WorkingDirectoryError(f"workingDirectory must be a local file:// URI; {uri[:200]!r} is not one.")
    if "\x00" in str(path) or not path.is_absolute():
        raise WorkingDirectoryError(f"workingDirectory must name an absolute path; {uri[:200]!r} does not.")
    resolved = Path(os.path.realpath(path))
    if not resolved.exists():
        raise WorkingDirectoryError(f"The working directory {path} does not exist; create it or pick another one.")
    if not resolved.is_dir():
        raise WorkingDirectoryError(f"The working directory {path} is not a directory.")
    if not any(resolved == root or root in resolved.parents for root in allowed):
        listed = ", ".join(str(root) for root in allowed) or "none"
        raise WorkingDirectoryError(
            f"The working directory {resolved} is outside the directories this host allows ({listed}); "
            "add it to [sessions] allowed_directories in the host's config to work there."
        )
    return resolved.as_uri()
