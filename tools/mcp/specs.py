"""One normalized description of an MCP server, from the three places servers are declared.

Contract:
* `McpServerSpec` is immutable and fully resolved: variables are already expanded, `cwd`
  is absolute, `transport` is one of `stdio` / `http` / `sse`. A stdio spec has a
  `command`; an http/sse spec has a `url`. `env` holds only the declared variables (plus
  `PLUGIN_ROOT` & co. for plugin servers), never the host environment: what a server
  process inherits from the host is decided when it is spawned (see `_stdio`).
* `specs_from_config(servers, environ=..., base_dir=...)` reads the host configuration:
  either a list of tables each with a `name`, or a table keyed by server name.
* `specs_from_mcp_json(path, environ=...)` reads a workspace `.mcp.json`, wrapped
  (`{"mcpServers": {...}}`) or flat (`{name: {...}}`); `${workspaceFolder}` means the
  folder holding the file, and stdio servers run there unless they say otherwise.
* `spec_from_plugin(server)` converts a `plugins.McpServer` (already expanded by the
  plugin loader, including `${PLUGIN_ROOT}`); its cwd defaults to the plugin root.
* Expansion (config and workspace sources): `${VAR}` and `${VAR:-default}` from `environ`
  in command, args, env values, cwd, url and header values; unknown variables stay
  literal, so the failure is visible in the status message instead of silently empty.
* `timeout` is in milliseconds (the Gemini CLI convention); unknown keys are logged.
* Malformed declarations raise `McpConfigError` naming the source, the server and the key.
  `merge_specs` combines groups; a later group's server replaces an earlier one with the
  same name (config, then workspace, then plugins is the host's precedence).
"""

from __future__ import annotations

import json
import logging
import os
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from plugins import McpServer
from plugins.expand import expand_config

from .errors import McpConfigError

__all__ = [
    "McpServerSpec",
    "Transport",
    "specs_from_config",
    "specs_from_mcp_json",
    "spec_from_plugin",
    "merge_specs",
]

logger = logging.getLogger(__name__)

Transport = Literal["stdio", "http", "sse"]

_TRANSPORT_ALIASES = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamablehttp": "http",
    "sse": "sse",
}
_KNOWN_KEYS = {"name", "type", "transport", "command", "args", "env", "cwd", "url", "headers",
               "description", "timeout", "disabled", "envFile", "oauth"}


