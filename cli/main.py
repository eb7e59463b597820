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

``agent-host token create NAME --level read|full``, ``token list`` and ``token
revoke NAME`` manage the named tokens of the data directory, one per person (``cli.token_commands``).

``agent-host plugin marketplace add|list|update|remove`` and ``agent-host plugin
install|uninstall|enable|disable|list`` manage Claude Code marketplaces and plugins (``cli.plugin_commands``).

``agent-host serve [--host H] [--port P] [--config FILE] [--data-dir DIR] [--token-file FILE]`` starts the
host and prints, on one line, the URL it listens on with the token, and publishes it in the data
directory's ``host.json`` (so ``agent-host`` in a terminal uses it too). ``--port 0`` picks a free
port. A non-loopback ``--host`` is refused unless a token was set explicitly (flag, config file or
``AGENT_HOST_TOKEN``): a generated token printed on one machine's console is no protection for a
host reachable from the network. The token is read from ``--token-file`` or the environment, never
needed on a command line (``--token`` still works and warns); after the URL, ``serve`` says on stderr how
clients connect without one (``cli.serve``).

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
import os
import sys
from pathlib import Path

from pydantic.plugin import _loader

from host import startup
from host.runtime import memory

# Each command's work is a module of its own that imports what it needs at its head: ``cli.code``,
# ``cli.serve``, ``cli.plugin_commands``, and ``chat`` for ``agent-host chat``. This one parses the
# command line and loads the module of the command it runs through the start-up plan
# (``host/startup.py``, "the command"): '--help' loads neither the host nor the terminal client,
# 'agent-host chat URL' no host, 'serve' no terminal client.


def _no_pydantic_plugins() -> None:
    """Record "no plugins" in pydantic's plugin cache before the first model is built (see above)."""
    if "PYDANTIC_DISABLE_PLUGINS" in os.environ:
        return
    if getattr(_loader, "_plugins", False) is None:  # not scanned yet (and the cache still exists)
        _loader._plugins = {}


__all__ = ["main"]


def _add_host_files(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="TOML config file (see config.example.toml)")
    parser.add_argument("--data-dir", help="where the durable journal lives")


def _add_plugin_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="TOML config file (see config.example.toml)")
    parser.add_argument("--data-dir", help="the host's data directory (where installed plugins live)")
    actions = parser.add_subparsers(dest="plugin_command", required=True)
    market = actions.add_parser("marketplace", help="add, list, update or remove plugin marketplaces")
    market_actions = market.add_subparsers(dest="marketplace_command", required=True)
    add = market_actions.add_parser("add", help="add a marketplace: owner/repo, a git URL, or a folder")
    add.add_argument("source")
    market_actions.add_parser("list", help="list the known marketplaces")
    update = market_actions.add_parser("update", help="fetch a marketplace (every one added here without a name)")
    update.add_argument("name", nargs="?")
    remove = market_actions.add_parser("remove", help="remove a marketplace added here and its plugins")
    remove.add_argument("name")
    for verb, text in (("install", "install a plugin from its marketplace and switch it on"),
                       ("uninstall", "remove a plugin installed here"),
                       ("enable", "switch a plugin on for every session"),
                       ("disable", "switch a plugin off for every session")):
        command = actions.add_parser(verb, help=text)
        command.add_argument("plugin", help="name@marketplace (or a name only one marketplace lists)")
    actions.add_parser("list", help="list installed and switched-on plugins")


def _add_token_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="token_command", required=True)
    create = actions.add_parser("create", help="add a named token and print its secret (shown this once)")
    create.add_argument("name", help="who it is for: letters, digits, '.', '_' or '-'")
    create.add_argument("--level", required=True, help="read (subscribe and read, change nothing) or full (everything)")
    listing = actions.add_parser("list", help="list the named tokens (never their secrets)")
    revoke = actions.add_parser("revoke", help="remove a named token; a running host closes its connections")
    revoke.add_argument("name")
    for action in (create, listing, revoke):
        action.add_argument("--config", help="TOML config file (see config.example.toml)")
        action.add_argument("--data-dir", help="the host's data directory (where tokens.json lives)")


_DESCRIPTION = (
    "A self-hosted Agent Host Protocol (AHP 0.9.0, 0.7.0 and 0.2.0) server. Without a command: "
    "'agent-host code' (a chat in the current directory, on the host shared by every agent-host on the data directory)."
)


