"""Claude Code's names for this host's tools, both ways: the one table.

Plugins, hooks and settings written for Claude Code name its tools (``Bash``, ``Read``,
``Edit``...) and their arguments (``file_path``, ``timeout`` in milliseconds). This host's
built-in tools have names and arguments of their own (``shell``, ``read_file``, ``path``,
``timeout_seconds``). Everything that crosses between the two goes through this module:

- :func:`claude_name` / :func:`host_name`: a tool's name in each vocabulary. MCP tools are
  already ``mcp__<server>__<tool>`` on both sides, and a tool this table does not know keeps its
  name both ways.
- :func:`matcher_names`: every name a Claude Code hook matcher or an agent's ``tools`` list may
  use for a host tool (its Claude Code name and older spellings such as ``LS``).
- :func:`to_claude_input` / :func:`to_host_input`: a call's arguments in each vocabulary. They are
  inverse for every argument the table maps; arguments it does not map pass through unchanged.
  Given the working directory, :func:`to_claude_input` makes file paths absolute, as Claude Code's
  ``tool_input`` always has them (the host's tools accept both, so the inverse keeps them so).
- :func:`to_claude_response`: a finished call's AHP ``ToolCallResult`` as the ``tool_response`` a
  Claude Code ``PostToolUse`` hook reads for that tool (``stdout`` for ``Bash``, ``filePath`` and
  the strings for ``Edit``/``Write``, ``file.content`` for ``Read``; MCP and other tools get
  their content blocks).
- :func:`host_rules`: a Claude Code permission rule (``Bash(npm run test:*)``, its newer spelling
  ``Bash(npm run test *)``, ``Edit(/src/**)``,
  ``Read(~/.ssh/**)``, ``mcp__github``) as the rule strings of ``tools.policy``. As in Claude Code,
  ``Read`` rules cover every tool that reads files and ``Edit`` rules every tool that changes one;
  ``//path`` is absolute, ``~/path`` is in the home folder, ``/path`` is relative to the folder the
  settings file belongs to, and ``./path`` or ``path`` to the working directory; a pattern with no
  ``/`` in it (and no ``./``) matches in every folder (gitignore: ``*.ts`` is ``**/*.ts``).
- :func:`claude_permission_mode`: the session's permission mode as Claude Code names it.

Pure: no I/O. Claude Code's tool names and input fields are those of its tool reference
(https://docs.anthropic.com/en/docs/claude-code/settings#tools-available-to-claude) and of its
hook input (``tool_input``) documentation.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ClaudeTool", "TABLE", "claude_name", "claude_permission_mode", "host_name", "host_rules", "matcher_names",
    "to_claude_input", "to_claude_response", "to_host_input",
]


def _same(value: Any) -> Any:
    return value


def _seconds_to_ms(value: Any) -> Any:
    return int(value * 1000) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def _ms_to_seconds(value: Any) -> Any:
    return value / 1000 if isinstance(value, (int, float)) and not isinstance(value, bool) else value


@dataclass(frozen=True)
class Argument:
    """One argument whose name (or unit) differs between the two vocabularies."""

    host: str
    claude: str
    to_claude: Callable[[Any], Any] = _same
    to_host: Callable[[Any], Any] = _same


@dataclass(frozen=True)
class ClaudeTool:
    """One host tool and its Claude Code counterpart."""

    host: str
    claude: str
    arguments: tuple[Argument, ...] = ()
    older: tuple[str, ...] = ()
    """Other names Claude Code matchers and agents have used for it."""
    reads_files: bool = False
    """Covered by Claude Code ``Read(...)`` permission rules."""
    edits_files: bool = False
    """Covered by Claude Code ``Edit(...)`` permission rules."""


_PATH = Argument("path", "file_path")

TABLE: tuple[ClaudeTool, ...] = (
    ClaudeTool("shell", "Bash", (Argument("timeout_seconds", "timeout", _seconds_to_ms, _ms_to_seconds),),
               older=("Shell", "Terminal")),
    ClaudeTool("read_file", "Read", (_PATH,), reads_files=True),
    ClaudeTool("write_file", "Write", (_PATH,), edits_files=True),
    ClaudeTool("edit_file", "Edit", (_PATH,), older=("MultiEdit",), edits_files=True),
    ClaudeTool("glob", "Glob", reads_files=True),
    ClaudeTool("grep", "Grep", (Argument("case_insensitive", "-i"), Argument("max_results", "head_limit")),
               reads_files=True),
    ClaudeTool("list_dir", "LS", reads_files=True),
    ClaudeTool("ask_user", "AskUserQuestion"),
    ClaudeTool("task", "Task", older=("Agent",)),
    ClaudeTool("propose_plan", "ExitPlanMode"),
    ClaudeTool("list_mcp_resources", "ListMcpResourcesTool"),
    ClaudeTool("read_mcp_resource", "ReadMcpResourceTool"),
)
"""Every host tool with a Claude Code counterpart. Arguments not listed have the same name."""

_BY_HOST = {tool.host: tool for tool in TABLE}
_BY_CLAUDE = {name: tool for tool in TABLE for name in (tool.claude, *tool.older)}


def claude_name(host: str) -> str:
    """The Claude Code name of host tool ``host`` (unknown tools, MCP ones included, keep theirs)."""
    tool = _BY_HOST.get(host)
    return tool.claude if tool is not None else host


def host_name(claude: str) -> str:
    """The host tool Claude Code calls ``claude`` (unknown names are kept)."""
    tool = _BY_CLAUDE.get(claude)
    return tool.host if tool is not None else claude


def matcher_names(host: str) -> tuple[str, ...]:
    """Every name a Claude Code matcher or ``tools`` list may use for host tool ``host``."""
    tool = _BY_HOST.get(host)
    return (tool.claude, *tool.older) if tool is not None else ()


def _convert(arguments: Mapping[str, Any], pairs: dict[str, tuple[str, Callable[[Any], Any]]]) -> dict[str, Any]:
    converted: dict[str, Any] = {}
    for key, value in arguments.items():
        name, change = pairs.get(key, (key, _same))
        converted[name] = change(value)
    return converted


def to_claude_input(host: str, arguments: Mapping[str, Any], *, cwd: str | None = None) -> dict[str, Any]:
    """A host tool call's arguments as Claude Code's ``tool_input`` for that tool; with ``cwd``,
    a relative ``file_path`` is made absolute against it."""
    tool = _BY_HOST.get(host)
    if tool is None:
        return dict(arguments)
    converted = _convert(arguments, {a.host: (a.claude, a.to_claude) for a in tool.arguments})
    path = converted.get("file_path")
    if cwd is not None and isinstance(path, str) and path and not posixpath.isabs(path) and _PATH in tool.arguments:
        converted["file_path"] = posixpath.normpath(posixpath.join(cwd, path))
    return converted


def to_host_input(host: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Claude Code ``tool_input`` (a hook's ``updatedInput``, say) as host tool ``host``'s arguments."""
    tool = _BY_HOST.get(host)
    if tool is None:
        return dict(arguments)
    return _convert(arguments, {a.claude: (a.host, a.to_host) for a in tool.arguments})


