"""Named connection tokens: one per person, each with a level, kept hashed in the data directory.

The host's own token (``--token``, ``server.token``, ``AGENT_HOST_TOKEN`` or a generated one) stays
what it was: whoever holds it has level ``full``. Next to it, ``agent-host token create NAME --level
read|full`` adds a named token to ``tokens.json`` in the data directory,
``agent-host token list`` lists them and ``agent-host token revoke NAME`` removes one. What each
level may do is ``host.transport.access``'s table.

Contract:

* A secret is 32 random bytes (``secrets.token_urlsafe``) behind the prefix ``aht_``; it is shown
  once, by ``create``, and never stored: the file holds its SHA-256 (a random secret of that length
  needs no slow hash; a slow one would cost every connection). ``match`` hashes what a client
  presents and compares it with every stored hash in constant time (``hmac.compare_digest``).
* The file is created 0600 (and set so when rewritten), written to a private temporary file and
  renamed into place, so a reader sees the old list or the new one, never half of one. Writers
  (two ``agent-host token`` commands at once) take an exclusive ``flock`` on the data directory.
* The running host reads the file again when it changed on disk (``refresh``: its inode, size and
  modification time), so a token created or revoked while it runs counts at the next check. A
  file it cannot read is logged and then no named token is accepted (the host's own still is).
  A revoked name stops matching; ``still_valid(grant)`` tells a connection opened with it.
* Names are 1-64 letters, digits, ``.``, ``_`` or ``-``, starting with a letter or digit; a name is
  used once.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from host.errors import AgentHostError

__all__ = ["FULL", "LEVELS", "READ", "TOKENS_FILE", "Grant", "HOST_GRANT", "NamedToken", "TokenError",
           "TokenFile"]

logger = logging.getLogger(__name__)

TOKENS_FILE = "tokens.json"
"""The file of named tokens, in the data directory."""

READ = "read"
FULL = "full"
LEVELS = (READ, FULL)
"""The levels, weakest first."""

_PREFIX = "aht_"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class TokenError(AgentHostError, ValueError):
    """A token command cannot be done (a bad name or level, a name in use, an unknown name, an
    unreadable file); the message says what to do."""


@dataclass(frozen=True)
class Grant:
    """What a connection may do: who it is and at which level."""

    name: str | None
    """The named token's name; None for the host's own token."""
    level: str
    digest: str | None = None
    """The stored hash it matched (a name revoked and created again is another grant)."""

    def describe(self) -> str:
        """How a message names this token: ``token 'alice' (level read)``."""
        who = f"token {self.name!r}" if self.name is not None else "the host's own token"
        return f"{who} (level {self.level})"


HOST_GRANT = Grant(None, FULL)
"""The host's own token (and any client of a host started without a token)."""


@dataclass(frozen=True)
class NamedToken:
    name: str
    level: str
    created: str
    """When it was created (ISO 8601, UTC)."""
    digest: str
    """SHA-256 of the secret, hex."""

    @property
    def grant(self) -> Grant:
        return Grant(self.name, self.level, self.digest)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


class TokenFile:
    """``tokens.json`` of one data directory."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.path = data_dir / TOKENS_FILE
        self._seen: tuple[int, int, int] | None = None
        """(inode, size, mtime_ns) of the file last read; None when it did not exist."""
        self._tokens: dict[str, NamedToken] = {}
        self._loaded = False
        self.generation = 0
        """Counts the times the file was read again (a watcher compares it with what it last saw)."""

    # -- the running host ----------------------------------------------------------------------

    def refresh(self) -> bool:
        """Read the file again if it changed on disk; True when it did."""
        try:
            info = os.stat(self.path)
            seen: tuple[int, int, int] | None = (info.st_ino, info.st_size, info.st_mtime_ns)
        except FileNotFoundError:
            seen = None
        if self._loaded and seen == self._seen:
            return False
        try:
            self._tokens = {token.name: token for token in self._read()} if seen is not None else {}
        except TokenError as error:  # no named token counts until the file is fixed
            logger.warning("%s; no named token is accepted until it is fixed", error)
            self._tokens = {}
        self._seen, self._loaded = seen, True
        self.generation += 1
        return True

    def match(self, presented: str | None) -> Grant | None:
        """The grant of the named token ``presented`` is, or None."""
        if not presented or not presented.startswith(_PREFIX):
            return None
        self.refresh()
        digest = _digest(presented).encode()
        found = None
        for token in self._tokens.values():  # every one compared: the time says nothing of which matched
            if hmac.compare_digest(digest, token.digest.encode()):
                found = token
        return found.grant if found is not None else None

    def still_valid(self, grant: Grant) -> bool:
        """Whether a connection opened with ``grant`` may go on: the host's own token always; a
        named one while that very token exists (revoked and created again under the same name, it
        is another token)."""
        if grant.name is None:
            return True
        self.refresh()
        token = self._tokens.get(grant.name)
        return token is not None and token.grant == grant

    def names(self) -> set[str]:
        self.refresh()
        return set(self._tokens)

    # -- the token command ---------------------------------------------------------------------

    def create(self, name: str, level: str) -> str:
        """Add a token; returns its secret (the only time it is known)."""
        if not _NAME.fullmatch(name or ""):
            raise TokenError(f"token name {name!r} is not valid: use 1-64 letters, digits, '.', '_' or '-', "
                             "starting with a letter or digit")
        if level not in LEVELS:
            raise TokenError(f"token level {level!r} is not one of {', '.join(LEVELS)}")
        secret = _PREFIX + secrets.token_urlsafe(32)
        with self._writing() as tokens:
            if name in tokens:
                raise TokenError(f"a token named {name!r} exists already: revoke it first "
                                 f"('agent-host token revoke {name}') or pick another name")
            created = datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
            tokens[name] = NamedToken(name, level, created, _digest(secret))
        return secret

    def entries(self) -> list[NamedToken]:
        return sorted(self._read(), key=lambda token: token.name)

    def revoke(self, name: str) -> None:
        with self._writing() as tokens:
            if name not in tokens:
                known = ", ".join(sorted(tokens)) or "none"
                raise TokenError(f"there is no token named {name!r} (tokens: {known}); 'agent-host token list' lists them")
            del tokens[name]

    # -- the file ------------------------------------------------------------------------------

    def _read(self) -> list[NamedToken]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except OSError as error:
            raise TokenError(f"cannot read {self.path}: {error.strerror}") from None
        try:
            entries = json.loads(text)["tokens"]
            return [NamedToken(e["name"], e["level"], e["created"], e["sha256"]) for e in entries]
        except (ValueError, KeyError, TypeError):
            raise TokenError(f"{self.path} is not a token file this host wrote; move it aside and create the tokens "
                             "again") from None

    @contextlib.contextmanager
    def _writing(self) -> Iterator[dict[str, NamedToken]]:
        """The tokens to change under the data directory's lock, written back when the block ends."""
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        directory = os.open(self.data_dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(directory, fcntl.LOCK_EX)
            tokens = {token.name: token for token in self._read()}
            yield tokens
            self._write(list(tokens.values()))
        finally:
            os.close(directory)  # (releases the lock)

    def _write(self, tokens: list[NamedToken]) -> None:
        body = {"version": 1, "tokens": [
            {"name": t.name, "level": t.level, "created": t.created, "sha256": t.digest}
            for t in sorted(tokens, key=lambda token: token.name)]}
        aside = self.path.with_name(f".{TOKENS_FILE}.{os.getpid()}")
        fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.fchmod(fd, 0o600)  # whatever the umask says
            os.write(fd, (json.dumps(body, indent=1) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(aside, self.path)

