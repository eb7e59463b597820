"""The ``agent-host`` command.

``agent-host serve [--host H] [--port P] [--config FILE] [--data-dir DIR] [--token T]`` starts the
host and prints, on one line, the URL it listens on with the token. ``--port 0`` picks a free
port. A non-loopback ``--host`` is refused unless a token was set explicitly (flag, config file or
``AGENT_HOST_TOKEN``): a generated token printed on one machine's console is no protection for a
host reachable from the network.

Exit codes: 0 after a clean stop, 2 for a configuration error (the message says what to fix).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import secrets
import sys

from host.config import ConfigError, is_loopback, load_config

__all__ = ["main"]


def _parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent-host", description="A self-hosted Agent Host Protocol (AHP 0.2.0) server.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the host")
    serve.add_argument("--host", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to listen on (default 8765; 0 picks a free port)")
    serve.add_argument("--config", help="TOML config file (see config.example.toml)")
    serve.add_argument("--data-dir", help="where the durable journal lives")
    serve.add_argument("--token", help="connection token (default: AGENT_HOST_TOKEN, the config, or a generated one)")
    serve.add_argument("--record", action="store_true", help="record each turn's provider traffic to cassettes (see [recording])")
    serve.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    chat = commands.add_parser("chat", help="talk to a host from the terminal (see chat)")
    if argv[:1] == ["chat"]:  # the chat client (and its imports) only when it is what runs
        from chat import add_arguments as add_chat_arguments

        add_chat_arguments(chat)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _parser(argv).parse_args(argv)
    if args.command == "chat":
        from chat import run as run_chat

        return run_chat(args)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = load_config(
            args.config,
            overrides={
                "server": {"host": args.host, "port": args.port, "data_dir": args.data_dir, "token": args.token},
                "recording": {"enabled": True if args.record else None},
            },
        )
        if not is_loopback(config.server.host) and not config.server.token:
            raise ConfigError(
                f"refusing to listen on {config.server.host} without a token: set --token, "
                "server.token in the config file, or AGENT_HOST_TOKEN"
            )
    except ConfigError as error:
        print(f"agent-host: {error}", file=sys.stderr)
        return 2
    token = config.server.token or secrets.token_urlsafe(24)

    from host.server import serve
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


if __name__ == "__main__":
    sys.exit(main())