def _split_rule(text: str) -> tuple[str, str | None]:
    text = text.strip()
    if text.endswith(")") and "(" in text:
        name, _, rest = text.partition("(")
        return name.strip(), rest[:-1].strip()
    return text, None


def _host_path_pattern(pattern: str, *, settings_root: str | None, home: str | None) -> str:
    """A Claude Code path specifier as a ``tools.policy`` path glob (absolute, or relative to
    the working directory)."""
    if pattern.startswith("//"):
        return "/" + pattern.lstrip("/")
    if pattern == "~" or pattern.startswith("~/"):
        if home is None:
            raise ValueError(f"cannot place {pattern!r}: no home folder is known")
        return posixpath.join(home, pattern[2:]) if pattern != "~" else home
    if pattern.startswith("/"):
        if settings_root is None:
            raise ValueError(f"cannot place {pattern!r}: it is relative to a settings file's folder")
        return posixpath.join(settings_root, pattern.lstrip("/"))
    if pattern.startswith("./"):
        while pattern.startswith("./"):
            pattern = pattern[2:]
        return pattern
    if "/" not in pattern.rstrip("/") and not pattern.startswith("**"):
        pattern = "**/" + pattern  # gitignore: a name without a slash matches in every folder
    return pattern


def host_rules(rule: str, *, settings_root: str | None = None, home: str | None = None) -> list[str]:
    """A Claude Code permission rule as ``tools.policy`` rule strings (several when a rule covers
    several host tools, none when it names nothing this host has). Raises ``ValueError`` for a
    rule that cannot be read, with what is wrong."""
    name, specifier = _split_rule(rule)
    if not name:
        raise ValueError(f"empty permission rule {rule!r}")
    if name in ("Read", "Edit") and specifier is not None:
        wanted = (lambda t: t.reads_files) if name == "Read" else (lambda t: t.edits_files)
        pattern = _host_path_pattern(specifier, settings_root=settings_root, home=home)
        return [f"{tool.host}({pattern})" for tool in TABLE if wanted(tool)]
    if name in ("Read", "Edit"):
        wanted = (lambda t: t.reads_files) if name == "Read" else (lambda t: t.edits_files)
        return [tool.host for tool in TABLE if wanted(tool)]
    tool = _BY_CLAUDE.get(name)
    if tool is None:
        if name.startswith("mcp__"):
            # ``mcp__server`` means every tool of that server.
            host = name if name.count("__") >= 2 else f"{name}__*"
            return [host if specifier is None else f"{host}({specifier})"]
        return []  # WebFetch, WebSearch, NotebookEdit...: no such tool here
    if specifier is None:
        return [tool.host]
    if tool.edits_files or tool.reads_files:
        specifier = _host_path_pattern(specifier, settings_root=settings_root, home=home)
    elif tool.host == "shell" and specifier.endswith(" *") and "*" not in specifier[:-2]:
        # Claude Code's newer spelling of a command prefix: ``Bash(npm run *)`` is ``npm run:*``.
        specifier = specifier[:-2].rstrip() + ":*"
    return [f"{tool.host}({specifier})"]


