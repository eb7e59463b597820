"""Host→client ``resource*`` requests: reading files a client publishes (``virtual://`` plugins).

Contract (PROTOCOL.md §5.2): a connected client answers the same ``resource*`` methods the host
does, for URIs it publishes. ``ClientResources`` keeps, per ``clientId``, the connections that
completed the handshake (the newest one is asked; a reconnect replaces a dead one), and offers:

* ``call(client_id, method, params)`` — one request, with the ``ahp-root://`` channel added; a
  client that is not connected, goes away or answers with an error raises
  ``ClientResourceError`` whose message says which client, which URI and why.
* ``mirror(client_id, uri, into)`` — copies the tree under ``uri`` into the local directory
  ``into`` with ``resourceList`` and ``resourceRead`` (base64), so code that parses local
  folders (the Open Plugins loader) reads a client's tree exactly like a ``file://`` one. The
  copy is built beside ``into`` and swapped in whole, so a failed fetch leaves no half tree.
  It is bounded (``MAX_FILES`` files, ``MAX_BYTES`` bytes, ``MAX_DEPTH`` levels); entry names
  that are not plain file names (``..``, ``/``, NUL, empty) are refused, so a client cannot
  make the host write outside ``into``. The protocol carries no file modes, so files that start
  with ``#!`` (scripts naming their interpreter) are made executable and the rest are not.

There is no per-URI cache beyond the mirror itself: callers decide when to fetch again (the
customization service does so when the client's ``nonce`` changes).
"""

from __future__ import annotations

import base64
import binascii
import shutil
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeGuard

from host.errors import AgentHostError, RpcCallError

__all__ = ["ClientResources", "ClientResourceError", "MAX_FILES", "MAX_BYTES", "MAX_DEPTH"]

MAX_FILES = 2_000
MAX_BYTES = 32 * 1024 * 1024
MAX_DEPTH = 16
_TIMEOUT = 30.0

Call = Callable[..., Awaitable[Any]]
"""``call(method, params, timeout=...)``: one connection's host→client request (``RpcEndpoint.call``)."""


class ClientResourceError(AgentHostError):
    """A client's resource could not be read; the message says why, for a person."""


class ClientResources:
    def __init__(self) -> None:
        self._peers: dict[str, list[Call]] = {}

    def attach(self, client_id: str, call: Call) -> None:
        calls = self._peers.setdefault(client_id, [])
        if call not in calls:
            calls.append(call)

    def detach(self, client_id: str, call: Call) -> None:
        calls = self._peers.get(client_id, [])
        if call in calls:
            calls.remove(call)
        if not calls:
            self._peers.pop(client_id, None)

    async def call(self, client_id: str, method: str, params: dict[str, Any]) -> Any:
        calls = self._peers.get(client_id)
        if not calls:
            raise ClientResourceError(f"client {client_id!r} is not connected to the host")
        try:
            return await calls[-1](method, {"channel": "ahp-root://", **params}, timeout=_TIMEOUT)
        except RpcCallError as error:
            raise ClientResourceError(f"client {client_id!r} answered {method} for {params.get('uri')} "
                                      f"with error {error.code}: {error.message}") from None
        except TimeoutError:
            raise ClientResourceError(f"client {client_id!r} did not answer {method} for {params.get('uri')} "
                                      f"within {_TIMEOUT:g} s") from None

    async def mirror(self, client_id: str, uri: str, into: Path) -> None:
        staging = into.with_name(f".{into.name}.{uuid.uuid4().hex[:8]}")
        staging.mkdir(parents=True)
        try:
            budget = _Budget()
            await self._copy_tree(client_id, uri.rstrip("/"), staging, 0, budget)
            if into.exists():
                shutil.rmtree(into)
            staging.rename(into)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)

    async def _copy_tree(self, client_id: str, uri: str, target: Path, depth: int, budget: _Budget) -> None:
        if depth > MAX_DEPTH:
            raise ClientResourceError(f"{uri} is nested more than {MAX_DEPTH} levels deep")
        listing = await self.call(client_id, "resourceList", {"uri": uri})
        entries = listing.get("entries") if isinstance(listing, dict) else None
        if not isinstance(entries, list):
            raise ClientResourceError(f"client {client_id!r} answered resourceList for {uri} without entries")
        for entry in entries:
            name = entry.get("name") if isinstance(entry, dict) else None
            if not _plain_name(name):
                raise ClientResourceError(f"client {client_id!r} listed an entry named {name!r} under {uri}; "
                                          "entry names must be plain file names")
            child_uri = f"{uri}/{name}"
            if entry.get("type") == "directory":
                (target / name).mkdir()
                await self._copy_tree(client_id, child_uri, target / name, depth + 1, budget)
                continue
            budget.count_file(uri)
            read = await self.call(client_id, "resourceRead", {"uri": child_uri, "encoding": "base64"})
            data = _decoded(read, child_uri)
            budget.count_bytes(len(data), uri)
            (target / name).write_bytes(data)
            if data.startswith(b"#!"):
                # resourceList carries no file modes: a script (it names its interpreter) is made
                # executable, so a plugin's hooks and servers run as they do from a file:// copy.
                (target / name).chmod(0o755)


class _Budget:
    def __init__(self) -> None:
        self.files = 0
        self.bytes = 0

    def count_file(self, uri: str) -> None:
        self.files += 1
        if self.files > MAX_FILES:
            raise ClientResourceError(f"the tree under {uri} has more than {MAX_FILES} files")

    def count_bytes(self, size: int, uri: str) -> None:
        self.bytes += size
        if self.bytes > MAX_BYTES:
            raise ClientResourceError(f"the tree under {uri} is larger than {MAX_BYTES // (1024 * 1024)} MB")


def _plain_name(name: Any) -> TypeGuard[str]:
    return (isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\\" not in name
            and "\x00" not in name and len(name) <= 255)


def _decoded(read: Any, uri: str) -> bytes:
    if not isinstance(read, dict) or not isinstance(read.get("data"), str):
        raise ClientResourceError(f"the client answered resourceRead for {uri} without data")
    if read.get("encoding") == "base64":
        try:
            return base64.b64decode(read["data"], validate=True)
        except (binascii.Error, ValueError):
            raise ClientResourceError(f"the client's base64 for {uri} does not decode") from None
    return read["data"].encode("utf-8")
