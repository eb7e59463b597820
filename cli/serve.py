"""``agent-host serve``: the host on this machine, until it is stopped.

It holds the data directory's lock for its whole life (a second host there is refused, naming the
first), publishes its URL in ``host.json`` once it listens (``cli.shared_host``) and withdraws it
when it stops. ``--for-terminal`` is the host ``agent-host`` starts for this user's terminals:
loopback, port 0, a fresh token, logging to ``host.log``, and it stops once no client uses it.
Exit codes: 0 after a clean stop, 2 a configuration error or an address it cannot listen on,
``shared_host.STARTING_ELSEWHERE`` (75) when ``--for-terminal`` finds another host on the directory.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import logging
import os
import secrets
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cli import shared_host
from cli.config import load
from host.config import ConfigError
from host.service import AgentHost
from host.transport.server import serve

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    terminal = args.for_terminal
    if not terminal:
        logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        if terminal:  # only for this user's terminals: loopback, a port of its own, a fresh token
            config = load(args, {"host": "127.0.0.1", "port": 0, "data_dir": args.data_dir, "token": None})
            allowed = config.sessions.allowed_directories
            if allowed is not None:  # the user started it here: this directory is one to work in
                allowed.append(os.getcwd())
        else:
            config = load(
                args,
                {"host": args.host, "port": args.port, "data_dir": args.data_dir, "token": args.token},
                True if args.record else None,
                args.cluster,
            )
        data_dir = config.data_path()
        with _data_lock(data_dir):
            if terminal:
                _log_to(data_dir / "host.log")
            return _serve_locked(config, data_dir, shared_host.config_identity(args.config, config.environ), terminal)
    except _DataDirectoryTaken as error:
        print(f"agent-host: {error}", file=sys.stderr)
        return shared_host.STARTING_ELSEWHERE if terminal else 2
    except ConfigError as error:
        print(f"agent-host: {error}", file=sys.stderr)
        return 2


def _serve_locked(config: Any, data_dir: Path, identity: dict[str, str], terminal: bool) -> int:
    token = secrets.token_urlsafe(24) if terminal else config.server.token or secrets.token_urlsafe(24)

    try:
        host = AgentHost(config)
    except Exception as error:  # JournalError and friends: say it plainly, no traceback
        print(f"agent-host: {error}", file=sys.stderr)
        return 2

    allowed = config.sessions.allowed_directories

    def on_connection() -> None:
        """A terminal host: the directories its clients were started in are ones to work in."""
        try:
            started = shared_host.started_directories(data_dir)
        except shared_host.SharedHostError as error:
            logging.getLogger(__name__).warning("%s", error)
            return
        allowed.extend([d for d in dict.fromkeys(started) if d not in allowed])

    async def listening(running: Any) -> None:
        shared_host.publish(data_dir, url=_local_url(running), config=identity, terminal=terminal)
        if terminal:
            _detach(data_dir / "host.log")
            await shared_host.stop_when_unused(data_dir, lambda: running.connections, running.stop_soon)

    try:
        asyncio.run(serve(
            host, token=token, announce=lambda line: print(line, flush=True), listening=listening,
            on_connection=on_connection if terminal and allowed is not None else None,
        ))
    except KeyboardInterrupt:
        pass
    except OSError as error:
        print(f"agent-host: cannot listen on {config.server.host}:{config.server.port}: {error.strerror}", file=sys.stderr)
        return 2
    return 0


@contextmanager
def _data_lock(data_dir: Path) -> Iterator[None]:
    """Hold ``host.lock`` in the data directory for as long as a host runs on it (``cli.shared_host``)."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # a new one private to the user
    with open(data_dir / shared_host.LOCK_FILE, "a+") as handle:
        if not shared_host.try_lock(handle, fcntl.LOCK_EX):
            raise _DataDirectoryTaken(_taken(data_dir))
        try:
            (data_dir / shared_host.HOST_FILE).unlink(missing_ok=True)  # a dead host's, if any
            (data_dir / shared_host.DIRECTORIES_FILE).unlink(missing_ok=True)  # its clients' directories
            yield
        finally:
            shared_host.withdraw(data_dir)
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _taken(data_dir: Path) -> str:
    """What to say when another host holds ``data_dir``: true whether it is published yet or not."""
    try:
        record = shared_host.read(data_dir)
    except shared_host.SharedHostError:
        record = None
    who = f"another agent-host (pid {record.get('pid')})" if record else "another agent-host"
    where = (
        f"other clients connect with the URL in {data_dir / shared_host.HOST_FILE} (readable only by you)"
        if record else f"it publishes its URL in {data_dir / shared_host.HOST_FILE} once it listens"
    )
    ends = " It stops by itself once no chat or script uses it." if record and record.get("terminal") else ""
    return (
        f"{who} already runs on the data directory {data_dir}: 'agent-host' and 'agent-host -p' use it as "
        f"it is; {where}; or pass --data-dir to run a separate host.{ends}"
    )


class _DataDirectoryTaken(Exception):
    """Another host holds the data directory's lock; the message says what to do."""


def _local_url(running: Any) -> str:
    """The host's URL as a client on this machine reaches it (a wildcard address becomes loopback)."""
    url = running.url
    for wildcard, loopback in (("ws://0.0.0.0:", "ws://127.0.0.1:"), ("ws://[::]:", "ws://[::1]:")):
        url = url.replace(wildcard, loopback, 1)
    return url


def _detach(log: Path) -> None:
    """A terminal host, once it has said where it listens: stdout and stderr leave the pipes of the
    client that started it (which may end at any time) for ``host.log``."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _log_to(path: Path) -> None:
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
