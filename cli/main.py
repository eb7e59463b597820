"""The ``agent-host`` command: it composes the host and the terminal client.

``agent-host`` (no subcommand) or ``agent-host code [--config FILE] [--data-dir DIR] [chat options]``
starts a host inside this process on a private loopback port (port 0, a fresh token nobody else
sees) with the user's config (``--config``, else ``$XDG_CONFIG_HOME/agent-host/config.toml`` when it
exists) and data directory, runs the chat against it in this terminal, in
the current directory (``--cwd``), and stops the host when the chat ends. ``-p [MESSAGE]`` works
the same way for scripts (piped stdin, ``--output-format``, ``--continue``, ``--resume``,
``--max-turns``, ``--timeout``: see ``chat`` and ``chat.oneshot``). The host logs to ``host.log`` in the data directory, not the terminal.

``agent-host chat [URL] ...`` talks to a host that is already running (see ``chat``).

``agent-host serve [--host H] [--port P] [--config FILE] [--data-dir DIR] [--token T]`` starts the
host and prints, on one line, the URL it listens on with the token. ``--port 0`` picks a free
port. A non-loopback ``--host`` is refused unless a token was set explicitly (flag, config file or
``AGENT_HOST_TOKEN``): a generated token printed on one machine's console is no protection for a
host reachable from the network.

Only one host at a time may use a data directory (the journal has one writer): ``serve`` and the
embedded host both hold an exclusive lock on ``host.lock`` there, and a second one is refused with
a message saying how to reach the first or pick another directory.

Pydantic plugins (packages that register in the ``pydantic`` entry-point group) are not loaded
into this process: looking for them reads the metadata of every installed distribution, 13-27 ms
of every start on a virtual environment of this size, for instrumentation the host does not use.
Setting ``PYDANTIC_DISABLE_PLUGINS`` (to anything, even empty) leaves the choice to pydantic as
documented there. Processes the host starts (shells, MCP servers, hooks) are unaffected.

Exit codes: 0 after a clean stop, 2 for a configuration error (the message says what to fix); the
one-command mode exits like ``agent-host chat`` (``-p``: 0 completed, 1 the turn errored or a limit
stopped it, 2 usage, 3 the client refused a tool call or question for the user, 130 cancelled).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import secrets
import sys
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

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
    "'agent-host code' (a host for this terminal and a chat in the current directory)."
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
    chat = commands.add_parser("chat", help="talk to a running host from the terminal (see chat)")
    code = commands.add_parser("code", help="start a private host and chat with it in the current directory (the default)")
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
    """Hold ``host.lock`` in the data directory for as long as a host runs on it."""
    import fcntl

    from host.config import ConfigError

    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / "host.lock", "a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError(
                f"another agent-host already uses the data directory {data_dir}: connect to it with "
                "'agent-host chat URL', or pass --data-dir to use another one"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _serve(args: argparse.Namespace) -> int:
    from host.config import ConfigError

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = _load(
            args,
            {"host": args.host, "port": args.port, "data_dir": args.data_dir, "token": args.token},
            True if args.record else None,
        )
        with _data_lock(config.data_path()):
            return _serve_locked(config)
    except ConfigError as error:
        print(f"agent-host: {error}", file=sys.stderr)
        return 2


def _serve_locked(config: Any) -> int:
    token = config.server.token or secrets.token_urlsafe(24)

    from host.transport.server import serve
    from host.service import AgentHost

    try:
        host = AgentHost(config)
    except Exception as error:  # JournalError and friends: say it plainly, no traceback
        print(f"agent-host: {error}", file=sys.stderr)
        return 2
    try:
        asyncio.run(serve(host, token=token, announce=lambda line: print(line, flush=True)))
    except KeyboardInterrupt:
        pass
    except OSError as error:
        print(f"agent-host: cannot listen on {config.server.host}:{config.server.port}: {error.strerror}", file=sys.stderr)
        return 2
    return 0


def _code(args: argparse.Namespace) -> int:
    """The one-command mode: a private host in this process, the chat in this terminal."""
    from chat import run as run_chat
    from host.config import ConfigError

    try:
        # Whatever the config says about where to listen, this host is only for this terminal.
        if args.config is None and _user_config().is_file():
            args.config = str(_user_config())
        config = _load(args, {"host": "127.0.0.1", "port": 0, "data_dir": args.data_dir, "token": None})
        allowed = config.sessions.allowed_directories
        if allowed is not None:  # the user started it here: this directory is one to work in
            allowed.append(str(Path(args.cwd or Path.cwd()).expanduser().resolve()))
        data_dir = config.data_path()
        with _data_lock(data_dir):
            _log_to(data_dir / "host.log")
            from host.service import AgentHost

            try:
                host = AgentHost(config)
            except Exception as error:  # JournalError and friends: say it plainly, no traceback
                print(f"agent-host: {error}", file=sys.stderr)
                return 2

            @asynccontextmanager
            async def embedded() -> AsyncIterator[str]:
                from host.transport.server import start_host

                running = await start_host(host, token=secrets.token_urlsafe(24))
                memory.settle()
                try:
                    yield running.url
                finally:
                    await running.stop()

            return run_chat(args, embedded=embedded)
    except ConfigError as error:
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
