"""Resource watches: ``createResourceWatch`` and the ``ahp-resource-watch:/<id>`` channels.

Contract (PROTOCOL.md §5.1, §11):

* A watch is created on a ``file:`` URI that exists and passes the same sandbox as every other
  ``resource*`` method (``ResourceService.resolve_uri``): outside the roots → -32009, missing →
  -32008. Its channel state ``{root, recursive, excludes?, includes?}`` never changes.
* Changes are reported as ``resourceWatch/changed`` batches, never empty. ``recursive: false``
  reports the URI itself and, for a directory, its direct children; a watched *file* is watched
  through its parent directory so an atomic replace (write to a temporary, rename) is still seen.
  ``excludes`` / ``includes`` are gitwildmatch patterns relative to the watched root
  (``pathspec``), so ``*.log`` or ``build/`` mean what they mean in a ``.gitignore``.
* A recursive watch reports only paths whose folder really lies inside the watched root: a
  change seen through a symbolic link to a folder elsewhere (the OS watcher follows such links) is
  dropped, so a watch never names a file outside its root.
* Limits: at most ``limit`` watches at once (``[server] max_resource_watches``, 256), counting
  the ones being created; one more is refused with -32009 saying so and what to do. Each watch
  holds one of the OS's file watchers (inotify instances on Linux, ``fs.inotify.max_user_instances``
  per user, 128 by default and shared with every other program of the user) and one OS watch per
  folder below it (``fs.inotify.max_user_watches``): when the OS refuses first, the -32009 says
  which limit was reached, its value, and what to do, in plain words.
* A watch lives while someone listens: it is released when its last subscriber unsubscribes or
  disconnects, or when the connection that created it goes away without ever subscribing. Watch
  channels are not carried across a host restart (the OS watcher is gone); a client that
  ``reconnect``s finds them under ``missing``.

The OS watching is done by ``watchfiles``' Rust notifier (inotify, FSEvents, ...). Each watch runs
its notifier's blocking ``watch`` call on its own daemon thread, not in asyncio's default executor
(a handful of threads, shared with everything else) nor anyio's thread pool: a watch waits for
hours. ``RustNotify`` is constructed (in a worker thread: a large tree takes a while) before
``createResourceWatch`` answers, so a change made right after the answer is already seen. Batches come back to the event loop through
``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import logging
import os
import re
import resource
import sys
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from watchfiles import Change
from watchfiles._rust_notify import RustNotify

from ahp.protocol import builders
from host.errors import ErrorCode, RpcError
from host.resources.files import ResourceService
from host.state.store import Store

if TYPE_CHECKING:  # imported on first watch: a host that never watches does not load it at start
    import pathspec

__all__ = ["ResourceWatches", "WATCH_SCHEME", "MAX_WATCHES", "os_refusal"]

logger = logging.getLogger(__name__)

WATCH_SCHEME = "ahp-resource-watch:/"
MAX_WATCHES = 256
"""Watches open at once on this host by default; each holds an OS watcher and a thread."""

_DEBOUNCE_MS = 300
_STEP_MS = 50
_CHANGE_TYPES = {Change.added: "added", Change.modified: "updated", Change.deleted: "deleted"}


@dataclass
class _Watch:
    channel: str
    root: Path
    is_file: bool
    recursive: bool
    excludes: pathspec.GitIgnoreSpec | None
    includes: pathspec.GitIgnoreSpec | None
    owner: object
    notifier: RustNotify
    real_root: str = ""
    """The watched folder's real path: reported paths must really lie in it."""
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    observed: bool = False
    """Someone subscribed at least once; from then on no subscriber means released."""

    def reported(self, path: str) -> bool:
        """Whether a change at ``path`` belongs to this watch (scope, then patterns)."""
        candidate = Path(path)
        if self.is_file:
            return candidate == self.root
        try:
            relative = candidate.relative_to(self.root)
        except ValueError:
            return False
        if not relative.parts:
            return True
        if not self.recursive and len(relative.parts) > 1:
            return False
        if self.recursive and len(relative.parts) > 1 and not _inside(os.path.realpath(candidate.parent), self.real_root):
            return False  # seen through a symbolic link to a folder elsewhere
        text = relative.as_posix()
        if self.excludes is not None and self.excludes.match_file(text):
            return False
        if self.includes is not None and not self.includes.match_file(text):
            return False
        return True


