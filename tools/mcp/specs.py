"""One normalized description of an MCP server: what is needed to start it (or reach it).

Contract:
* `McpServerSpec` is immutable and fully resolved: variables are already expanded, `cwd`
  is absolute, `transport` is one of `stdio` / `http` / `sse`. A stdio spec has a
  `command`; an http/sse spec has a `url`. `env` holds only the declared variables (plus
  `PLUGIN_ROOT` & co. for plugin servers), never the host environment: what a server
  process inherits from the host is decided when it is spawned (see `_stdio`).
* Declarations are parsed elsewhere, once: `plugins.mcp_servers` reads the format and
  `host.runtime.customizations.mcp_declarations` turns config, workspace and plugin declarations
  into specs. This package never reads declarations itself.
* `merge_specs` combines groups; a later group's server replaces an earlier one with the
  same name (config, then workspace, then plugins is the host's precedence).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .errors import McpConfigError

__all__ = [
    "McpServerSpec",
    "Transport",
    "merge_specs",
]


Transport = Literal["stdio", "http", "sse"]

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


def merge_specs(*groups: Iterable[McpServerSpec]) -> list[McpServerSpec]:
    """Combine groups in order; a later spec replaces an earlier one of the same name in place."""
    merged: dict[str, McpServerSpec] = {}
    for group in groups:
        for spec in group:
            merged[spec.name] = spec
    return list(merged.values())