def _result_text(result: Mapping[str, Any]) -> str:
    pieces = [item.get("text") for item in result.get("content") or () if isinstance(item, Mapping) and item.get("type") == "text"]
    return "\n".join(piece for piece in pieces if isinstance(piece, str))


def _command_output(text: str) -> str:
    """The shell tool's output without the status line it ends with (``[exit code 0]``...)."""
    for marker in ("\n[exit code ", "\n[terminated by signal "):
        at = text.rfind(marker)
        if at >= 0:
            text = text[:at + 1]
            break
    return "" if text.strip() == "(no output)" else text


def to_claude_response(host: str, arguments: Mapping[str, Any], result: Mapping[str, Any], *,
                       cwd: str | None = None) -> Any:
    """A finished host call's result (``ToolCallResult``) as Claude Code's ``tool_response``."""
    claude = claude_name(host)
    given = to_claude_input(host, arguments, cwd=cwd)
    text = _result_text(result)
    structured = result.get("structuredContent")
    if not isinstance(structured, Mapping):
        structured = {}
    if claude == "Bash":
        error = result.get("error")
        if not isinstance(error, Mapping):
            error = {}
        return {"stdout": _command_output(text), "stderr": "", "interrupted": error.get("code") in ("timeout", "cancelled"),
                "isImage": False, **({"exitCode": structured["exitCode"]} if "exitCode" in structured else {})}
    if claude == "Write":
        return {"type": "create" if structured.get("created") else "update", "filePath": given.get("file_path"),
                "content": given.get("content", "")}
    if claude == "Edit":
        return {"filePath": given.get("file_path"), "oldString": given.get("old_string"),
                "newString": given.get("new_string"), "replaceAll": bool(given.get("replace_all", False)),
                "userModified": False}
    if claude == "Read":
        return {"type": "text", "file": {"filePath": given.get("file_path"), "content": text,
                                         "numLines": len(text.splitlines()), "startLine": structured.get("startLine", 1),
                                         "totalLines": structured.get("totalLines", len(text.splitlines()))}}
    return [{"type": "text", "text": text or str(result.get("pastTenseMessage") or "")}]


_PERMISSION_MODES = {"default": "default", "accept-edits": "acceptEdits", "plan": "plan", "full-auto": "bypassPermissions"}


def claude_permission_mode(host_mode: str | None) -> str:
    """This host's permission mode (``tools.policy``) as Claude Code's ``permission_mode``."""
    return _PERMISSION_MODES.get(host_mode or "default", "default")
