"""Reading local files without hanging: only regular files are read, and slow work runs off the loop.

A named pipe (FIFO) blocks whoever opens it until a writer appears, and reading it waits for that
writer's data; a character device such as ``/dev/zero`` never ends; a socket cannot be opened at
all. Every part of the server that reads a file a user, a workspace or a model names (``resource*``
methods, the built-in tools, ignore files, attachments, plugin and ``.mcp.json`` declarations) goes
through this module, so none of them can be stopped by such a file. It sits beside ``tools``,
``plugins`` and ``host`` (all three use it) and imports nothing from the project.

Contract:

* ``check_regular(path)`` stats ``path`` (symlinks followed) and returns the ``os.stat_result`` of a
  regular file. A directory raises ``IsADirectoryError``; anything else that is not a regular file
  raises ``NotARegularFile``, whose ``kind`` says what it is ("named pipe (FIFO)", "socket",
  "character device", "block device"). OS errors (missing file, permission) pass through.
* ``open_regular(path)`` checks, then opens with ``O_NONBLOCK`` and checks the opened descriptor
  again (``fstat``): a path swapped for a FIFO between the check and the open is refused without
  ever blocking. ``O_NONBLOCK`` is cleared before the binary file object is returned, so reading
  behaves as usual.
* ``read_regular(path, limit=None)`` and ``read_regular_text(path, ...)`` read through it.
* ``off_loop(function, *args, timeout=FILE_IO_TIMEOUT)`` runs blocking file work in a worker thread
  and gives up waiting after ``timeout`` seconds with ``FileIOTimeout`` (a ``TimeoutError``): the
  event loop keeps serving meanwhile, and a hung file system costs a thread, not the host. The
  thread itself cannot be interrupted; it finishes (or not) on its own.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import io
import os
import stat
from collections.abc import Callable
from io import BufferedReader
from typing import TypeVar

__all__ = [
    "FILE_IO_TIMEOUT",
    "FileIOTimeout",
    "NotARegularFile",
    "check_regular",
    "kind_of",
    "off_loop",
    "open_regular",
    "read_regular",
    "read_regular_text",
]

FILE_IO_TIMEOUT = 30.0
"""Seconds a file operation may take in its worker thread before the caller stops waiting."""

T = TypeVar("T")

_KINDS = (
    (stat.S_ISFIFO, "named pipe (FIFO)"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISDIR, "directory"),
    (stat.S_ISLNK, "symbolic link"),
    (stat.S_ISREG, "regular file"),
)


def kind_of(mode: int) -> str:
    """What an ``st_mode`` describes, in words: "named pipe (FIFO)", "socket", "regular file"..."""
    return next((name for test, name in _KINDS if test(mode)), "special file")


class NotARegularFile(OSError):
    """The path names a FIFO, socket or device: reading it could wait for ever or never end."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(errno.EINVAL, f"it is a {kind}, not a regular file", os.fspath(path))
        self.kind = kind
        """What the path is instead ("named pipe (FIFO)", "socket", "character device"...)."""

    def describe(self, shown: str) -> str:
        """"<shown> is a named pipe (FIFO), not a regular file", for messages naming the path as given."""
        return f"{shown} is a {self.kind}, not a regular file"


class FileIOTimeout(TimeoutError):
    """A file operation did not finish in time (the file system is slow or hung)."""


def _refuse(path: str | os.PathLike[str], mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
    raise NotARegularFile(path, kind_of(mode))


def check_regular(path: str | os.PathLike[str]) -> os.stat_result:
    """The stat of ``path`` if it is a regular file (see the module contract)."""
    result = os.stat(path)
    _refuse(path, result.st_mode)
    return result


def open_regular(path: str | os.PathLike[str]) -> BufferedReader:
    """``path`` opened for binary reading, refused unless it is a regular file, never blocking."""
    check_regular(path)
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        _refuse(path, os.fstat(descriptor).st_mode)  # it may have been swapped since the check
        flags = fcntl.fcntl(descriptor, fcntl.F_GETFL)
        fcntl.fcntl(descriptor, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        return open(descriptor, "rb", closefd=True)
    except BaseException:
        os.close(descriptor)
        raise


def read_regular(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of a regular file (at most ``limit`` of them)."""
    with open_regular(path) as handle:
        return handle.read() if limit is None else handle.read(limit)


def read_regular_text(path: str | os.PathLike[str], encoding: str = "utf-8", errors: str = "strict") -> str:
    """A regular file decoded as text like ``Path.read_text`` (universal newlines); a
    ``UnicodeDecodeError`` when it is not ``encoding``."""
    with io.TextIOWrapper(open_regular(path), encoding=encoding, errors=errors) as text:
        return text.read()


async def off_loop(function: Callable[..., T], *args: object, timeout: float = FILE_IO_TIMEOUT) -> T:
    """``function(*args)`` in a worker thread; ``FileIOTimeout`` once ``timeout`` seconds passed."""
    work = asyncio.ensure_future(asyncio.to_thread(function, *args))
    try:
        done, _ = await asyncio.wait({work}, timeout=timeout)
    finally:
        if not work.done():
            work.cancel()  # stops waiting for it; the thread finishes on its own
    if not done:
        raise FileIOTimeout(f"the file operation did not finish within {timeout:g} s")
    return work.result()
