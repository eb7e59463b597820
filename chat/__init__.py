"""``agent-host chat``: a terminal client for an AHP host, on the ``client`` library.

``agent-host chat [URL] [--token T] [--session URI | --new] [--agent A] [--model M] [--cwd DIR] [-p MESSAGE [--yes]]``

New sessions work in ``--cwd`` (default: the current directory); ``@path`` is resolved in the
session's working directory.

* ``add_arguments(parser)`` declares those options on an ``argparse`` (sub)parser;
  ``run(args)`` connects and runs the interactive loop (``app.ChatApp``) or, with ``-p``, the
  one-shot mode (``oneshot.run_oneshot``), and returns the process exit status.
* ``render`` is the pure state → terminal text layer both modes share.

Exit status: 0 success, 1 the ``-p`` turn ended in error (or the session failed), 2 usage or
connection errors (the message says what to fix; never a traceback), 130 cancelled with Ctrl-C.
Colour: only when the stream is a terminal and ``NO_COLOR`` is unset.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import TextIO

from chat._connect import ChatConnectError, connect
from chat._settings import ChatSettingsError, display_url, resolve_settings
from chat.render import Style

__all__ = ["add_arguments", "run", "style_for", "ChatConnectError", "ChatSettingsError"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``chat`` options on ``parser``."""
    parser.add_argument("url", nargs="?", help="host URL as 'agent-host serve' prints it (default: AGENT_HOST_URL, the client config, ws://127.0.0.1:8765/)")
    parser.add_argument("--token", help="connection token (default: from the URL, AGENT_HOST_TOKEN or the client config)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--session", metavar="URI", help="open an existing session (ahp-session:/...)")
    which.add_argument("--new", action="store_true", help="start a new session (the default)")
    parser.add_argument("--agent", help="agent for new sessions (an AgentInfo provider, e.g. offline)")
    parser.add_argument("--model", help="model id for new sessions")
    parser.add_argument("-p", "--print", dest="message", metavar="MESSAGE", help="send one message, print the answer and exit")
    parser.add_argument("--cwd", metavar="DIR", help="working directory for new sessions (default: the current directory)")
    parser.add_argument("--yes", action="store_true", help="with -p: allow tool calls instead of denying them")


def style_for(stream: TextIO, environ: dict[str, str] | os._Environ[str] | None = None) -> Style:
    """ANSI styling for ``stream`` unless it is not a terminal or ``NO_COLOR`` is set."""
    environ = os.environ if environ is None else environ
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return Style(color=tty and not environ.get("NO_COLOR") and environ.get("TERM") != "dumb")


def run(args: argparse.Namespace) -> int:
    """Run ``agent-host chat`` with parsed ``args``; returns the exit status."""
    if args.yes and args.message is None:
        print("agent-host chat: --yes only applies with -p MESSAGE", file=sys.stderr)
        return 2
    cwd = Path(args.cwd).expanduser() if getattr(args, "cwd", None) else Path.cwd()
    if not cwd.is_dir():
        print(f"agent-host chat: --cwd {args.cwd}: no such directory", file=sys.stderr)
        return 2
    args.cwd = cwd.resolve()
    try:
        settings = resolve_settings(args.url, args.token, agent=args.agent, model=args.model)
    except ChatSettingsError as error:
        print(f"agent-host chat: {error}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_main(args, settings))
    except KeyboardInterrupt:  # Ctrl-C before the loop could take SIGINT over
        return 130


async def _main(args: argparse.Namespace, settings) -> int:  # type: ignore[no-untyped-def]
    try:
        client = await connect(settings)
    except ChatConnectError as error:
        print(f"agent-host chat: {error}", file=sys.stderr)
        return 2
    cwd = args.cwd
    try:
        if args.message is not None:
            from chat.oneshot import run_oneshot

            return await run_oneshot(
                client,
                args.message,
                out=sys.stdout,
                err=sys.stderr,
                err_style=style_for(sys.stderr),
                cwd=cwd,
                session=args.session,
                agent=settings.agent,
                model=settings.model,
                approve=args.yes,
            )
        from chat._terminal import Terminal
        from chat.app import ChatApp

        terminal = Terminal()
        terminal.start()
        terminal.follow(client)
        try:
            app = ChatApp(
                client,
                terminal,
                style_for(sys.stdout),
                sys.stdout,
                cwd=cwd,
                session=args.session,
                agent=settings.agent,
                model=settings.model,
                host_label=display_url(settings.url),
            )
            return await app.run()
        finally:
            terminal.restore()
    finally:
        await client.close()
