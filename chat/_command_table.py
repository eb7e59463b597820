"""The terminal client's own slash commands, in one table.

Each row names a command (and its other spellings), how ``/help`` shows it, and the handler that
runs it with the rest of the line: a method of one of the chat's parts, named by its path from the
chat (``changes.diff``: ``ChatApp.changes``'s ``diff``). Everything else reads this table: the
dispatcher (``ChatApp._command``), the completer's list of client commands (``CLIENT_COMMANDS``)
and the help text (``help_text``). A line starting with ``/`` whose name is not here goes to the
host as a command, skill or prompt (``Commands.host_command``).

Data and two pure functions; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ClientCommand", "COMMANDS", "CLIENT_COMMANDS", "HANDLERS", "help_text"]


@dataclass(frozen=True)
class ClientCommand:
    """One client command: ``names[0]`` is its name, the rest other spellings."""

    names: tuple[str, ...]
    usage: str
    """How ``/help`` shows it being typed (``/resume [N|ID]``)."""
    summary: str
    handler: str
    """The part's method that runs it, given what was typed after the name, as its path from the
    chat (``part.method``)."""


COMMANDS: tuple[ClientCommand, ...] = (
    ClientCommand(("sessions",), "/sessions [--all]", "sessions, this directory's first", "sessions.sessions"),
    ClientCommand(("resume",), "/resume [N|ID]", "pick a session to go on with (--all: sub-agents, -p runs too)", "sessions.resume"),
    ClientCommand(("new",), "/new", "start a new session", "sessions.new"),
    ClientCommand(("chats",), "/chats", "this session's chats, and the sub-agent chats its tool calls opened", "sessions.chats"),
    ClientCommand(("chat",), "/chat N|URI", "open one of this session's chats (a sub-agent's too)", "sessions.chat"),
    ClientCommand(("side",), "/side", "start a second chat in this session beside this one", "sessions.side"),
    ClientCommand(("fork",), "/fork [N]", "a new chat in this session with this chat's turns up to N (default: the last)",
                  "sessions.fork"),
    ClientCommand(("history",), "/history", "show older turns", "sessions.history"),
    ClientCommand(("agent", "agents"), "/agent [NAME]", "list agents, or start a new session with NAME", "commands.agent"),
    ClientCommand(("model", "models"), "/model [ID k=v ...]", "list or switch models", "commands.model"),
    ClientCommand(("title",), "/title TEXT", "rename this session", "commands.title"),
    ClientCommand(("queue",), "/queue TEXT", "queue a message for after the running turn", "commands.queue"),
    ClientCommand(("tools",), "/tools", "the session's tools", "commands.tools"),
    ClientCommand(("mcp",), "/mcp [log NAME]", "MCP servers, their state, errors and log (log NAME: one server's)", "commands.mcp"),
    ClientCommand(("plugins",), "/plugins", "plugins, their problems and notes", "commands.plugins"),
    ClientCommand(("plugin",), "/plugin [...]", "Claude Code marketplaces and plugins: /plugin marketplace add owner/repo, "
                  "/plugin install NAME@MARKET", "commands.plugin"),
    ClientCommand(("context",), "/context", "tokens used of the context window", "commands.context"),
    ClientCommand(("cost", "usage"), "/cost", "tokens used per model", "commands.cost"),
    ClientCommand(("compact",), "/compact [FOCUS]", "summarise older turns (model agents)", "commands.compact"),
    ClientCommand(("permissions",), "/permissions [revoke N]", "remembered approvals; revoke N forgets one (\"Always allow\")",
                  "commands.permissions"),
    ClientCommand(("diff",), "/diff [N]", "files changed in this session (in turn N)", "changes.diff"),
    ClientCommand(("undo",), "/undo", "undo the last turn's file changes", "changes.undo"),
    ClientCommand(("rewind",), "/rewind [N [MODE]]", "go back to before turn N (MODE: both, conversation or files)",
                  "changes.rewind"),
    ClientCommand(("trust",), "/trust [add|revoke [DIR]]", "trusted folders; trust a folder or stop trusting it", "commands.trust"),
    ClientCommand(("mode",), "/mode [MODE]", "permission mode: default, accept-edits, plan or full-auto (Shift+Tab cycles)",
                  "modes.command"),
    ClientCommand(("reload",), "/reload", "the host reads its config file again (agents, models, permissions)", "commands.reload"),
    ClientCommand(("init",), "/init [FOCUS]", "have the agent write (or improve) AGENTS.md for this project", "commands.init"),
    ClientCommand(("paste-image",), "/paste-image", "the clipboard's image goes with your next message (models that see "
                  "images only)", "commands.paste_image"),
    ClientCommand(("help", "?"), "/help", "this help", "commands.help"),
    ClientCommand(("quit", "exit"), "/quit", "exit", "commands.quit"),
)

HANDLERS: dict[str, str] = {name: command.handler for command in COMMANDS for name in command.names}
"""Every spelling → the handler that runs it (its path from the chat)."""

CLIENT_COMMANDS: tuple[str, ...] = tuple(name for command in COMMANDS for name in command.names if name != "?")
"""The names the completer offers as the client's own (the host offers more through ``completions``)."""

_USAGE_WIDTH = 28


def help_text() -> str:
    """The commands part of ``/help``: one line each, usage then summary."""
    lines = [f"  {command.usage:<{_USAGE_WIDTH}} {command.summary}" for command in COMMANDS]
    lines.append(f"  {'/NAME args':<{_USAGE_WIDTH}} a host command, skill or MCP prompt (listed below)")
    return "\n".join(lines) + "\n"
