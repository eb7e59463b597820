"""The terminal client's own slash commands, in one table.

Each row names a command (and its other spellings), how ``/help`` shows it, and the chat method
that runs it with the rest of the line. Everything else reads this table: the dispatcher
(``Commands._command``), the completer's list of client commands (``CLIENT_COMMANDS``) and the
help text (``help_text``). A line starting with ``/`` whose name is not here goes to the host as a
command, skill or prompt (``Commands._host_command``).

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
    """The chat's method that runs it, given what was typed after the name."""


COMMANDS: tuple[ClientCommand, ...] = (
    ClientCommand(("sessions",), "/sessions [--all]", "sessions, this directory's first", "_cmd_sessions"),
    ClientCommand(("resume",), "/resume [N|ID]", "pick a session to go on with (--all: sub-agents, -p runs too)", "_cmd_resume"),
    ClientCommand(("new",), "/new", "start a new session", "_cmd_new"),
    ClientCommand(("fork",), "/fork [N]", "fork this session at turn N (default: the last)", "_cmd_fork"),
    ClientCommand(("history",), "/history", "show older turns", "_cmd_history"),
    ClientCommand(("agent", "agents"), "/agent [NAME]", "list agents, or start a new session with NAME", "_cmd_agent"),
    ClientCommand(("model", "models"), "/model [ID k=v ...]", "list or switch models", "_cmd_model"),
    ClientCommand(("title",), "/title TEXT", "rename this session", "_cmd_title"),
    ClientCommand(("queue",), "/queue TEXT", "queue a message for after the running turn", "_cmd_queue"),
    ClientCommand(("tools",), "/tools", "the session's tools", "_cmd_tools"),
    ClientCommand(("mcp",), "/mcp [log NAME]", "MCP servers, their state, errors and log (log NAME: one server's)", "_cmd_mcp"),
    ClientCommand(("plugins",), "/plugins", "plugins, their problems and notes", "_cmd_plugins"),
    ClientCommand(("plugin",), "/plugin [...]", "Claude Code marketplaces and plugins: /plugin marketplace add owner/repo, "
                  "/plugin install NAME@MARKET", "_cmd_plugin"),
    ClientCommand(("context",), "/context", "tokens used of the context window", "_cmd_context"),
    ClientCommand(("cost", "usage"), "/cost", "tokens used per model", "_cmd_cost"),
    ClientCommand(("compact",), "/compact [FOCUS]", "summarise older turns (model agents)", "_cmd_compact"),
    ClientCommand(("permissions",), "/permissions [revoke N]", "remembered approvals; revoke N forgets one (\"Always allow\")",
                  "_cmd_permissions"),
    ClientCommand(("diff",), "/diff [N]", "files changed in this session (in turn N)", "_cmd_diff"),
    ClientCommand(("undo",), "/undo", "undo the last turn's file changes", "_cmd_undo"),
    ClientCommand(("rewind",), "/rewind [N [MODE]]", "go back to before turn N (MODE: both, conversation or files)",
                  "_cmd_rewind"),
    ClientCommand(("trust",), "/trust [add|revoke [DIR]]", "trusted folders; trust a folder or stop trusting it", "_cmd_trust"),
    ClientCommand(("mode",), "/mode [MODE]", "permission mode: default, accept-edits, plan or full-auto (Shift+Tab cycles)",
                  "_cmd_mode"),
    ClientCommand(("init",), "/init [FOCUS]", "have the agent write (or improve) AGENTS.md for this project", "_cmd_init"),
    ClientCommand(("paste-image",), "/paste-image", "the clipboard's image goes with your next message (models that see "
                  "images only)", "_cmd_paste_image"),
    ClientCommand(("help", "?"), "/help", "this help", "_cmd_help"),
    ClientCommand(("quit", "exit"), "/quit", "exit", "_cmd_quit"),
)

HANDLERS: dict[str, str] = {name: command.handler for command in COMMANDS for name in command.names}
"""Every spelling → the method that runs it."""

CLIENT_COMMANDS: tuple[str, ...] = tuple(name for command in COMMANDS for name in command.names if name != "?")
"""The names the completer offers as the client's own (the host offers more through ``completions``)."""

_USAGE_WIDTH = 28


def help_text() -> str:
    """The commands part of ``/help``: one line each, usage then summary."""
    lines = [f"  {command.usage:<{_USAGE_WIDTH}} {command.summary}" for command in COMMANDS]
    lines.append(f"  {'/NAME args':<{_USAGE_WIDTH}} a host command, skill or MCP prompt (listed below)")
    return "\n".join(lines) + "\n"
