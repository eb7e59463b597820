"""``agent-host serve``: the host on this machine, until it is stopped.

It holds the data directory's lock for its whole life (a second host there is refused, naming the
first), publishes its URL in ``host.json`` once it listens (``cli.shared_host``) and withdraws it
when it stops. ``--for-terminal`` is the host ``agent-host`` starts for this user's terminals:
loopback, port 0, a fresh token, logging to ``host.log``, and it stops once no client uses it.
SIGHUP reads the config file again: the host takes on what it can while running (``host.reload``:
agents, models, permission rules) and publishes the new config's identity in ``host.json`` with
``reload`` (what it took on, what waits for the next start, or why the file was refused), which a
client that found the file changed waits for (``cli.shared_host``).
``--workers N`` runs N host processes on the one port instead, sharing one log (``cli.workers``);
each of them is a ``serve`` given the listening socket (``--listen-fd``), a pipe whose end
means that its parent is gone (``--lifeline-fd``) and the folder of the named tokens (``--tokens-dir``).
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
import signal
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cli import shared_host, workers
from cli.config import load
from host.config import ConfigError
from host.errors import JournalError
from host.service import AgentHost
from host.state.private_files import private_directory, private_file
from host.transport.server import serve
from host.transport.tokens import TokenFile

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    terminal = args.for_terminal
    if not terminal:
        logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    server: dict[str, Any]
    try:
        if terminal:  # only for this user's terminals: loopback, a port of its own, a fresh token
            server, recording, cluster = {"host": "127.0.0.1", "port": 0, "data_dir": args.data_dir, "token": None}, None, None
        else:
            server = {"host": args.host, "port": args.port, "data_dir": args.data_dir, "token": _given_token(args)}
            recording, cluster = True if args.record else None, args.cluster
        config = load(args, server, recording, cluster)
        worker_count = getattr(args, "workers", None)
        if worker_count is not None and not terminal:
            if worker_count < 1:
                raise ConfigError(f"--workers {worker_count}: give the number of host processes to run, at least 1")
            data_dir = config.data_path()
            with _data_lock(data_dir):
                private_directory(data_dir)
                return _run_workers(worker_count, config, data_dir, args)
        if getattr(args, "listen_fd", None) is not None and config.cluster.name:
            # A worker of 'serve --workers': the name the config gives, one per worker.
            config.cluster.name = f"{config.cluster.name}-{config.data_path().name}"
        if terminal:
            allowed = config.sessions.allowed_directories
            if allowed is not None:  # the user started it here: this directory is one to work in
                allowed.append(os.getcwd())
        data_dir = config.data_path()
        with _data_lock(data_dir):
            if terminal:
                _log_to(data_dir / "host.log")
            # One others may read is tightened (said in the log: host.log for a terminal's host), or
            # refused when it is not the user's.
            private_directory(data_dir)
            return _serve_locked(config, data_dir, shared_host.config_identity(args.config, config.environ), terminal,
                                 reread=lambda: load(args, server, recording, cluster), config_path=args.config,
                                 listen_fd=getattr(args, "listen_fd", None), lifeline_fd=getattr(args, "lifeline_fd", None),
                                 tokens_dir=getattr(args, "tokens_dir", None))
    except _DataDirectoryTaken as error:
        print(f"agent-host: {error}", file=sys.stderr)
        return shared_host.STARTING_ELSEWHERE if terminal else 2
    except ConfigError as error:
        print(f"agent-host: {error}", file=sys.stderr)
        return 2


def _run_workers(count: int, config: Any, data_dir: Path, args: argparse.Namespace) -> int:
    def announce(line: str) -> None:
        print(line, flush=True)
        print(_how_to_connect(line.rsplit(" ", 1)[-1], data_dir), file=sys.stderr, flush=True)

    return workers.run(count, config=config, data_dir=data_dir, identity=shared_host.config_identity(args.config, config.environ),
                       config_path=args.config, log_level=args.log_level, announce=announce)


def _serve_locked(config: Any, data_dir: Path, identity: dict[str, str], terminal: bool,
                  reread: Callable[[], Any] | None = None, config_path: str | None = None,
                  listen_fd: int | None = None, lifeline_fd: int | None = None, tokens_dir: str | None = None) -> int:
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

    published: dict[str, Any] = {"config": identity}

    def reload() -> None:
        """SIGHUP (``cli.shared_host`` sends it when the config file changed): read the file again,
        take on what a running host can (``AgentHost.reload``) and say in ``host.json`` how it went."""
        assert reread is not None
        try:
            edited = reread()
            if allowed is not None and edited.sessions.allowed_directories is not None:
                # The directories terminal clients started in stay (they are not the file's).
                edited.sessions.allowed_directories += [d for d in allowed if d not in edited.sessions.allowed_directories]
            changes = host.reload(edited)
        except ConfigError as error:
            wanted = shared_host.config_identity(config_path, {})["text"]
            shared_host.publish(data_dir, url=published["url"], config=published["config"], terminal=terminal,
                                reload={"text": wanted, "error": str(error)})
            logging.getLogger(__name__).warning("config reload refused: %s", error)
            return
        published["config"] = shared_host.config_identity(config_path, edited.environ)
        shared_host.publish(data_dir, url=published["url"], config=published["config"], terminal=terminal,
                            reload={"text": published["config"]["text"], "applied": list(changes.applied), "pending": list(changes.pending)})
        logging.getLogger(__name__).warning("config reloaded: took on %s; waiting for a restart: %s",
                                            ", ".join(changes.applied) or "nothing", ", ".join(changes.pending) or "nothing")

    async def listening(running: Any) -> None:
        if lifeline_fd is not None:  # a worker: its parent gone (the pipe's write end closed), it stops
            os.set_blocking(lifeline_fd, False)

            def parent_gone() -> None:
                try:
                    if os.read(lifeline_fd, 64):
                        return
                except BlockingIOError:
                    return
                asyncio.get_running_loop().remove_reader(lifeline_fd)
                logging.getLogger(__name__).warning("the parent 'serve --workers' is gone; stopping")
                running.stop_soon()

            asyncio.get_running_loop().add_reader(lifeline_fd, parent_gone)
        published["url"] = _local_url(running)
        shared_host.publish(data_dir, url=published["url"], config=identity, terminal=terminal)
        if reread is not None:
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, reload)
        if terminal:
            _detach(data_dir / "host.log")
            await shared_host.stop_when_unused(data_dir, lambda: running.connections, running.stop_soon)

    def announce(line: str) -> None:
        print(line, flush=True)
        if not terminal and listen_fd is None:
            print(_how_to_connect(line.rsplit(" ", 1)[-1], data_dir), file=sys.stderr, flush=True)

    async def open_and_serve() -> None:
        await host.open()  # a cluster's NATS reached first: an unreachable one is said, not served
        await serve(
            host, token=token, announce=announce, listening=listening,
            on_connection=on_connection if terminal and allowed is not None else None,
            sock=socket.socket(fileno=listen_fd) if listen_fd is not None else None,
            tokens=TokenFile(Path(tokens_dir)) if tokens_dir is not None else None,
        )

    try:
        asyncio.run(open_and_serve())
    except KeyboardInterrupt:
        pass
    except JournalError as error:  # the log (a cluster's NATS) cannot be reached: said plainly, no traceback
        print(f"agent-host: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"agent-host: cannot listen on {config.server.host}:{config.server.port}: {error.strerror}", file=sys.stderr)
        return 2
    return 0


TOKEN_ON_COMMAND_LINE = ("agent-host: warning: --token puts the token on the command line, where every user of this "
                         "machine can read it (ps, /proc/<pid>/cmdline); pass --token-file FILE or set AGENT_HOST_TOKEN instead")


def _given_token(args: argparse.Namespace) -> str | None:
    """The token ``serve`` was given: from ``--token-file`` (a file only the user may read), or from
    ``--token`` (with a warning); None to take ``AGENT_HOST_TOKEN``, the config's, or a fresh one."""
    if args.token_file and args.token:
        raise ConfigError("pass either --token-file or --token, not both")
    if args.token_file:
        return read_token_file(Path(args.token_file).expanduser())
    if args.token:
        print(TOKEN_ON_COMMAND_LINE, file=sys.stderr, flush=True)
        return str(args.token)
    return None