_EPILOG = """\
the chat's options (without a command; 'agent-host code --help' lists them all):
  -p, --print [MESSAGE|-]  send one message, print the answer and exit (for scripts; piped stdin follows the message)
  -c, --continue           open the session of this directory that changed last
  --resume [ID]            open a session by its id; without one, pick from this directory's sessions
  --output-format FORMAT   with -p: text, json or stream-json
  --yes, --trust           with -p: allow tool calls; trust the folder for this session
  --agent NAME, --model ID the agent and model of new sessions

examples:
  agent-host                                   chat in this directory
  agent-host -p "explain this repository"      one answer on stdout
  git diff | agent-host -p "review this"       the diff follows the prompt
  agent-host -c                                continue where you left off
"""
# Written out here rather than generated from chat.add_arguments: '--help' loads no terminal
# client (tests/cli/test_main.py checks both that and that these options are the chat's own).


def _parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent-host", description=_DESCRIPTION, epilog=_EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command")
    serve = commands.add_parser("serve", help="run the host")
    serve.add_argument("--host", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port to listen on (default 8765; 0 picks a free port)")
    _add_host_files(serve)
    serve.add_argument("--token-file", metavar="FILE",
                       help="read the connection token from FILE (readable only by you; default: AGENT_HOST_TOKEN, the config, or a generated one)")
    serve.add_argument("--token", help="connection token given on the command line (warns: every user sees it in ps); prefer --token-file")
    serve.add_argument("--record", action="store_true", help="record each session's model calls to a session cassette (see [recording])")
    serve.add_argument("--cluster", metavar="nats://HOST:PORT",
                       help="run as a process of a cluster sharing one log on this NATS server (see [cluster]; needs agent-host[cluster])")
    serve.add_argument("--workers", type=int, metavar="N",
                       help="run N host processes on the one port, sharing one log on an embedded NATS server (see cli.workers; needs agent-host[cluster])")
    serve.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    # What 'serve --workers' hands each worker (cli.workers), not for people to type.
    serve.add_argument("--listen-fd", type=int, help=argparse.SUPPRESS)
    serve.add_argument("--lifeline-fd", type=int, help=argparse.SUPPRESS)
    serve.add_argument("--tokens-dir", help=argparse.SUPPRESS)
    # What 'agent-host' starts for this user's terminals (cli.shared_host), not for people to type.
    serve.add_argument("--for-terminal", action="store_true", help=argparse.SUPPRESS)
    plugin = commands.add_parser("plugin", help="Claude Code plugins: marketplaces, install, enable, disable (see cli.plugin_commands)")
    _add_plugin_arguments(plugin)
    token = commands.add_parser("token", help="named connection tokens, one per person: create, list, revoke (see cli.token_commands)")
    _add_token_arguments(token)
    chat = commands.add_parser("chat", help="talk to a running host from the terminal (see chat)")
    code = commands.add_parser("code", help="chat in the current directory on the data directory's shared host, started if none runs (the default)")
    _add_host_files(code)
    # The chat client (and its imports) only when it is what runs: 'serve' starts without them.
    if argv[:1] in (["chat"], ["code"]):
        terminal_client = startup.load("chat")
        terminal_client.add_arguments(chat)
        terminal_client.add_arguments(code, connect=False)
    return parser


def _code_parser() -> argparse.ArgumentParser:
    """``agent-host [options]`` with no command: the options of ``code``."""
    parser = argparse.ArgumentParser(prog="agent-host", description=_DESCRIPTION)
    _add_host_files(parser)
    startup.load("chat").add_arguments(parser, connect=False)
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
            return int(startup.load("cli.code").run(args))
        if args.command == "serve":
            return int(startup.load("cli.serve").run(args))
        if args.command == "plugin":
            return int(startup.load("cli.plugin_commands").run(args))
        if args.command == "token":
            return int(startup.load("cli.token_commands").run(args))
    # A client only (the collector as usual); with no URL given, the host running on the data directory.
    return int(startup.load("chat").run(args, shared_url=_shared_host_url))


def _shared_host_url() -> str | None:
    """The URL (token included) the host running on the user's data directory published, if any."""
    shared_host = startup.load("cli.shared_host")
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    try:
        record = shared_host.read(Path(base) / "agent-host")
    except shared_host.SharedHostError:
        return None
    return str(record["url"]) if record is not None and shared_host.alive(record) else None


if __name__ == "__main__":
    sys.exit(main())
