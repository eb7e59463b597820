"""One host per data directory, shared by every ``agent-host`` that uses the directory.

The journal has one writer, so one host runs per data directory; every ``agent-host`` (chat or
``-p``) in any project is a client of it. Four files in the data directory carry the arrangement:

* ``host.lock``: the running host holds an exclusive ``flock`` on it for its whole life, so "the
  lock is held" means "a host is alive" (the kernel drops it when the process dies, however it dies).
* ``host.json``: what a client needs to reach that host: ``url`` (loopback, token included),
  ``pid``, ``config`` (which config it runs with: path and digests, ``config_identity``) and ``terminal`` (true for a
  host started for terminals, which stops by itself), and after a config reload ``reload`` (see
  ``reload_host``). Written by the host once it listens, mode
  0600 from the moment it exists (written aside and renamed in place), removed before it stops. A
  client reads it only when it belongs to this user and nobody else may read or write it.
* ``terminal-directories``: each terminal client appends the directory it was started in (one
  resolved path a line, mode 0600) before it connects; a terminal host adds them to a configured
  ``[sessions] allowed_directories`` when a connection opens, as it does its own starting
  directory ("the user started agent-host here: a directory to work in"). Emptied when a host starts.
* ``clients.lock``: every terminal client holds a shared ``flock`` on it while it runs. A terminal
  host stops only when it can take that lock exclusively and has no connection open (checked every
  ``LINGER`` seconds), so it never stops under a chat or ``-p`` run that is still starting, nor
  under any other client (VS Code, ``agent-host chat URL``) that is connected. A client arriving
  while the host stops waits on that lock, then finds no host and starts the next one.

The host is a process of its own (``agent-host serve --for-terminal``, started by the first client
in a new session, so Ctrl-C in one terminal does not reach it), not a part of the first terminal's
process: the first chat may end while another project's turn is running on the host.

``reach(...)`` is the client side (a context manager: hold the shared lock, find or start the host,
yield its URL); ``publish``/``withdraw``/``stop_when_unused`` the host side. Errors are
``SharedHostError`` with a sentence saying what to do.
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import os
import selectors
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = [
    "LINGER", "HOST_FILE", "SharedHostError", "config_identity", "publish", "withdraw", "read",
    "reach", "find_or_start", "stop_when_unused", "try_lock", "STARTING_ELSEWHERE", "started_directories", "reload_host",
    "reload_now", "alive",
]

LINGER = 2.0
"""Seconds a terminal host waits between checks for "no client left" (so a ``-p`` run right after
a chat, or a script's next ``-p``, finds the same host)."""

HOST_FILE = "host.json"
DIRECTORIES_FILE = "terminal-directories"
LOCK_FILE = "host.lock"
CLIENTS_FILE = "clients.lock"

STARTING_ELSEWHERE = 75
"""The exit status of ``serve --for-terminal`` when another host holds the data directory (a
client that started it looks for that host instead)."""

_RELOAD_WAIT = 15.0
"""Seconds a client waits for the host to read its edited config file again."""

_START_WAIT = 120.0
"""Seconds a client waits for a host that holds the lock to publish its address (a large journal
takes a while to recover)."""


class SharedHostError(Exception):
    """The shared host cannot be reached or started; the message says why and what to do."""


def config_identity(path: str | None, keys: dict[str, str]) -> dict[str, str]:
    """Which config a host runs with: the resolved path (or "none"), a digest of its text, and a
    digest of the API key variables its agents read from the environment (``keys``, name to value;
    the values never leave this digest)."""
    digest = "none"
    if path is not None:
        resolved = Path(path).expanduser().resolve()
        try:
            digest = hashlib.sha256(resolved.read_bytes()).hexdigest()[:16]
        except OSError:
            digest = "unreadable"
    keyed = hashlib.sha256(json.dumps(sorted(keys.items())).encode()).hexdigest()[:16]
    return {"path": str(resolved) if path is not None else "none", "text": digest, "keys": keyed}


def try_lock(handle: Any, mode: int) -> bool:
    """Take ``flock`` ``mode`` without waiting; False when another process holds a conflicting one."""
    try:
        fcntl.flock(handle.fileno(), mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


# -- the host's side ---------------------------------------------------------------------------


def publish(data_dir: Path, *, url: str, config: dict[str, str], terminal: bool, reload: dict[str, Any] | None = None) -> None:
    """Write ``host.json`` (mode 0600 from the start, then renamed over any old one); ``reload``:
    how the last config reload went (``text``, the file's digest then, and ``applied`` and
    ``pending`` or ``error``)."""
    record = {"url": url, "pid": os.getpid(), "config": config, "terminal": terminal}
    if reload is not None:
        record["reload"] = reload
    aside = data_dir / f".{HOST_FILE}.{os.getpid()}"
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)  # whatever the umask or an older file said
        os.write(fd, json.dumps(record).encode())
    finally:
        os.close(fd)
    os.replace(aside, data_dir / HOST_FILE)


def withdraw(data_dir: Path) -> None:
    """Remove ``host.json`` if it is this process's (or unreadable as anyone's: the caller holds
    ``host.lock``, so no other host can have written it)."""
    try:
        record = read(data_dir)
    except SharedHostError:
        record = {"pid": os.getpid()}
    if record is not None and record.get("pid") == os.getpid():
        (data_dir / HOST_FILE).unlink(missing_ok=True)


async def stop_when_unused(data_dir: Path, connections: Callable[[], int], stop: Callable[[], None]) -> None:
    """For a terminal host: every ``LINGER`` seconds, stop when no connection is open and no
    terminal client holds ``clients.lock``. The exclusive lock taken then is kept until the
    process exits, so a client arriving meanwhile waits and then starts a new host."""
    handle = open(data_dir / CLIENTS_FILE, "a+")
    try:
        while True:
            await asyncio.sleep(LINGER)
            if connections() == 0 and try_lock(handle, fcntl.LOCK_EX):
                if connections() == 0:
                    withdraw(data_dir)
                    stop()
                    _keep_open.append(handle)  # released by the exit, after host.lock
                    return
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    except BaseException:
        handle.close()
        raise


_keep_open: list[Any] = []


def started_directories(data_dir: Path) -> list[str]:
    """The directories terminal clients of this host were started in (``terminal-directories``;
    nothing when that file is not private to this user)."""
    text = _read_private(data_dir / DIRECTORIES_FILE)
    return [line for line in (text or "").splitlines() if line.startswith("/")]


# -- the client's side -------------------------------------------------------------------------


def read(data_dir: Path) -> dict[str, Any] | None:
    """``host.json`` as a dict, None when there is none; ``SharedHostError`` when it is not
    private to this user or not readable."""
    text = _read_private(data_dir / HOST_FILE)
    if text is None:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return None  # being replaced; the caller looks again
    return record if isinstance(record, dict) and isinstance(record.get("url"), str) else None


def _read_private(path: Path) -> str | None:
    """The text of ``path`` (None when missing); ``SharedHostError`` unless only this user may
    read or write it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise SharedHostError(f"cannot read {path}: {error.strerror}; remove it and try again") from None
    try:
        info = os.fstat(fd)
        if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
            raise SharedHostError(
                f"{path} is not private to you (owner uid {info.st_uid}, mode {stat.S_IMODE(info.st_mode):04o}); "
                "it is what your agent-host trusts: remove it and try again"
            )
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
            if sum(map(len, chunks)) > 1 << 20:
                break
        return b"".join(chunks).decode("utf-8", "replace")
    finally:
        os.close(fd)


def _note_directory(data_dir: Path, directory: Path) -> None:
    fd = os.open(data_dir / DIRECTORIES_FILE, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, f"{directory}\n".encode())
    finally:
        os.close(fd)


@contextmanager
def reach(
    data_dir: Path, *, config: dict[str, str], directory: Path, start: Callable[[], subprocess.Popen[bytes]],
    notice: Callable[[str], None] = lambda text: None,
) -> Iterator[str]:
    """Hold ``clients.lock`` shared for the block and yield the URL (token included) of the host
    of ``data_dir``, starting one with ``start()`` when none runs. ``start`` returns the process
    of ``agent-host serve --for-terminal``, its stdout and stderr piped. ``directory`` (where this
    client works) is noted in ``terminal-directories`` before the URL is yielded. ``notice`` is
    told, once, when this client waits a while for another host to start.

    A host whose config file was edited since it started reads it again (``reload_host``): it
    takes on what it can while running and the client uses it. A terminal host running with
    another config (another ``--config``, other API key variables) that nobody else uses is let
    stop, and a new one started; one still in use is named in the error."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # a new one private to the user
    with open(data_dir / CLIENTS_FILE, "a+") as clients:
        while True:
            fcntl.flock(clients.fileno(), fcntl.LOCK_SH)  # waits only while a host is stopping
            try:
                url = find_or_start(data_dir, config, start, notice)
                break
            except _OtherConfig as other:
                fcntl.flock(clients.fileno(), fcntl.LOCK_UN)  # this client does not keep it running
                if not (other.terminal and _stops(data_dir)):
                    raise SharedHostError(str(other)) from None
        if "\n" not in str(directory):
            _note_directory(data_dir, directory)
        yield url


class _OtherConfig(SharedHostError):
    def __init__(self, message: str, terminal: bool) -> None:
        super().__init__(message)
        self.terminal = terminal


def _stops(data_dir: Path) -> bool:
    """Whether the host of ``data_dir`` stops within a few of its checks (nobody else uses it)."""
    deadline = time.monotonic() + 3 * LINGER + 5
    while time.monotonic() < deadline:
        if not _host_alive(data_dir):
            return True
        time.sleep(0.05)
    return False


def find_or_start(
    data_dir: Path, config: dict[str, str], start: Callable[[], subprocess.Popen[bytes]],
    notice: Callable[[str], None] = lambda text: None,
) -> str:
    """The URL of the host of ``data_dir``, started with ``start()`` when none runs. The caller
    holds ``clients.lock`` shared (``reach``; again when a chat looks for a host that stopped)."""
    began = time.monotonic()
    deadline = began + _START_WAIT
    noticed = False
    while True:
        record = read(data_dir)
        if _host_alive(data_dir):
            if record is not None and _process_exists(record.get("pid")):
                if _only_the_text_differs(record, config):
                    record = reload_host(data_dir, record, config, notice)
                _check_config(data_dir, record, config)
                return str(record["url"])
        else:
            url = _start(start)
            if url is not None:
                return url
            # Another client's host won the data directory: it publishes its address shortly.
        if not noticed and time.monotonic() > began + 2:
            noticed = True
            notice(f"waiting for the agent-host starting on {data_dir} (its log: {data_dir / 'host.log'})")
        if time.monotonic() > deadline:
            raise SharedHostError(
                f"an agent-host holds the data directory {data_dir} but has not published its address "
                f"in {data_dir / HOST_FILE} after {_START_WAIT:.0f} s; see {data_dir / 'host.log'}, "
                "stop that host, or pass --data-dir to use another directory"
            )
        time.sleep(0.05)


def alive(record: dict[str, Any]) -> bool:
    """Whether the host a ``host.json`` record names still runs (its process exists)."""
    return _process_exists(record.get("pid"))


def _process_exists(pid: Any) -> bool:
    """False for a record left by a host that died (the new one replaces it once it listens)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _host_alive(data_dir: Path) -> bool:
    with open(data_dir / LOCK_FILE, "a+") as handle:
        if try_lock(handle, fcntl.LOCK_SH):
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            return False
    return True


def _start(start: Callable[[], subprocess.Popen[bytes]]) -> str | None:
    """Start a terminal host and return its URL; None when another host took the directory first.
    Its stdout and stderr are read together until it says where it listens (or exits), so that
    warnings on stderr cannot fill the pipe and stall it."""
    process = start()
    assert process.stdout is not None and process.stderr is not None
    out, err = bytearray(), bytearray()
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ, out)
        selector.register(process.stderr, selectors.EVENT_READ, err)
        while selector.get_map():
            for key, _ in selector.select():
                chunk = os.read(key.fd, 1 << 16)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                key.data.extend(chunk)
                if key.data is out and b"\n" in out:
                    for raw in out.splitlines():
                        line = raw.decode("utf-8", "replace").strip()
                        if line.startswith("agent-host listening on "):
                            process.stdout.close()
                            process.stderr.close()
                            return line.removeprefix("agent-host listening on ")
    status = process.wait()
    process.stdout.close()
    process.stderr.close()
    if status == STARTING_ELSEWHERE:
        return None
    problem = err.decode("utf-8", "replace").strip().removeprefix("agent-host: ")
    raise SharedHostError(problem or f"the host stopped while starting (exit status {status}); see its host.log")


def _only_the_text_differs(record: dict[str, Any], config: dict[str, str]) -> bool:
    running = record.get("config")
    return isinstance(running, dict) and running != config and running.get("path") == config["path"] != "none" \
        and running.get("text") != config["text"]


def reload_host(
    data_dir: Path, record: dict[str, Any], config: dict[str, str], notice: Callable[[str], None] = lambda text: None,
) -> dict[str, Any]:
    """Have the host of ``record`` read its config file again (SIGHUP, ``cli.serve``) and return its
    record once it says how that went (``notice`` is told what waits for a restart);
    ``SharedHostError`` when it refused the file, or did not answer within ``_RELOAD_WAIT`` seconds."""
    try:
        os.kill(int(record["pid"]), signal.SIGHUP)
    except (ProcessLookupError, PermissionError, ValueError, TypeError):
        return record  # gone or not ours to signal: the caller says what differs
    deadline = time.monotonic() + _RELOAD_WAIT
    while time.monotonic() < deadline:
        latest = read(data_dir) or record
        outcome: dict[str, Any] = latest["reload"] if isinstance(latest.get("reload"), dict) else {}
        if outcome.get("text") == config["text"]:
            if outcome.get("error"):
                raise SharedHostError(f"the running agent-host did not take on the edited {config['path']}: {outcome['error']}")
            pending = [str(key) for key in outcome.get("pending") or ()]
            if pending:
                notice(f"the host took on the edited config; {', '.join(pending)} apply when it next starts "
                       "(it stops by itself once no chat or script uses it)")
            return latest
        if latest.get("config") == config:
            return latest
        time.sleep(0.05)
    return read(data_dir) or record


def reload_now(data_dir: Path, config: dict[str, str]) -> str:
    """``/reload`` in a chat: have the host of ``data_dir`` read ``config``'s file again; a sentence
    saying what it took on and what waits for its next start. ``SharedHostError`` as ``reload_host``."""
    record = read(data_dir)
    if record is None or not _process_exists(record.get("pid")):
        raise SharedHostError(f"no agent-host runs on {data_dir} now; the next message starts one with the config as it is")
    if record.get("config") == config:
        return "the host already runs with the config file as it is now"
    if not _only_the_text_differs(record, config):
        _check_config(data_dir, record, config)
    pending: list[str] = []
    latest = reload_host(data_dir, record, config, lambda text: None)
    outcome: dict[str, Any] = latest["reload"] if isinstance(latest.get("reload"), dict) else {}
    if latest.get("config") != config and outcome.get("text") != config["text"]:
        raise SharedHostError(f"the host did not answer within {_RELOAD_WAIT:.0f} s; see {data_dir / 'host.log'}")
    applied = ", ".join(str(key) for key in outcome.get("applied") or ()) or "nothing it can change while running"
    pending = [str(key) for key in outcome.get("pending") or ()]
    waits = f"; {', '.join(pending)} apply when it next starts" if pending else ""
    return f"the host read the config file again: it took on {applied}{waits}"


def _check_config(data_dir: Path, record: dict[str, Any], config: dict[str, str]) -> None:
    running = record.get("config")
    if running == config:
        return
    running = running if isinstance(running, dict) else {}
    described = "no config file" if running.get("path") == "none" else str(running.get("path"))
    wanted = "no config file" if config["path"] == "none" else config["path"]
    if described != wanted:
        difference = f"{described}, not {wanted}"
    elif running.get("text") != config["text"]:
        difference = f"{described} as it was when the host started (the file changed since)"
    else:
        difference = f"{described} but other API key variables in its environment than this shell has"
    how_it_ends = (
        "it is still in use: quit the agent-host chats and scripts using it (it stops by itself once none is left)"
        if record.get("terminal") else "stop that host (agent-host serve)"
    )
    raise _OtherConfig(
        f"the host of the data directory {data_dir} (pid {record.get('pid')}) runs with {difference}: "
        f"{how_it_ends}, or pass --data-dir to run another host with this config",
        bool(record.get("terminal")),
    )