class ResourceWatches:
    def __init__(self, store: Store, resources: ResourceService, limit: int = MAX_WATCHES) -> None:
        self._store = store
        self._resources = resources
        self.limit = limit
        self._watches: dict[str, _Watch] = {}
        self._creating = 0
        """Watches whose OS watcher is being set up: they count against the limit already."""
        self._loop: asyncio.AbstractEventLoop | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    def drop_recovered(self) -> None:
        """At start: watch channels from before a restart have no OS watcher any more."""
        for channel, _ in list(self._store.channels("resourceWatch")):
            if channel not in self._watches:
                self._store.remove(channel)

    async def close(self) -> None:
        for channel in list(self._watches):
            self._release(channel)

    # -- createResourceWatch -------------------------------------------------------------------

    async def create(self, params: dict[str, Any], owner: object, owner_open: Callable[[], bool] = lambda: True) -> dict[str, Any]:
        uri = params["uri"]
        path = self._resources.resolve_uri(uri)
        if not path.exists():
            raise RpcError(ErrorCode.NOT_FOUND, f"{uri} does not exist; create it before watching it.")
        if len(self._watches) + self._creating >= self.limit:
            raise RpcError(ErrorCode.PERMISSION_DENIED, f"This host already runs {self.limit} resource watches, its limit "
                           "([server] max_resource_watches); unsubscribe from watches you no longer need, then try again.")
        excludes = _patterns(params.get("excludes"), "excludes")
        includes = _patterns(params.get("includes"), "includes")
        recursive = bool(params.get("recursive"))
        is_file = not path.is_dir()
        watched = path.parent if is_file else path
        self._creating += 1
        try:
            # Adding OS watches to a large tree takes a while: not on the event loop.
            notifier = await asyncio.to_thread(_notifier, watched, recursive and not is_file)
        except (OSError, RuntimeError) as error:
            raise RpcError(ErrorCode.PERMISSION_DENIED, os_refusal(error, uri, len(self._watches))) from None
        finally:
            self._creating -= 1
        if not owner_open():  # the creator left while the OS watches were being added
            notifier.close()
            raise RpcError(ErrorCode.NOT_FOUND, "The connection closed before the watch was ready.")
        channel = f"{WATCH_SCHEME}{uuid.uuid4()}"
        watch = _Watch(channel, path, is_file, recursive, excludes, includes, owner, notifier, os.path.realpath(watched))
        state: dict[str, Any] = {"root": path.as_uri(), "recursive": recursive}
        for key in ("excludes", "includes"):
            if params.get(key) is not None:
                state[key] = {"items": list(params[key]["items"])}
        self._loop = asyncio.get_running_loop()
        self._store.create(channel, "resourceWatch", state)
        self._watches[channel] = watch
        watch.thread = threading.Thread(target=self._pump, args=(watch,), name=f"watch {path}", daemon=True)
        watch.thread.start()
        return {"channel": channel}

    # -- subscription bookkeeping (called by connections) --------------------------------------

    def subscribed(self, channel: str) -> None:
        watch = self._watches.get(channel)
        if watch is not None:
            watch.observed = True

    def release_idle(self, closed_owner: object | None = None) -> None:
        """Release watches nobody listens to (after an unsubscribe or a disconnect)."""
        for channel, watch in list(self._watches.items()):
            if self._store.has_subscribers(channel):
                continue
            if watch.observed or (closed_owner is not None and watch.owner is closed_owner):
                self._release(channel)

    def __contains__(self, channel: str) -> bool:
        return channel in self._watches

    # -- internals -----------------------------------------------------------------------------

    def _release(self, channel: str) -> None:
        watch = self._watches.pop(channel, None)
        if watch is None:
            return
        watch.stop.set()  # the pump returns within one step and closes the notifier
        self._store.remove(channel)

    def _pump(self, watch: _Watch) -> None:
        """Runs on the watch's own thread until the watch is released."""
        loop = self._loop
        assert loop is not None  # set before the first watch's thread starts
        try:
            while not watch.stop.is_set():
                raw = watch.notifier.watch(_DEBOUNCE_MS, _STEP_MS, 0, watch.stop)
                if isinstance(raw, str):
                    if raw == "stop":
                        break
                    continue
                changes = _batch(watch, raw)
                if changes:
                    try:
                        loop.call_soon_threadsafe(self._deliver, watch.channel, changes)
                    except RuntimeError:  # the event loop is gone: the host has stopped
                        break
        except Exception:  # the notifier failing must not kill the host; the watch just goes quiet
            logger.exception("resource watch %s stopped", watch.channel)
        finally:
            watch.notifier.close()

    def _deliver(self, channel: str, changes: list[dict[str, str]]) -> None:
        if channel in self._watches and channel in self._store:
            self._store.dispatch(channel, builders.resource_watch_changed(changes={"items": changes}))


def _batch(watch: _Watch, raw: set[tuple[int, str]]) -> list[dict[str, str]]:
    """One change per path, in path order; a path both added and deleted in a batch is reported
    as what it is now (present → added/updated, gone → deleted)."""
    by_path: dict[str, set[str]] = {}
    for code, path in raw:
        if watch.reported(path):
            by_path.setdefault(path, set()).add(_CHANGE_TYPES[Change(code)])
    changes = []
    for path in sorted(by_path):
        kinds = by_path[path]
        if len(kinds) == 1:
            kind = next(iter(kinds))
        elif os.path.lexists(path):
            kind = "added" if "added" in kinds else "updated"
        else:
            kind = "deleted"
        changes.append({"uri": Path(path).as_uri(), "type": kind})
    return changes


