"""The ``agent-host`` command: it composes the host and the terminal client.

``agent-host`` (no subcommand) or ``agent-host code [--config FILE] [--data-dir DIR] [chat options]``
runs the chat in this terminal, in the current directory (``--cwd``), on the host of the user's data
directory, starting that host when none runs. ``-p [MESSAGE]`` works the same way for scripts (piped
stdin, ``--output-format``, ``--continue``, ``--resume``, ``--max-turns``, ``--timeout``: see ``chat``
and ``chat.oneshot``). The config is ``--config``, else ``$XDG_CONFIG_HOME/agent-host/config.toml``
when it exists.

One host per data directory, shared (``cli.shared_host``), rather than one per project: the journal
has one writer, so a host per project would need a data directory per project (sessions split by
folder, ``/resume`` blind to the others) and would still leave ``-p`` next to a chat in the same
project wanting the chat's host. So every ``agent-host`` is a client. The host is a process of its
own (``serve --for-terminal``: loopback, port 0, a fresh token, logging to ``host.log`` in the data
directory, its URL and token published in ``host.json`` there, mode 0600), not a part of the first
terminal's process, because that chat may end while another project's turn runs on the host; it
stops by itself once no terminal client runs and no connection is open. A host running with another
config is replaced once unused, and named while in use.

``agent-host chat [URL] ...`` talks to a host that is already running (see ``chat``).

``agent-host plugin marketplace add|list|update|remove`` and ``agent-host plugin
install|uninstall|enable|disable|list`` manage Claude Code marketplaces and plugins (``cli.plugin_commands``).

``agent-host serve [--host H] [--port P] [--config FILE] [--data-dir DIR] [--token T]`` starts the
host and prints, on one line, the URL it listens on with the token, and publishes it in the data
directory's ``host.json`` (so ``agent-host`` in a terminal uses it too). ``--port 0`` picks a free
port. A non-loopback ``--host`` is refused unless a token was set explicitly (flag, config file or
``AGENT_HOST_TOKEN``): a generated token printed on one machine's console is no protection for a
host reachable from the network.

Only one host at a time may use a data directory: every host holds an exclusive lock on
``host.lock`` there, and a second ``serve`` is refused with the holder's pid, where its URL is
(``host.json``, readable only by the user) and ``--data-dir`` for a separate one.

Pydantic plugins (packages that register in the ``pydantic`` entry-point group) are not loaded
into this process: looking for them reads the metadata of every installed distribution, 13-27 ms
of every start on a virtual environment of this size, for instrumentation the host does not use.
Setting ``PYDANTIC_DISABLE_PLUGINS`` (to anything, even empty) leaves the choice to pydantic as
documented there. Processes the host starts (shells, MCP servers, hooks) are unaffected.

Exit codes: 0 after a clean stop, 2 for a configuration error (the message says what to fix); the
one-command mode exits like ``agent-host chat`` (``-p``: 0 completed, 1 the turn errored or a limit
stopped it, 2 usage, 3 the client refused a tool call or question for the user, 130 cancelled), and
exits 2 when the shared host can be neither reached nor started (the message says why and what to do);
``serve --for-terminal`` exits 75 when another host holds the data directory (its client then uses that one).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import secrets
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from host.runtime import memory


def _no_pydantic_plugins() -> None:
    """Record "no plugins" in pydantic's plugin cache before the first model is built (see above)."""
    if "PYDANTIC_DISABLE_PLUGINS" in os.environ:
        return
    from pydantic.plugin import _loader

    if getattr(_loader, "_plugins", False) is None:  # not scanned yet (and the cache still exists)
        _loader._plugins = {}


__all__ = ["main"]

def _add_host_files(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="TOML config file (see config.example.toml)")
    parser.add_argument("--data-dir", help="where the durable journal lives")


_DESCRIPTION = (
    "A self-hosted Agent Host Protocol (AHP 0.9.0, 0.7.0 and 0.2.0) server. Without a command: "
    "'agent-host code' (a chat in the current directory, on the host shared by every agent-host on the data directory)."
)


