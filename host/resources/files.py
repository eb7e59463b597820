"""The sandboxed file ``resource*`` methods: read, list, resolve, write, mkdir, delete, copy, move, request.

Contract: every ``file:`` URI is resolved with ``tools.sandbox.resolve_path`` (symlinks
followed, attack strings refused) against the allowed roots: the host's default directory, every
session's working directory and ``[tools] extra_roots``. A refused path is -32009
PermissionDenied whose message names the roots that were expected; a URI with another scheme is
-32008 NotFound (this host serves no other file system). Errors follow PROTOCOL.md §5:
missing → -32008, exists (``createOnly``, mkdir over a file) → -32010, ``ifMatch`` mismatch or a
non-empty directory deleted without ``recursive`` → -32011. A root itself is never deleted, moved
or overwritten. ``resourceCopy`` / ``resourceMove`` overwrite an existing destination unless
``failIfExists`` (-32010); a symlink is copied or moved as a link, never followed out of the roots.
``resourceRequest`` grants what the sandbox and the OS allow (there is no per-client grant table:
every client of this host may use every root) and otherwise answers -32009 with
``{request: ResourceRequestParams}`` as its data, naming the access that was refused.
Messages never contain a traceback or OS error text beyond the reason.

Only regular files are read (``regular_files``): ``resourceRead`` of a FIFO, socket or device
answers at once with -32602 naming the path and what it is; ``resourceWrite`` does not write over
one, and ``resourceCopy`` refuses to copy one (or a folder holding one). The methods are
coroutines: the roots are taken on the event loop, then the file work runs in a worker thread, so a
big file or a slow file system never holds up other clients or ``/health``; a file system that
does not answer within ``timeout`` seconds (``FILE_IO_TIMEOUT``) gets -32603 saying so (the thread is left to
finish on its own). ``resolve_uri`` stays synchronous (path resolution only) for the services that
check URIs inline.

``etag`` is ``<mtime_ns>-<size>``: cheap, and changes with any write through this host.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import os
import shutil
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from host.errors import ErrorCode, RpcError
from regular_files import (
    FILE_IO_TIMEOUT,
    FileIOTimeout,
    NotARegularFile,
    check_regular,
    kind_of,
    off_loop,
    read_regular,
)
from tools.errors import SandboxError
from tools.sandbox import resolve_path

__all__ = ["ResourceService", "etag_of", "READ_LIMIT"]

READ_LIMIT = 32 * 1024 * 1024
"""The largest file ``resourceRead`` returns, in bytes."""


def etag_of(stat: os.stat_result) -> str:
    return f"{stat.st_mtime_ns}-{stat.st_size}"


class ResourceService:
    """The ``resource*`` methods for ``file:`` URIs (see the module contract)."""

    def __init__(self, roots: Callable[[], Sequence[Path]], timeout: float = FILE_IO_TIMEOUT) -> None:
        self._roots = roots
        self._files = _Files(roots)
        self.timeout = timeout
        """Seconds a method's file work may take before the client is told the file system hangs."""

    def resolve_uri(self, uri: Any) -> Path:
        """The sandboxed real path of a ``file:`` URI (raises ``RpcError``)."""
        return self._files.resolve_uri(uri)

    async def read(self, uri: Any) -> tuple[bytes, str]:
        """``resourceRead`` of a file: its bytes and content type."""
        return await self._off_loop("resourceRead", uri, "read", uri)

    async def list(self, uri: Any) -> dict[str, Any]:
        return await self._off_loop("resourceList", uri, "list", uri)

    async def resolve(self, uri: Any, follow_symlinks: bool = True) -> dict[str, Any]:
        return await self._off_loop("resourceResolve", uri, "resolve", uri, follow_symlinks)

    async def write(self, params: dict[str, Any]) -> dict[str, Any]:
        return await self._off_loop("resourceWrite", params.get("uri"), "write", params)

    async def mkdir(self, uri: Any) -> dict[str, Any]:
        return await self._off_loop("resourceMkdir", uri, "mkdir", uri)

    async def delete(self, uri: Any, recursive: bool = False) -> dict[str, Any]:
        return await self._off_loop("resourceDelete", uri, "delete", uri, recursive)

    async def copy(self, source: Any, destination: Any, fail_if_exists: bool = False) -> dict[str, Any]:
        return await self._off_loop("resourceCopy", source, "copy", source, destination, fail_if_exists)

    async def move(self, source: Any, destination: Any, fail_if_exists: bool = False) -> dict[str, Any]:
        return await self._off_loop("resourceMove", source, "move", source, destination, fail_if_exists)

    async def request(self, params: dict[str, Any]) -> dict[str, Any]:
        return await self._off_loop("resourceRequest", params.get("uri"), "request", params)

    async def _off_loop(self, method: str, uri: Any, name: str, *args: Any) -> Any:
        # The roots come from the store, which only the event loop may read: take them here.
        roots = tuple(self._roots())
        files = _Files(lambda: roots)
        try:
            return await off_loop(getattr(files, name), *args, timeout=self.timeout)
        except FileIOTimeout:
            raise RpcError(ErrorCode.INTERNAL_ERROR, f"{method} of {uri} did not finish within {self.timeout:g} s; "
                           "the file system may be slow or hung.") from None


