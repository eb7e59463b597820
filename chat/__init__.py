"""``agent-host chat``: a terminal client for an AHP host, on the ``client`` library.

``agent-host chat [URL] [--token T] [--session URI | --resume [ID] | --continue | --new] [--agent A] [--model M]
[--cwd DIR] [--permission-mode MODE] [--theme auto|dark|light] [--editing-mode emacs|vi]
[-p [MESSAGE|-] [--yes] [--trust] [--output-format text|json|stream-json] [--max-turns N] [--timeout S]]``

``--resume ID`` opens a session by its id or its URI; ``--resume`` alone lists the sessions (this
directory's first, ``chat.session_list``) and asks which; ``--continue`` the session of ``--cwd``
that changed last. With ``-p``, when stdin is not a terminal its text is read and sent after the
message, between ``<stdin>`` and ``</stdin>`` lines (``git diff | agent-host -p "review this"``);
``-p -`` or ``-p`` alone sends stdin as the whole message (``prompt_from``).

New sessions work in ``--cwd`` (default: the current directory); ``@path`` is resolved in the
session's working directory. ``--permission-mode MODE`` creates a new session in that permission
mode, or switches an opened one to it (``chat._modes``; with ``-p``, a resumed session gets its
previous mode back when the run ends).

* ``add_arguments(parser)`` declares those options on an ``argparse`` (sub)parser (``connect=False``
  leaves out URL and token, for a chat on an embedded host); ``run(args)`` connects and runs the
  interactive loop (``app.ChatApp``) or, with ``-p``, the one-shot mode (``oneshot.run_oneshot``),
  and returns the process exit status. ``run(args, embedded=start)`` first enters ``start()``, an
  async context manager the caller supplies that runs a host and yields its URL (token included),
  and leaves it when the chat ends: this package never imports the server. With
  ``find_host`` too (an async callable returning a URL with its token), an interactive chat whose
  host went away and cannot be reconnected to asks it where the host is now (it starts one again)
  and resumes there.
* ``--agent`` and ``--model`` are checked against the host's agents before anything is sent, with the
  same messages as ``/agent`` and ``/model``.
* ``render`` is the pure state → terminal text layer both modes share.

Exit status: 0 success, 1 the ``-p`` turn ended in error (or the session failed, or a ``--timeout``
or ``--max-turns`` limit stopped it), 2 usage or connection errors, an unknown agent or model,
nothing to send, no session to ``--continue`` (the message says what to fix; never a traceback),
3 the ``-p`` turn completed but the client refused a tool call, a result or a question for the
user (``--yes`` allows them; see ``chat.oneshot``), 130 cancelled with Ctrl-C, 141 stdout was closed early (``chat -p ... | head``), quietly.
Colour: only when the stream is a terminal and ``NO_COLOR`` is unset; rich's colours follow the
terminal's background (``--theme``, the client config's ``theme``, else asked: ``chat._theme``).
The input line's keys are emacs's or vi's (``--editing-mode``, ``editing_mode``). The chat rings
the bell, with a desktop notification where the terminal shows one, when it waits for the user or
a turn ends unwatched (``notify``, ``notify_after``: ``chat._notify``). The interactive chat reads
its input with prompt_toolkit (``chat._prompt``) when stdin and stdout are terminals and ``TERM``
is not ``dumb``, and renders answers with rich (``chat._markdown``) when it also has colour;
otherwise it reads plain lines and prints plain text, as the one-shot mode always does.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from ahp.state import default_chat_uri
from chat._command_table import CLIENT_COMMANDS
from chat._connect import ChatConnectError, connect
from chat._notify import Notifier
from chat._session import PERMISSION_MODES, model_draft
from chat._settings import EDITING_MODES, THEMES, ChatSettingsError, display_url, resolve_settings, split_token
from chat._terminal import Terminal
from chat._theme import resolve_theme
from chat.oneshot import IDLE_TIMEOUT, run_oneshot
from chat.render import Style
from chat.session_list import working_directory
from client import ROOT_CHANNEL, AhpClient
from client.errors import AhpError

__all__ = ["add_arguments", "run", "style_for", "check_agent_and_model", "prompt_from", "EmbeddedHost", "ChatConnectError", "ChatSettingsError"]

EmbeddedHost = Callable[[], AbstractAsyncContextManager[str]]
"""Runs a host for the time of one chat and yields the URL to reach it, token included."""

EXIT_USAGE = 2
EXIT_BROKEN_PIPE = 141  # what a shell reports for a command killed by SIGPIPE


def add_arguments(parser: argparse.ArgumentParser, *, connect: bool = True) -> None:
    """Declare the ``chat`` options on ``parser`` (without URL and token when ``connect`` is False)."""
    if connect:
        parser.add_argument("url", nargs="?", help="host URL as 'agent-host serve' prints it (default: AGENT_HOST_URL, the client config, the host running on your data directory, ws://127.0.0.1:8765/)")
        parser.add_argument("--token", help="connection token (default: from the URL, AGENT_HOST_TOKEN or the client config)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--session", metavar="URI", help="open an existing session (<agent>:/<id>, as /sessions shows it)")
    which.add_argument("--resume", metavar="ID", nargs="?", const="",
                       help="open an existing session by its id or URI; without one, pick from this directory's sessions")
    which.add_argument("-c", "--continue", dest="continue_last", action="store_true", help="open the session in --cwd that changed last")
    which.add_argument("--new", action="store_true", help="start a new session (the default)")
    parser.add_argument("--agent", help="agent for new sessions (an AgentInfo provider, e.g. offline)")
    parser.add_argument("--model", help="model id for new sessions; with --resume, --session or --continue the session switches to it")
    parser.add_argument("-p", "--print", dest="message", metavar="MESSAGE", nargs="?", const="-",
                        help="send one message, print the answer and exit (piped stdin follows the message; '-' or none: stdin is the message)")
    parser.add_argument("--cwd", metavar="DIR", help="working directory for new sessions (default: the current directory)")
    parser.add_argument("--yes", action="store_true", help="with -p: allow tool calls instead of denying them (without it, only this project's remembered \"Always allow\" choices apply)")
    parser.add_argument("--trust", action="store_true",
                        help="with -p: trust the session's folder for this session (its hooks, .mcp.json servers and "
                             "plugins run); without it an untrusted folder's extras stay off")
    parser.add_argument("--output-format", choices=("text", "json", "stream-json"), default=None,
                        help="with -p: text (the default), one JSON object at the end, or one JSON object per line as it happens")
    parser.add_argument("--permission-mode", choices=PERMISSION_MODES, metavar="MODE",
                        help="the session's permission mode: default (ask before edits and commands), accept-edits (edits in "
                             "the session's folders run without asking), plan (read-only until you approve a plan) or "
                             "full-auto (nothing asks; commands in the OS sandbox); in the chat, Shift+Tab or /mode switch it")
    parser.add_argument("--theme", choices=THEMES, help="colours for a dark or light terminal background (default: the client "
                        "config's theme, else auto: asked of the terminal)")
    parser.add_argument("--editing-mode", choices=EDITING_MODES, help="keys of the input line: emacs (the default) or vi")
    parser.add_argument("--max-turns", type=_positive_int, metavar="N", help="with -p: stop the turn when the model would answer more than N times")
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="with -p: cancel the turn after this long without news from the agent (default 120; 0: wait forever)")


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def prompt_from(message: str, piped: str | None) -> str | None:
    """The ``-p`` message: ``message`` then the ``piped`` stdin text between ``<stdin>`` lines, or
    stdin alone for ``-p -``; None when there is nothing to send."""
    if message == "-":
        return piped if piped and piped.strip() else None
    if piped and piped.strip():
        return f"{message}\n\n<stdin>\n{piped.rstrip(chr(10))}\n</stdin>"
    return message if message.strip() else None


def _read_stdin() -> str | None:
    """All of stdin when it is not a terminal (a pipe, a file), else None."""
    try:
        if sys.stdin is None or sys.stdin.isatty():
            return None
        return sys.stdin.buffer.read().decode("utf-8", "replace")
    except (AttributeError, OSError, ValueError):
        return None


def style_for(stream: TextIO, environ: dict[str, str] | os._Environ[str] | None = None) -> Style:
    """ANSI styling for ``stream`` unless it is not a terminal or ``NO_COLOR`` is set."""
    environ = os.environ if environ is None else environ
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return Style(color=tty and not environ.get("NO_COLOR") and environ.get("TERM") != "dumb")


def check_agent_and_model(agents: Sequence[Mapping[str, Any]], agent: str | None, model: str | None) -> str | None:
    """Why ``--agent``/``--model`` cannot be used with these host agents (``AgentInfo``), or None.

    An agent must be one the host lists. A model must be one of the chosen agent's models; with no
    agent chosen (the host picks one), one of some agent's models. Agents listing no models take any.
    """
    names = [str(a.get("provider")) for a in agents]
    if agent is not None and agent not in names:
        return f"no agent {agent!r} (agents: {', '.join(names) or 'none'})"
    if model is None:
        return None
    candidates = [a for a in agents if agent is None or a.get("provider") == agent]
    offered = [str(m.get("id")) for a in candidates for m in a.get("models") or () if isinstance(m, Mapping)]
    if not offered or model in offered or any(not a.get("models") for a in candidates):
        return None
    if agent is not None:
        return f"agent {agent} has no model {model!r} (models: {', '.join(offered)})"
    return f"no agent offers a model {model!r} (models: {', '.join(offered)}); /model lists them per agent"


def run(
    args: argparse.Namespace, *, embedded: EmbeddedHost | None = None,
    find_host: Callable[[], Awaitable[str]] | None = None,
    reload_config: Callable[[], Awaitable[str]] | None = None,
    shared_url: Callable[[], str | None] | None = None,
) -> int:
    """Run ``agent-host chat`` with parsed ``args``; returns the exit status.

    With ``embedded``, the chat talks to the host that context manager runs instead of a URL;
    ``reload_config`` (``/reload``) has that host read its config file again and says how it went;
    ``shared_url`` finds the host running on the user's data directory, for a chat given no URL.
    """
    if args.message is None:
        for flag, value in (("--yes", args.yes), ("--trust", args.trust), ("--output-format", args.output_format), ("--max-turns", args.max_turns), ("--timeout", args.timeout)):
            if value:
                print(f"agent-host chat: {flag} only applies with -p MESSAGE", file=sys.stderr)
                return EXIT_USAGE
    else:
        message = prompt_from(args.message, _read_stdin())
        if message is None:
            print("agent-host chat: -p has nothing to send: give a message after -p, or pipe it on stdin", file=sys.stderr)
            return EXIT_USAGE
        args.message = message
    cwd = Path(args.cwd).expanduser() if getattr(args, "cwd", None) else Path.cwd()
    if not cwd.is_dir():
        print(f"agent-host chat: --cwd {args.cwd}: no such directory", file=sys.stderr)
        return EXIT_USAGE
    args.cwd = cwd.resolve()
    try:
        # Also for an embedded host: the file's agent and model defaults still apply.
        settings = resolve_settings(getattr(args, "url", None), getattr(args, "token", None), agent=args.agent, model=args.model,
                                    theme=getattr(args, "theme", None), editing_mode=getattr(args, "editing_mode", None),
                                    shared=shared_url)
    except ChatSettingsError as error:
        print(f"agent-host chat: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return asyncio.run(_main(args, settings, embedded, find_host, reload_config))
    except KeyboardInterrupt:  # Ctrl-C before the loop could take SIGINT over
        return 130
    except BrokenPipeError:
        return _quiet_broken_pipe()


def _quiet_broken_pipe() -> int:
    """The reader of stdout went away (``| head``): stop without a traceback, now or at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_BROKEN_PIPE


