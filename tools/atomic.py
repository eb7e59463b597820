"""Writing a file whole or not at all: the bytes go to a temporary file beside it, which then
replaces the file in one rename, so a reader (or a crash) never sees half of it.

Contract: ``write_atomically(path, data)`` creates missing parent folders, keeps an existing
file's permission bits, and leaves no temporary file behind, whether it succeeds or raises
``OSError``.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["write_atomically"]


def write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    temporary = path.with_name(f".{path.name[:200]}.agent-host-tmp-{os.getpid()}")
    try:
        temporary.write_bytes(data)
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