@dataclass(frozen=True)
class McpServerSpec:
    """Everything needed to start (or reach) one MCP server."""

    name: str
    """Unique per host/session; part of every tool name the server contributes."""
    transport: Transport
    """How to talk to it: a stdio subprocess, streamable HTTP, or legacy SSE."""
    command: str | None = None
    """Executable for stdio servers (looked up on PATH when not a path)."""
    args: tuple[str, ...] = ()
    """Arguments for the stdio command."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Declared environment variables (on top of what the host passes through)."""
    cwd: Path | None = None
    """Working directory of a stdio server; None means the host's."""
    url: str | None = None
    """Endpoint of an http/sse server."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """Extra HTTP headers (e.g. Authorization) for http/sse servers."""
    source: str = "config"
    """Where it was declared: "config", a `.mcp.json` path, or "plugin <name>"."""
    timeout: float | None = None
    """Per-call timeout in seconds (declared as `timeout` in milliseconds), if any."""

    def __post_init__(self) -> None:
        if self.transport == "stdio" and not self.command:
            raise McpConfigError(f"{self.source}: MCP server {self.name!r}: a stdio server needs a 'command'")
        if self.transport != "stdio" and not self.url:
            raise McpConfigError(f"{self.source}: MCP server {self.name!r}: an {self.transport} server needs a 'url'")

    def describe(self) -> str:
        """A short human description: the command line or the URL."""
        if self.transport == "stdio":
            return shlex.join([self.command or "", *self.args])
        return str(self.url)


def _expand(value: str, environ: Mapping[str, str], extra: Mapping[str, str]) -> str:
    return expand_config(value, extra, environ)


def _string(value: Any, where: str, key: str) -> str:
    if not isinstance(value, str):
        raise McpConfigError(f"{where}: {key} must be a string, got {value!r}")
    return value


def _string_list(value: Any, where: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise McpConfigError(f"{where}: {key} must be a list of strings, got {value!r}")
    return tuple(value)


def _string_map(value: Any, where: str, key: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise McpConfigError(f"{where}: {key} must be a table of strings, got {value!r}")
    result: dict[str, str] = {}
    for name, item in value.items():
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            raise McpConfigError(f"{where}: {key}.{name} must be a string, got {item!r}")
        result[str(name)] = str(item)
    return result


def _parse_entry(
    name: str,
    entry: Any,
    *,
    source: str,
    environ: Mapping[str, str],
    extra_vars: Mapping[str, str],
    base_dir: Path | None,
    default_cwd: Path | None,
) -> McpServerSpec | None:
    where = f"{source}: MCP server {name!r}"
    if not isinstance(entry, Mapping):
        raise McpConfigError(f"{where}: expected a table, got {entry!r}")
    if not name or not isinstance(name, str):
        raise McpConfigError(f"{source}: an MCP server needs a non-empty name")
    if entry.get("disabled") is True:
        return None

    def expand(value: str) -> str:
        return _expand(value, environ, extra_vars)

    declared = entry.get("type", entry.get("transport"))
    if declared is None:
        transport = "stdio" if "command" in entry else "http" if "url" in entry else None
        if transport is None:
            raise McpConfigError(f"{where}: needs a 'command' (stdio) or a 'url' (http)")
    else:
        transport = _TRANSPORT_ALIASES.get(_string(declared, where, "type").lower())
        if transport is None:
            raise McpConfigError(f"{where}: type {declared!r} is not one of stdio, http, sse")

    env = {key: expand(value) for key, value in _string_map(entry.get("env", {}), where, "env").items()}
    headers = {key: expand(value) for key, value in _string_map(entry.get("headers", {}), where, "headers").items()}
    timeout = entry.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise McpConfigError(f"{where}: timeout must be a positive number of seconds, got {timeout!r}")
    # `.mcp.json` dialects that have a per-server timeout (Gemini CLI) give it in milliseconds.
    timeout_seconds = None if timeout is None else timeout / 1000
    for key in entry:
        if key not in _KNOWN_KEYS:
            logger.warning("%s: unknown key %r (ignored)", where, key)

    if transport == "stdio":
        command = expand(_string(entry.get("command"), where, "command")).strip()
        if not command:
            raise McpConfigError(f"{where}: command must not be empty")
        args = tuple(expand(arg) for arg in _string_list(entry.get("args", []), where, "args"))
        cwd = default_cwd
        if "cwd" in entry:
            raw = Path(expand(_string(entry["cwd"], where, "cwd"))).expanduser()
            cwd = raw if raw.is_absolute() or base_dir is None else base_dir / raw
        return McpServerSpec(name=name, transport="stdio", command=command, args=args, env=env,
                             cwd=cwd, source=source, timeout=timeout_seconds)
    url = expand(_string(entry.get("url"), where, "url"))
    if not url.startswith(("http://", "https://")):
        raise McpConfigError(f"{where}: url must start with http:// or https://, got {url!r}")
    return McpServerSpec(name=name, transport=transport, url=url, headers=headers, env=env,
                         source=source, timeout=timeout_seconds)


def specs_from_config(
    servers: Any,
    *,
    environ: Mapping[str, str] | None = None,
    base_dir: Path | None = None,
    source: str = "config",
) -> list[McpServerSpec]:
    """Specs from the host configuration: a list of tables with `name`, or a name-keyed table.

    Relative `cwd` values resolve against `base_dir` (the config file's folder).
    """
    env = dict(os.environ if environ is None else environ)
    if servers is None:
        return []
    if isinstance(servers, Mapping):
        items = list(servers.items())
    elif isinstance(servers, list):
        items = []
        for index, entry in enumerate(servers):
            if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
                raise McpConfigError(f"{source}: mcp_servers[{index}] needs a 'name' string")
            items.append((entry["name"], {k: v for k, v in entry.items() if k != "name"}))
    else:
        raise McpConfigError(f"{source}: MCP servers must be a list or a table, got {type(servers).__name__}")
    specs = []
    seen: set[str] = set()
    for name, entry in items:
        if name in seen:
            raise McpConfigError(f"{source}: MCP server {name!r} is declared twice")
        seen.add(name)
        spec = _parse_entry(str(name), entry, source=source, environ=env, extra_vars={},
                            base_dir=base_dir, default_cwd=None)
        if spec is not None:
            specs.append(spec)
    return specs


def specs_from_mcp_json(path: Path, *, environ: Mapping[str, str] | None = None) -> list[McpServerSpec]:
    """Specs from a workspace `.mcp.json` (wrapped or flat); a missing file means none."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise McpConfigError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    if not isinstance(data, Mapping):
        raise McpConfigError(f"{path}: expected a JSON object")
    servers = data["mcpServers"] if isinstance(data.get("mcpServers"), Mapping) else data
    if "servers" in data and "mcpServers" not in data and isinstance(data["servers"], Mapping):
        servers = data["servers"]  # VS Code's .vscode/mcp.json spelling
    folder = path.parent.resolve()
    env = dict(os.environ if environ is None else environ)
    specs = []
    for name, entry in servers.items():
        spec = _parse_entry(str(name), entry, source=str(path), environ=env,
                            extra_vars={"workspaceFolder": str(folder)}, base_dir=folder, default_cwd=folder)
        if spec is not None:
            specs.append(spec)
    return specs


def spec_from_plugin(server: McpServer, plugin_name: str | None = None) -> McpServerSpec:
    """The spec of a server an enabled plugin declares (already expanded by the loader)."""
    source = f"plugin {plugin_name}" if plugin_name else f"plugin at {server.plugin_root}"
    if server.transport == "stdio":
        return McpServerSpec(name=server.name, transport="stdio", command=server.command, args=tuple(server.args),
                             env=dict(server.env), cwd=server.cwd or server.plugin_root, source=source)
    return McpServerSpec(name=server.name, transport=server.transport, url=server.url, headers=dict(server.headers),
                         env=dict(server.env), source=source)


def merge_specs(*groups: Iterable[McpServerSpec]) -> list[McpServerSpec]:
    """Combine groups in order; a later spec replaces an earlier one of the same name in place."""
    merged: dict[str, McpServerSpec] = {}
    for group in groups:
        for spec in group:
            merged[spec.name] = spec
    return list(merged.values())