def _patterns(value: Any, key: str) -> pathspec.GitIgnoreSpec | None:
    if value is None:
        return None
    items = value.get("items") if isinstance(value, dict) else None
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise RpcError(ErrorCode.INVALID_PARAMS, f"{key} must be {{\"items\": [glob, ...]}}.")
    import pathspec

    try:
        return pathspec.GitIgnoreSpec.from_lines(items)
    except Exception:
        raise RpcError(ErrorCode.INVALID_PARAMS, f"{key} holds a pattern that is not a valid glob: {items}.") from None


def _notifier(folder: Path, recursive: bool) -> RustNotify:
    """The OS watcher of ``folder``. Blocking: run in a thread. On Linux the notifier stops adding
    folders of a recursive watch silently when the user's inotify watches run out, so a probe
    for one more watch afterwards tells whether it got them all; if not, it is closed and the
    limit is reported like any other refusal (``os_refusal``)."""
    notifier = RustNotify([str(folder)], False, False, 300, recursive, True)
    if recursive and not _one_more_watch_fits(folder):
        notifier.close()
        raise OSError(errno.ENOSPC, "inotify watches used up")
    return notifier


def _one_more_watch_fits(folder: Path) -> bool:
    """Whether this user may add one more inotify watch (True where there is no inotify, or when
    no inotify instance is left to ask with: the instance limit is reported where it is hit)."""
    if not sys.platform.startswith("linux"):
        return True
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        probe = libc.inotify_init1(os.O_CLOEXEC | os.O_NONBLOCK)
    except (OSError, AttributeError):
        return True
    if probe < 0:
        return True
    try:
        in_delete_self = 0x400
        return libc.inotify_add_watch(probe, os.fsencode(folder), in_delete_self) >= 0 or ctypes.get_errno() != errno.ENOSPC
    finally:
        os.close(probe)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


_OS_ERROR = re.compile(r"os error (\d+)")
_WATCH_LIMIT_TEXT = "watch limit"


def os_refusal(error: BaseException, uri: str, held: int) -> str:
    """Why the OS would not watch ``uri``, in plain words with what to do (``held``: the watches
    this host already runs). Never the watcher library's own text."""
    text = str(error)
    number = getattr(error, "errno", None)
    if number is None:
        found = _OS_ERROR.search(text)
        number = int(found.group(1)) if found else None
    if number == errno.ENOSPC or _WATCH_LIMIT_TEXT in text.lower():
        name, value = _os_limit("max_user_watches", "max_inotify_watches")
        return (f"The host cannot watch {uri}: it holds more folders than the operating system lets this user watch "
                f"at once{_limit_note(name, value)}. Watch a smaller folder (or with recursive: false), close watches "
                f"you no longer need, or raise the limit{_raise_hint(name, value, 524288)}.")
    if number == errno.EMFILE:
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft != resource.RLIM_INFINITY and _open_files() >= soft - 8:
            return (f"The host cannot watch {uri}: the host process has as many files open as it may ({soft}, its "
                    "'ulimit -n'). Unsubscribe from watches you no longer need, or start the host with a higher limit.")
        name, value = _os_limit("max_user_instances", "max_inotify_instances")
        return (f"The host cannot watch {uri}: this user has used up the file watchers the operating system allows "
                f"one user{_limit_note(name, value)}; this host holds {held} of them, other programs (editors, "
                f"other tools) the rest. Unsubscribe from watches you no longer need, or raise the limit"
                f"{_raise_hint(name, value, 1024)}.")
    if number == errno.ENFILE:
        return f"The host cannot watch {uri}: the operating system has as many files open as it allows. Try again later."
    if isinstance(error, PermissionError) or number in (errno.EACCES, errno.EPERM):
        return f"The host cannot watch {uri}: the operating system denied access to it."
    reason = os.strerror(number) if number is not None else "the operating system refused"
    return f"The host cannot watch {uri}: {reason}."


def _os_limit(fs_name: str, user_name: str) -> tuple[str | None, int | None]:
    """The tighter of Linux's two settings for an inotify limit (``fs.inotify.*`` for the user,
    ``user.*`` for the user namespace), with its sysctl name; (None, None) elsewhere."""
    found: list[tuple[int, str]] = []
    for name, path in ((f"fs.inotify.{fs_name}", f"/proc/sys/fs/inotify/{fs_name}"), (f"user.{user_name}", f"/proc/sys/user/{user_name}")):
        try:
            with open(path) as handle:
                found.append((int(handle.read().strip()), name))
        except (OSError, ValueError):
            continue
    if not found:
        return None, None
    value, name = min(found)
    return name, value


def _limit_note(name: str | None, value: int | None) -> str:
    return f" ({name} = {value})" if name is not None else ""


def _raise_hint(name: str | None, value: int | None, suggested: int) -> str:
    if name is None or value is None:
        return ""
    return f" (for example: sudo sysctl {name}={max(suggested, value * 4)})"


def _open_files() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0
