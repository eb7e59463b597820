"""Where a session's MCP servers come from: the host config, the workspace, enabled plugins.

Every declaration is read by ``plugins.mcp_servers`` (the one parser of the format, with every
transport alias), then turned into the ``tools.mcp.McpServerSpec`` that starts it. What differs
is the policy:

* ``specs_from_config(servers, environ=..., base_dir=..., source="config")``: the host's
  ``[mcp] servers``, a list of tables each with a ``name`` or a table keyed by name. Relative
  ``cwd`` values resolve against ``base_dir`` (the config file's folder). The first problem
  raises ``McpConfigError`` naming the source, the server and the key: a host does not start
  on a broken config. Unknown keys are logged.
* ``specs_from_mcp_json(path, environ=...)``: a workspace ``.mcp.json`` (wrapped, flat, or VS
  Code's ``servers``); ``${workspaceFolder}`` is its folder, where stdio servers run unless
  they say otherwise. A missing file means no servers; an unreadable or invalid one, or a bad
  server, raises ``McpConfigError`` (the caller reports it and carries on without them).
* ``spec_from_plugin(server, plugin_name)``: a server an enabled plugin declared (already parsed
  and expanded by the plugin loader; it runs in the plugin root unless it says otherwise).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import plugins
from plugins.diagnostics import Severity
from regular_files import read_regular_text
from tools.mcp import McpConfigError, McpServerSpec

__all__ = ["specs_from_config", "specs_from_mcp_json", "spec_from_plugin"]

logger = logging.getLogger(__name__)


class _Strict:
    """A ``report`` that turns the first problem into ``McpConfigError`` and logs warnings."""

    def __init__(self, source: str) -> None:
        self.source = source

    def __call__(self, severity: Severity, path: tuple[str, ...], message: str) -> None:
        name, keys = (path[0], path[1:]) if path else (None, ())
        where = f"{self.source}: MCP server {name!r}" if name is not None else self.source
        if keys:
            where += ": " + ".".join(keys)
        if severity in (Severity.PROBLEM, Severity.FATAL):
            for suffix in (" (ignored)", "; server skipped", "; skipped"):
                message = message.removesuffix(suffix)
            raise McpConfigError(f"{where}: {message}")
        if severity is Severity.WARNING:
            logger.warning("%s: %s", where, message)


def _spec(server: plugins.McpServer, source: str) -> McpServerSpec:
    if server.transport == "stdio":
        return McpServerSpec(name=server.name, transport="stdio", command=server.command, args=tuple(server.args),
                             env=dict(server.env), cwd=server.cwd, source=source, timeout=server.timeout)
    return McpServerSpec(name=server.name, transport=server.transport, url=server.url, headers=dict(server.headers),
                         env=dict(server.env), source=source, timeout=server.timeout)


def specs_from_config(
    servers: Any,
    *,
    environ: Mapping[str, str] | None = None,
    base_dir: Path | None = None,
    source: str = "config",
) -> list[McpServerSpec]:
    """Specs from the host configuration (see the module docstring)."""
    if servers is None:
        return []
    if isinstance(servers, Mapping):
        items = [(str(name), entry) for name, entry in servers.items()]
    elif isinstance(servers, list):
        items = []
        for index, entry in enumerate(servers):
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                raise McpConfigError(f"{source}: mcp_servers[{index}] needs a 'name' string")
            items.append((entry["name"], {k: v for k, v in entry.items() if k != "name"}))
    else:
        raise McpConfigError(f"{source}: MCP servers must be a list or a table, got {type(servers).__name__}")
    env = dict(os.environ if environ is None else environ)
    report = _Strict(source)
    specs: list[McpServerSpec] = []
    seen: set[str] = set()
    for name, entry in items:
        if name in seen:
            raise McpConfigError(f"{source}: MCP server {name!r} is declared twice")
        seen.add(name)
        server = plugins.parse_server(name, dict(entry) if isinstance(entry, Mapping) else entry, report=report, at=(name,),
                                      environ=env, base_dir=base_dir)
        if server is not None:
            specs.append(_spec(server, source))
    return specs


def specs_from_mcp_json(path: Path, *, environ: Mapping[str, str] | None = None) -> list[McpServerSpec]:
    """Specs from a workspace ``.mcp.json`` (see the module docstring)."""
    path = Path(path)
    try:
        text = read_regular_text(path)  # a FIFO named .mcp.json is refused, never waited on
    except FileNotFoundError:
        return []
    except UnicodeDecodeError:
        raise McpConfigError(f"{path}: is not UTF-8 text") from None
    except OSError as exc:
        raise McpConfigError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    folder = path.parent.resolve()
    env = dict(os.environ if environ is None else environ)
    report = _Strict(str(path))
    specs = []
    for name, entry, _where in plugins.server_entries(data, report):
        server = plugins.parse_server(name, entry, report=report, at=(name,), path=path, environ=env,
                                      variables={"workspaceFolder": str(folder)}, base_dir=folder, default_cwd=folder)
        if server is not None:
            specs.append(_spec(server, str(path)))
    return specs


def spec_from_plugin(server: plugins.McpServer, plugin_name: str | None = None) -> McpServerSpec:
    """The spec of a server an enabled plugin declares."""
    source = f"plugin {plugin_name}" if plugin_name else f"plugin at {server.plugin_root}"
    if server.transport == "stdio" and server.cwd is None:
        server = replace(server, cwd=server.plugin_root)
    return _spec(server, source)
