"""The host's data directory and its files are private to the user who runs the host.

The data directory holds every session's history (the journal), provider transcripts, the host's
token (``host.json``) and MCP OAuth tokens, so nobody else on the machine may read it. Contract:

* ``private_directory(path)`` creates ``path`` (and missing parents) with mode 0700. An existing
  one that its group or others may enter, read or write is tightened to 0700, with a warning in
  the log naming the old mode. One that cannot be tightened (it belongs to another user) is
  refused: ``ConfigError`` naming the directory, its owner and what to do.
* ``private_file(path)`` makes ``path`` a file only its owner may read and write (0600) before a
  database or log opens it: an absent one is created empty with that mode (SQLite then gives its
  ``-wal`` and ``-shm`` files the database's mode), an existing one, and its ``-wal``/``-shm``
  companions, are tightened.

Both are idempotent, and cheap enough to call at every start.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from host.errors import ConfigError

__all__ = ["private_directory", "private_file"]

logger = logging.getLogger(__name__)

_OTHERS = stat.S_IRWXG | stat.S_IRWXO


def private_directory(path: Path) -> Path:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.stat()
    if info.st_mode & _OTHERS:
        try:
            os.chmod(path, 0o700)
        except OSError as error:
            raise ConfigError(
                f"the data directory {path} can be read by other users (mode {stat.S_IMODE(info.st_mode):04o}, owner uid "
                f"{info.st_uid}) and could not be made private ({error.strerror}): run 'chmod 700 {path}' as its owner, "
                "or pass --data-dir (or set AGENT_HOST_DATA_DIR) to a directory of your own"
            ) from None
        logger.warning("the data directory %s was readable by other users (mode %04o): made it private (0700)",
                       path, stat.S_IMODE(info.st_mode))
    return path


def private_file(path: Path) -> Path:
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    for each in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            if each.stat().st_mode & _OTHERS:
                os.chmod(each, 0o600)
        except FileNotFoundError:
            continue
    return path
