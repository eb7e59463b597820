"""File helpers shared by the built-in file tools.

Contract: every function takes an already sandbox-resolved absolute `Path` and turns
OS errors into `ToolFailure`s whose message names the path as the user gave it
(`shown`). Only regular files are read (`regular_files`): a FIFO, socket or device fails
at once with code `not_regular_file` instead of blocking the call. `file_work` runs a
tool's file access in a worker thread, so a large file or a slow file system never holds
up the event loop, and fails with code `io_timeout` when it takes too long. Binary
detection is the usual heuristic: a NUL byte in the first 8 KiB, or content that is not
valid UTF-8.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from regular_files import FileIOTimeout, NotARegularFile, off_loop, read_regular

from ..atomic import write_atomically
from ..errors import ToolFailure

__all__ = ["SNIFF_BYTES", "file_work", "looks_binary", "not_regular", "read_existing", "read_text", "write_bytes"]

T = TypeVar("T")

SNIFF_BYTES = 8192
"""How much of a file is inspected to decide whether it is binary."""


def looks_binary(head: bytes) -> bool:
    """Whether the leading bytes of a file look like binary data."""
    if b"\x00" in head[:SNIFF_BYTES]:
        return True
    try:
        head[:SNIFF_BYTES].decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the sniff boundary is still text.
        return exc.start < len(head[:SNIFF_BYTES]) - 3
    return False


def not_regular(exc: NotARegularFile, shown: str) -> ToolFailure:
    """The failure for a path that names a FIFO, socket or device."""
    return ToolFailure(f"{exc.describe(shown)}; the file tools only work on regular files.", code="not_regular_file")


def _os_failure(exc: OSError, shown: str) -> ToolFailure:
    if isinstance(exc, NotARegularFile):
        return not_regular(exc, shown)
    if isinstance(exc, FileNotFoundError):
        return ToolFailure(f"File not found: {shown}", code="not_found")
    if isinstance(exc, IsADirectoryError):
        return ToolFailure(f"{shown} is a directory, not a file.", code="is_directory")
    if isinstance(exc, NotADirectoryError):
        return ToolFailure(f"A parent of {shown} is a file, not a directory.", code="not_a_directory")
    if isinstance(exc, PermissionError):
        return ToolFailure(f"Permission denied: {shown}", code="permission_denied")
    return ToolFailure(f"Cannot access {shown}: {exc.strerror or type(exc).__name__}.", code="io_error")


def read_existing(path: Path, shown: str) -> bytes | None:
    """The file's bytes, or None if it does not exist; directories and errors raise."""
    try:
        return read_regular(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _os_failure(exc, shown) from None


def read_text(path: Path, shown: str) -> str:
    """The file decoded as UTF-8; missing, binary or unreadable files raise `ToolFailure`."""
    data = read_existing(path, shown)
    if data is None:
        raise ToolFailure(f"File not found: {shown}", code="not_found")
    if looks_binary(data):
        raise ToolFailure(f"{shown} is a binary file ({len(data)} bytes); only text files can be edited.", code="binary_file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolFailure(f"{shown} is not valid UTF-8 text.", code="binary_file") from None


def write_bytes(path: Path, data: bytes, shown: str) -> None:
    """Write atomically (temp file + rename), creating parent directories; keeps the mode."""
    try:
        if path.is_dir():
            raise IsADirectoryError
        write_atomically(path, data)
    except OSError as exc:
        raise _os_failure(exc, shown) from None


async def file_work(shown: str, function: Callable[..., T], *args: object) -> T:
    """``function(*args)`` off the event loop; a `ToolFailure` when the file system takes too long."""
    try:
        return await off_loop(function, *args)
    except FileIOTimeout as exc:
        raise ToolFailure(f"Working on {shown} did not finish in time ({exc}); its file system may be slow or hung.",
                          code="io_timeout") from None