class _Files:
    """The methods themselves, synchronous: they run in a worker thread with the roots fixed."""

    def __init__(self, roots: Callable[[], Sequence[Path]]) -> None:
        self._roots = roots

    # -- resolution ----------------------------------------------------------------------------

    def resolve_uri(self, uri: Any) -> Path:
        """The sandboxed real path of a ``file:`` URI (raises ``RpcError``)."""
        if not isinstance(uri, str) or not uri.lower().startswith("file:"):
            raise RpcError(ErrorCode.NOT_FOUND, f"{uri} is not a file URI this host serves.")
        roots = list(self._roots())
        try:
            return resolve_path(uri, roots[0], roots[1:])
        except SandboxError as error:
            raise RpcError(ErrorCode.PERMISSION_DENIED, error.message) from None

    def _is_root(self, path: Path) -> bool:
        return any(path == Path(os.path.realpath(root)) for root in self._roots())

    # -- methods -------------------------------------------------------------------------------

    def read(self, uri: Any) -> tuple[bytes, str]:
        path = self.resolve_uri(uri)
        try:
            size = check_regular(path).st_size
            if size > READ_LIMIT:
                raise RpcError(ErrorCode.PERMISSION_DENIED, f"{uri} is {size} bytes; the read limit is {READ_LIMIT}.")
            data = read_regular(path, READ_LIMIT + 1)
        except FileNotFoundError:
            raise RpcError(ErrorCode.NOT_FOUND, f"{uri} does not exist.") from None
        except IsADirectoryError:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"{uri} is a directory; use resourceList.") from None
        except NotARegularFile as error:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"{error.describe(str(uri))}; resourceRead reads only regular files.") from None
        except PermissionError:
            raise RpcError(ErrorCode.PERMISSION_DENIED, f"The host may not read {uri}.") from None
        except OSError as error:
            raise RpcError(ErrorCode.INTERNAL_ERROR, f"{uri} could not be read ({error.strerror or type(error).__name__}).") from None
        if len(data) > READ_LIMIT:  # it grew since the size check
            raise RpcError(ErrorCode.PERMISSION_DENIED, f"{uri} is over {READ_LIMIT} bytes, the read limit.")
        return data, mimetypes.guess_type(path.name)[0] or "application/octet-stream"

    def list(self, uri: Any) -> dict[str, Any]:
        path = self.resolve_uri(uri)
        if not path.exists():
            raise RpcError(ErrorCode.NOT_FOUND, f"{uri} does not exist.")
        if not path.is_dir():
            raise RpcError(ErrorCode.INVALID_PARAMS, f"{uri} is a file, not a directory; use resourceRead.")
        entries = []
        try:
            for entry in sorted(os.scandir(path), key=lambda e: e.name):
                entries.append({"name": entry.name, "type": "directory" if entry.is_dir() else "file"})
        except PermissionError:
            raise RpcError(ErrorCode.PERMISSION_DENIED, f"The host may not list {uri}.") from None
        return {"entries": entries}

    def resolve(self, uri: Any, follow_symlinks: bool = True) -> dict[str, Any]:
        if follow_symlinks:
            path = self.resolve_uri(uri)
            stat = _stat(path, uri, follow=True)
            kind = "directory" if path.is_dir() else "file"
        else:
            lexical = Path(os.path.normpath(_uri_path(uri)))
            parent = self.resolve_uri(lexical.parent.as_uri())
            path = parent / lexical.name if lexical.name else parent
            if not os.path.islink(path):
                path = self.resolve_uri(uri)  # not a link: the full sandbox check applies
            stat = _stat(path, uri, follow=False)
            kind = "symlink" if path.is_symlink() else "directory" if path.is_dir() else "file"
        result: dict[str, Any] = {
            "uri": path.as_uri(),
            "type": kind,
            "size": stat.st_size,
            "mtime": _iso(stat.st_mtime),
            "ctime": _iso(stat.st_ctime),
            "etag": etag_of(stat),
        }
        if kind == "file":
            content_type = mimetypes.guess_type(path.name)[0]
            if content_type:
                result["contentType"] = content_type
        return result

    def write(self, params: dict[str, Any]) -> dict[str, Any]:
        uri = params["uri"]
        path = self.resolve_uri(uri)
        data = _decode(params["data"], params["encoding"])
        exists = path.exists()
        if exists and path.is_dir():
            raise RpcError(ErrorCode.ALREADY_EXISTS, f"{uri} is a directory.")
        if exists and params.get("createOnly"):
            raise RpcError(ErrorCode.ALREADY_EXISTS, f"{uri} already exists (createOnly was set).")
        if params.get("ifMatch") is not None:
            current = etag_of(path.stat()) if exists else None
            if current != params["ifMatch"]:
                raise RpcError(ErrorCode.CONFLICT, f"{uri} changed since it was read (etag {current or 'none'}); read it again.")
        try:
            old = read_regular(path) if exists else b""
        except NotARegularFile as error:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"{error.describe(str(uri))}; the host does not write over it.") from None
        except PermissionError:
            raise RpcError(ErrorCode.PERMISSION_DENIED, f"The host may not read {uri}.") from None
        position = int(params.get("position") or 0)
        if position < 0:
            raise RpcError(ErrorCode.INVALID_PARAMS, "position must be 0 or more.")
        mode = params.get("mode") or "truncate"
        if mode == "truncate":
            new = old[:position] + data
        elif mode == "append":
            cut = max(len(old) - position, 0)
            new = old[:cut] + data + old[cut:]
        else:
            cut = min(position, len(old))
            new = old[:cut] + data + old[cut:]
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f".{path.name}.ahp-write")
            temporary.write_bytes(new)
            os.replace(temporary, path)  # readers never see a half-written file
        except PermissionError:
            raise RpcError(ErrorCode.PERMISSION_DENIED, f"The host may not write {uri}.") from None
        except NotADirectoryError:
            raise RpcError(ErrorCode.ALREADY_EXISTS, f"A file is in the way of {uri}.") from None
        return {}

    def mkdir(self, uri: Any) -> dict[str, Any]:
        path = self.resolve_uri(uri)
        if path.exists() and not path.is_dir():
            raise RpcError(ErrorCode.ALREADY_EXISTS, f"{uri} exists and is a file.")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise RpcError(ErrorCode.ALREADY_EXISTS, f"A file is in the way of {uri}.") from None
        except PermissionError:
            raise RpcError(ErrorCode.PERMISSION_DENIED, f"The host may not create {uri}.") from None
        return {}

    def _entry(self, uri: Any, verb: str) -> Path:
        """The directory entry a URI names, inside the roots, a symlink itself rather than its
        target; never a root (``verb`` says what was refused)."""
        lexical = Path(os.path.normpath(_uri_path(uri)))
        if not os.path.islink(lexical):
            self.resolve_uri(uri)  # the full sandbox check for everything but a link itself
        parent = self.resolve_uri(lexical.parent.as_uri()) if lexical.name else None
        path = parent / lexical.name if parent is not None else self.resolve_uri(uri)
        if parent is None or self._is_root(path) or (not path.is_symlink() and self._is_root(self.resolve_uri(uri))):
            raise RpcError(ErrorCode.PERMISSION_DENIED, f"{uri} is one of the host's allowed roots; it cannot be {verb}.")
        return path

    def delete(self, uri: Any, recursive: bool = False) -> dict[str, Any]:
        path = self._entry(uri, "deleted")
        if not path.exists() and not path.is_symlink():
            raise RpcError(ErrorCode.NOT_FOUND, f"{uri} does not exist.")
        try:
            if path.is_dir() and not path.is_symlink():
                if any(path.iterdir()) and not recursive:
                    raise RpcError(ErrorCode.CONFLICT, f"{uri} is a directory that is not empty; pass recursive: true.")
                shutil.rmtree(path) if recursive else path.rmdir()
            else:
                path.unlink()
        except PermissionError:
            raise RpcError(ErrorCode.PERMISSION_DENIED, f"The host may not delete {uri}.") from None
        return {}


    def copy(self, source: Any, destination: Any, fail_if_exists: bool = False) -> dict[str, Any]:
        return self._transfer(source, destination, fail_if_exists, move=False)

    def move(self, source: Any, destination: Any, fail_if_exists: bool = False) -> dict[str, Any]:
        return self._transfer(source, destination, fail_if_exists, move=True)

    def _transfer(self, source: Any, destination: Any, fail_if_exists: bool, *, move: bool) -> dict[str, Any]:
        verb = "moved" if move else "copied"
        origin = self._entry(source, verb) if move else self._copy_source(source)
        if not origin.exists() and not origin.is_symlink():
            raise RpcError(ErrorCode.NOT_FOUND, f"{source} does not exist.")
        target = self._entry(destination, "overwritten")
        if target == origin:
            return {}
        if origin.is_dir() and not origin.is_symlink() and target.is_relative_to(origin):
            raise RpcError(ErrorCode.INVALID_PARAMS, f"{destination} is inside {source}; a directory cannot be {verb} into itself.")
        if target.exists() or target.is_symlink():
            if fail_if_exists:
                raise RpcError(ErrorCode.ALREADY_EXISTS, f"{destination} already exists (failIfExists was set).")
        if not move:
            special = _special_file(origin)
            if special is not None:
                where, kind = special
                shown = source if where == origin else f"{source} holds {where.relative_to(origin)}, which"
                raise RpcError(ErrorCode.INVALID_PARAMS, f"{shown} is a {kind}, not a regular file; "
                               "resourceCopy copies only regular files, folders and links.")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists() or target.is_symlink():
                _remove(target)
            if move:
                shutil.move(str(origin), str(target))
            elif origin.is_dir() and not origin.is_symlink():
                shutil.copytree(origin, target, symlinks=True)
            else:
                shutil.copy2(origin, target, follow_symlinks=False)
        except PermissionError:
            raise RpcError(ErrorCode.PERMISSION_DENIED, f"The host may not {'move' if move else 'copy'} {source} to {destination}.") from None
        except (NotADirectoryError, FileExistsError):
            raise RpcError(ErrorCode.ALREADY_EXISTS, f"A file is in the way of {destination}.") from None
        except (shutil.Error, OSError) as error:  # e.g. a move across file systems meeting a FIFO
            reason = error.strerror if isinstance(error, OSError) and error.strerror else type(error).__name__
            raise RpcError(ErrorCode.INTERNAL_ERROR, f"{source} could not be {verb} to {destination} ({reason}).") from None
        return {}

    def _copy_source(self, uri: Any) -> Path:
        """A copy's source: a symlink is copied as a link, so only the link itself must be inside."""
        lexical = Path(os.path.normpath(_uri_path(uri)))
        if os.path.islink(lexical):
            return self.resolve_uri(lexical.parent.as_uri()) / lexical.name
        return self.resolve_uri(uri)

    def request(self, params: dict[str, Any]) -> dict[str, Any]:
        uri = params["uri"]
        wants_write = bool(params.get("write"))
        wants_read = bool(params.get("read")) or not wants_write
        asked = {"uri": uri, **({"read": True} if wants_read else {}), **({"write": True} if wants_write else {})}
        try:
            path = self.resolve_uri(uri)
        except RpcError as error:
            if error.code != ErrorCode.PERMISSION_DENIED:
                raise
            raise RpcError(ErrorCode.PERMISSION_DENIED, error.message, {"request": asked}) from None
        existing = path if path.exists() else next((p for p in path.parents if p.exists()), path)
        refused = [kind for kind, wanted, mode in (("read", wants_read, os.R_OK), ("write", wants_write, os.W_OK))
                   if wanted and not os.access(existing, mode)]
        if refused:
            raise RpcError(ErrorCode.PERMISSION_DENIED, f"The host's user may not {' or '.join(refused)} {uri}.",
                           {"request": asked})
        return {}


