"""The one parser of MCP server declarations, wherever they are written.

MCP servers are declared in the same JSON shape in four places: a plugin's ``.mcp.json`` or
manifest (FORMAT.md 3.7), a workspace's ``.mcp.json`` (Claude Code), VS Code's
``.vscode/mcp.json`` (``{"servers": ...}``), and the host's ``[mcp] servers`` config. This module
reads all of them; the places differ only in where relative paths and ``${VAR}`` come from, and
in what the caller does with a problem (a plugin skips the server, the host config refuses to
start).

Contract:
* ``server_entries(data, report)``: the ``(name, entry, path)`` of every server in a wrapped
  (``{"mcpServers": {...}}`` or ``{"servers": {...}}``) or flat (``{name: {...}}``) document.
* ``parse_server(name, entry, ...)`` → ``McpServer`` or None (skipped, after a report).
  - Transport: ``type`` or ``transport``, with every alias in use: ``stdio``/``local``;
    ``http``/``streamable-http``/``streamable_http``/``streamablehttp``; ``sse``. Without one, a
    ``command`` means stdio and a ``url`` means http.
  - Keys are type-checked by ``plugins._schema.MCP_SERVER``; a bad value is reported and ignored,
    an unknown key is a warning.
  - ``${VAR}`` / ``${VAR:-default}`` expand from ``variables`` first (``PLUGIN_ROOT``,
    ``workspaceFolder``), then ``environ``, in command, args, env, cwd, url and headers; unknown
    variables stay literal so the failure is visible.
  - A relative ``cwd`` resolves against ``base_dir``; stdio servers without one run in
    ``default_cwd``. ``url`` must be http(s). ``timeout`` is milliseconds (Gemini CLI) and
    becomes seconds. ``"disabled": true`` skips the server (info).
  - ``exported`` is added to the server's ``env`` (a plugin's ``PLUGIN_ROOT`` & co.).
* Never raises; everything wrong goes to ``report(severity, path, message)``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import plugins._schema as schema
from plugins._collect import Report
from plugins.diagnostics import Severity
from plugins.expand import expand_config
from plugins.model import McpServer

__all__ = ["TRANSPORTS", "server_entries", "parse_server"]

TRANSPORTS: dict[str, Literal["stdio", "http", "sse"]] = {
    "stdio": "stdio",
    "local": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamablehttp": "http",
    "sse": "sse",
}


def server_entries(data: Any, report: Report, where: tuple[str, ...] = ()) -> Iterator[tuple[str, Any, tuple[str, ...]]]:
    """Each declared server of one MCP document, with its path in the document."""
    if not isinstance(data, dict):
        report(Severity.PROBLEM, where, "MCP config must be a JSON object; skipped")
        return
    for wrapper in ("mcpServers", "servers"):
        if isinstance(data.get(wrapper), dict):
            for key in data:
                if key != wrapper:
                    report(Severity.WARNING, where + (key,), "unknown MCP config key (ignored)")
            servers, where = data[wrapper], where + (wrapper,)
            break
    else:
        servers = data
    for name, entry in servers.items():
        yield str(name), entry, where + (str(name),)


def parse_server(
    name: str,
    entry: Any,
    *,
    report: Report,
    at: tuple[str, ...] = (),
    path: Path | None = None,
    plugin_root: Path | None = None,
    variables: Mapping[str, str] = {},
    environ: Mapping[str, str] = {},
    base_dir: Path | None = None,
    default_cwd: Path | None = None,
    exported: Mapping[str, str] = {},
) -> McpServer | None:
    """One server declaration, expanded and normalised; None when it must be skipped."""
    if not name:
        report(Severity.PROBLEM, at, "an MCP server needs a non-empty name; skipped")
        return None
    if not isinstance(entry, dict):
        report(Severity.PROBLEM, at, "expected an MCP server object; skipped")
        return None
    values = schema.MCP_SERVER.validate(entry, report, at)
    if values.get("disabled") is True:
        report(Severity.INFO, at, "disabled; skipped")
        return None
    declared = values.get("type") or values.get("transport")
    transport: Literal["stdio", "http", "sse"] | None
    if declared is not None:
        transport = TRANSPORTS.get(declared.lower())
        if transport is None:
            report(Severity.PROBLEM, at + ("type",), f"unsupported MCP transport {declared!r} (use stdio, http or sse); server skipped")
            return None
    elif "command" in values:
        transport = "stdio"
    elif "url" in values:
        transport = "http"
    else:
        report(Severity.PROBLEM, at, "needs a 'command' (stdio) or a 'url' (http); skipped")
        return None

    timeout = values.get("timeout")
    if timeout is not None and timeout <= 0:
        report(Severity.PROBLEM, at + ("timeout",), f"timeout must be a positive number of milliseconds, got {entry['timeout']!r} (ignored)")
        timeout = None

    def expand(value: str) -> str:
        return expand_config(value, variables, environ)

    env = {key: expand(value) for key, value in values.get("env", {}).items()}
    env.update(exported)
    common: dict[str, Any] = {
        "name": name, "path": path, "plugin_root": plugin_root, "env": env,
        "timeout": None if timeout is None else timeout / 1000,
    }
    if transport == "stdio":
        command = expand(values.get("command", "")).strip()
        if not command:
            report(Severity.PROBLEM, at + ("command",), "a stdio MCP server needs a command; skipped")
            return None
        cwd = default_cwd
        if values.get("cwd"):
            raw = Path(expand(values["cwd"])).expanduser()
            cwd = raw if raw.is_absolute() or base_dir is None else base_dir / raw
        args = tuple(expand(arg) for arg in values.get("args", ()))
        return McpServer(transport="stdio", command=command, args=args, cwd=cwd, **common)
    url = expand(values.get("url", "")).strip()
    if not url:
        report(Severity.PROBLEM, at + ("url",), f"a {transport} MCP server needs a url; skipped")
        return None
    if not url.startswith(("http://", "https://")):
        report(Severity.PROBLEM, at + ("url",), f"url must start with http:// or https://, got {url!r}; skipped")
        return None
    headers = {key: expand(value) for key, value in values.get("headers", {}).items()}
    return McpServer(transport=transport, url=url, headers=headers, **common)