def read_token_file(path: Path) -> str:
    try:
        info = path.stat()
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"the token file {path} does not exist: write the token into it (chmod 600) or leave --token-file out") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read the token file {path}: {error}") from None
    if info.st_mode & 0o077:
        raise ConfigError(f"the token file {path} can be read by other users (mode {info.st_mode & 0o777:04o}): run 'chmod 600 {path}'")
    token = text.strip()
    if not token or any(char.isspace() for char in token):
        raise ConfigError(f"the token file {path} must hold the token alone, on one line (it is empty or has spaces in it)")
    return token


def _how_to_connect(url: str, data_dir: Path) -> str:
    """The advice ``serve`` prints after its URL: clients that never put the token in a command line."""
    return (f"agent-host: on this machine 'agent-host' finds this host by itself ({data_dir / shared_host.HOST_FILE}, readable "
            f"only by you); give other clients the URL in their environment, not as an argument, which every user sees in ps: "
            f"AGENT_HOST_URL='{url}' agent-host chat")


@contextmanager
def _data_lock(data_dir: Path) -> Iterator[None]:
    """Hold ``host.lock`` in the data directory for as long as a host runs on it (``cli.shared_host``)."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # a new one private to the user (an old one: see run)
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
    handler = logging.FileHandler(private_file(path), encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