def _parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent-host", description=_DESCRIPTION)
    commands = parser.add_subparsers(dest="command")
    serve = commands.add_parser("serve", help="run the host")
    serve.add_argument("--host", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to listen on (default 8765; 0 picks a free port)")
    _add_host_files(serve)
    serve.add_argument("--token", help="connection token (default: AGENT_HOST_TOKEN, the config, or a generated one)")
    serve.add_argument("--record", action="store_true", help="record each turn's provider traffic to cassettes (see [recording])")
    serve.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    # What 'agent-host' starts for this user's terminals (cli.shared_host), not for people to type.
    serve.add_argument("--for-terminal", action="store_true", help=argparse.SUPPRESS)
    plugin = commands.add_parser("plugin", help="Claude Code plugins: marketplaces, install, enable, disable (see cli.plugin_commands)")
    from cli.plugin_commands import add_arguments as add_plugin_arguments

    add_plugin_arguments(plugin)
    chat = commands.add_parser("chat", help="talk to a running host from the terminal (see chat)")
    code = commands.add_parser("code", help="chat in the current directory on the data directory's shared host, started if none runs (the default)")
    _add_host_files(code)
    # The chat client (and its imports) only when it is what runs: 'serve' starts without them.
    if argv[:1] in (["chat"], ["code"]):
        from chat import add_arguments as add_chat_arguments

        add_chat_arguments(chat)
        add_chat_arguments(code, connect=False)
    return parser


def _code_parser() -> argparse.ArgumentParser:
    """``agent-host [options]`` with no command: the options of ``code``."""
    from chat import add_arguments as add_chat_arguments

    parser = argparse.ArgumentParser(prog="agent-host", description=_DESCRIPTION)
    _add_host_files(parser)
    add_chat_arguments(parser, connect=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # The collector is held off while the host imports and builds its models, until it has
    # started (memory.settle) or the command ends without starting one.
    with memory.starting():
        _no_pydantic_plugins()  # before the first model is built
        if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
            args = _code_parser().parse_args(argv)
            args.command = "code"
        else:
            args = _parser(argv).parse_args(argv)
        if args.command == "code" or args.command is None:
            return _code(args)
        if args.command == "serve":
            return _serve(args)
        if args.command == "plugin":
            from cli.plugin_commands import run as run_plugin

            return run_plugin(args)
    from chat import run as run_chat  # a client only: the collector as usual

    return run_chat(args)


def _load(args: argparse.Namespace, server: dict[str, Any], recording: bool | None = None) -> Any:
    from host.config import ConfigError, is_loopback, load_config

    config = load_config(args.config, overrides={"server": server, "recording": {"enabled": recording}})
    if not is_loopback(config.server.host) and not config.server.token:
        raise ConfigError(
            f"refusing to listen on {config.server.host} without a token: set --token, "
            "server.token in the config file, or AGENT_HOST_TOKEN"
        )
    return config


@contextmanager
def _data_lock(data_dir: Path) -> Iterator[None]:
    """Hold ``host.lock`` in the data directory for as long as a host runs on it (``cli.shared_host``)."""
    import fcntl

    from cli import shared_host

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
    from cli import shared_host

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


def _serve(args: argparse.Namespace) -> int:
    from cli import shared_host
    from host.config import ConfigError

    terminal = args.for_terminal
    if not terminal:
        logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        if terminal:  # only for this user's terminals: loopback, a port of its own, a fresh token
            config = _load(args, {"host": "127.0.0.1", "port": 0, "data_dir": args.data_dir, "token": None})
            allowed = config.sessions.allowed_directories
            if allowed is not None:  # the user started it here: this directory is one to work in
                allowed.append(os.getcwd())
        else:
            config = _load(
                args,
                {"host": args.host, "port": args.port, "data_dir": args.data_dir, "token": args.token},
                True if args.record else None,
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

    from cli import shared_host
    from host.service import AgentHost
    from host.transport.server import serve

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


def _code(args: argparse.Namespace) -> int:
    """The one-command mode: the chat in this terminal, on the data directory's shared host
    (started in a process of its own when none runs: ``cli.shared_host``)."""
    import subprocess

    from chat import run as run_chat
    from cli import shared_host
    from host.config import ConfigError

    try:
        if args.config is None and _user_config().is_file():
            args.config = str(_user_config())
        config = _load(args, {"host": "127.0.0.1", "port": 0, "data_dir": args.data_dir, "token": None})
    except ConfigError as error:
        print(f"agent-host: {error}", file=sys.stderr)
        return 2
    data_dir = config.data_path().resolve()  # the host starts in --cwd: a relative one means here

    def start() -> subprocess.Popen[bytes]:
        # -P: the project directory (its cwd) is not put on sys.path, so a project's own cli/main.py
        # is never what runs here.
        command = [sys.executable, "-P", "-m", "cli.main", "serve", "--for-terminal", "--data-dir", str(data_dir)]
        if args.config is not None:
            command += ["--config", str(Path(args.config).expanduser().resolve())]
        return subprocess.Popen(
            command, cwd=args.cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,  # Ctrl-C in this terminal is the chat's, not the host's
        )

    @asynccontextmanager
    async def shared() -> AsyncIterator[str]:
        identity = shared_host.config_identity(args.config, config.environ)
        def notice(text: str) -> None:
            print(f"agent-host: {text}", file=sys.stderr, flush=True)

        with shared_host.reach(data_dir, config=identity, directory=args.cwd, start=start, notice=notice) as url:
            memory.settle()  # this process is a client: the collector as usual from here
            yield url

    async def find_again() -> str:
        """For a chat whose host went away (killed, crashed): the host now, started again if need be."""
        identity = shared_host.config_identity(args.config, config.environ)
        return await asyncio.to_thread(shared_host.find_or_start, data_dir, identity, start)

    try:
        return run_chat(args, embedded=shared, find_host=find_again)
    except shared_host.SharedHostError as error:
        print(f"agent-host: {error}", file=sys.stderr)
        return 2


def _user_config() -> Path:
    """The config the one-command mode reads without ``--config``: ``$XDG_CONFIG_HOME/agent-host/config.toml``."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "agent-host" / "config.toml"


def _log_to(path: Path) -> None:
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)


if __name__ == "__main__":
    sys.exit(main())