async def _main(args: argparse.Namespace, settings, embedded: EmbeddedHost | None, find_host: Any = None,
                reload_config: Any = None) -> int:
    if embedded is None:
        return await _chat(args, settings)
    async with embedded() as url:
        bare, token = split_token(url)
        return await _chat(args, replace(settings, url=bare, token=token), label="", find_host=find_host, reload_config=reload_config)


async def _chat(args: argparse.Namespace, settings, *, label: str | None = None, find_host: Any = None,
                reload_config: Any = None) -> int:
    try:
        client = await connect(settings)
    except ChatConnectError as error:
        print(f"agent-host chat: {error}", file=sys.stderr)
        return EXIT_USAGE
    cwd = args.cwd
    try:
        try:
            args.session = await _session_to_open(client, args)
        except ChatSettingsError as error:
            print(f"agent-host chat: {error}", file=sys.stderr)
            return EXIT_USAGE
        problem = check_agent_and_model(_agents(client), settings.agent, settings.model)
        if problem is not None:
            print(f"agent-host chat: {problem}", file=sys.stderr)
            return EXIT_USAGE
        if args.session is not None and args.model:
            # --model with --resume/--session/--continue: the opened session switches model from its next
            # turn (as /model does), rather than the flag being dropped because the session exists.
            problem = await _switch_model(client, args.session, args.model)
            if problem is not None:
                print(f"agent-host chat: --model {args.model}: {problem}", file=sys.stderr)
                return EXIT_USAGE
        if args.message is not None:
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
                trust=args.trust,
                output_format=args.output_format or "text",
                max_turns=args.max_turns,
                permission_mode=getattr(args, "permission_mode", None),
                idle_timeout=IDLE_TIMEOUT if args.timeout is None else (args.timeout or None),
            )
        # The interactive chat's modules (rich, prompt_toolkit) only when it is what runs: not for -p.
        from chat._core import ChatCore
        from chat.app import ChatApp

        app: ChatApp | None = None

        async def complete(text: str, offset: int) -> list[dict[str, Any]]:
            return await app.completions(text, offset) if app is not None else []

        style = style_for(sys.stdout)
        notifier = Notifier(settings.notify if _is_tty(sys.stdout) else "off", settings.notify_after, os.environ)
        terminal = _terminal_for(complete, settings.editing_mode, notifier.enabled)
        rich = style.color and terminal.prefills
        theme = resolve_theme(settings.theme) if rich else "dark"  # before the input line takes the terminal
        terminal.start()
        terminal.follow(client)
        try:
            app = ChatApp(ChatCore(
                client,
                terminal,
                style,
                sys.stdout,
                cwd=cwd,
                session=args.session,
                pick_session=getattr(args, "resume", None) == "",
                agent=settings.agent,
                model=settings.model,
                host_label=display_url(settings.url) if label is None else label,
                rich=rich,
                width=lambda: shutil.get_terminal_size().columns,
                permission_mode=getattr(args, "permission_mode", None),
                find_host=find_host,
                reload_config=reload_config,
                theme=theme,
                notifier=notifier,
            ))
            return await app.run()
        finally:
            terminal.restore()
    finally:
        await client.close()