def _special_file(origin: Path) -> tuple[Path, str] | None:
    """The first FIFO, socket or device at or under ``origin`` (links are copied as links), if any."""
    def kind(path: Path) -> str | None:
        mode = os.lstat(path).st_mode
        found = kind_of(mode)
        return None if found in ("regular file", "directory", "symbolic link") else found

    if origin.is_symlink() or not origin.is_dir():
        found = kind(origin)
        return (origin, found) if found else None
    for directory, _, files in os.walk(origin, followlinks=False):
        for name in sorted(files):
            found = kind(Path(directory) / name)
            if found:
                return Path(directory) / name, found
    return None


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat().replace("+00:00", "Z")


def _uri_path(uri: Any) -> str:
    if not isinstance(uri, str) or not uri.lower().startswith("file:"):
        raise RpcError(ErrorCode.NOT_FOUND, f"{uri} is not a file URI this host serves.")
    return unquote(urlsplit(uri).path) or "/"


def _stat(path: Path, uri: Any, *, follow: bool) -> os.stat_result:
    try:
        return path.stat() if follow else path.lstat()
    except FileNotFoundError:
        raise RpcError(ErrorCode.NOT_FOUND, f"{uri} does not exist.") from None
    except PermissionError:
        raise RpcError(ErrorCode.PERMISSION_DENIED, f"The host may not read {uri}.") from None


def _decode(data: str, encoding: str) -> bytes:
    if encoding == "base64":
        try:
            return base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise RpcError(ErrorCode.INVALID_PARAMS, "data is not valid base64.") from None
    return data.encode("utf-8")