async def _switch_model(client: AhpClient, session: str, model: str) -> str | None:
    """Switch ``session`` to ``model`` (what the client sends next leaves after it); a problem the user can act on, or None."""
    chat = default_chat_uri(session)
    try:
        await client.subscribe(session)
        await client.subscribe(chat)
    except AhpError as error:
        return f"cannot open {session}: {error.message}"
    client.dispatch(chat, model_draft(client.state(chat), "model", {"id": model}))
    return None


async def _session_to_open(client: AhpClient, args: argparse.Namespace) -> str | None:
    """The session ``--session``, ``--resume`` or ``--continue`` names, or None for a new one."""
    if getattr(args, "resume", None) is not None:
        target = args.resume.strip()
        if not target:
            if args.message is not None:
                raise ChatSettingsError("--resume needs a session id with -p (or --continue: this directory's last session)")
            return None  # picked in the chat, from this directory's sessions first
        if ":" in target:
            return target
        found = [s["resource"] for s in await client.list_sessions() if str(s.get("resource", "")).endswith(f":/{target}")]
        if not found:
            raise ChatSettingsError(f"no session {target!r} on this host (agent-host chat, then /sessions, lists them)")
        return str(found[0])
    if not getattr(args, "continue_last", False):
        return args.session
    here = args.cwd.as_uri()
    mine = [s for s in await client.list_sessions() if working_directory(s) == here and s.get("resource")]
    if not mine:
        raise ChatSettingsError(f"no session to continue in {args.cwd}: start one without --continue")
    return max(mine, key=lambda s: s.get("modifiedAt") or 0)["resource"]


def line_editing(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the input line is prompt_toolkit's: stdin and stdout are terminals that can draw."""
    environ = os.environ if environ is None else environ
    try:
        ttys = sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False
    return ttys and environ.get("TERM") != "dumb"


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _terminal_for(complete: Any, editing_mode: str = "emacs", focus_reports: bool = False) -> Any:
    """The prompt_toolkit terminal where the terminal can draw it, else the line terminal."""
    if not line_editing():
        return Terminal(sys.stdout)
    from chat._prompt import HostCompleter, PromptTerminal, history_path  # prompt_toolkit: only where it draws

    return PromptTerminal(history_file=history_path(), completer=HostCompleter(complete, CLIENT_COMMANDS), color=style_for(sys.stdout).color,
                          editing_mode=editing_mode, focus_reports=focus_reports)


def _agents(client: AhpClient) -> list[dict[str, Any]]:
    return [a for a in (client.state(ROOT_CHANNEL) or {}).get("agents") or () if isinstance(a, dict)]
