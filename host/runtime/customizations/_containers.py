"""One published customization container of one session, and its wire projection.

Invariants:
- ``id`` is stable for the container's life in the session (plugin and directory ids are their
  ``file://`` URIs; client plugins keep the id their client published), so re-publishing after a
  re-parse or a runtime problem is a ``customizationUpdated`` upsert, never a new entry.
- ``problems`` are runtime troubles (an MCP server that failed); they degrade the published load
  state without touching what was parsed, and clearing them restores it.
- A container whose parsed state is ``error`` contributes nothing at run time, nor does one
  ``held`` for workspace trust (``host.runtime.trust``): it is published ``degraded`` with the reason.
- ``wire()`` is the internal model's shape (AHP 0.9.0): a plugin carries its switch as an
  ``enablement`` decision list (``[{kind: "session", enabled: false}]`` when switched off, no list
  when on: enabled by default), a directory keeps ``enabled``; an ``mcpServer`` entry carries a
  ``state`` (``stopped`` until the session's MCP runtime reports otherwise with
  ``session/mcpServerStateChanged``; a re-publication keeps the states already published) and,
  once its server ran, a ``_meta`` with what it logged, its prompts and resources
  (``server_meta``, see ``host.runtime.customizations.mcp``). ``entry_enabled`` / ``enablement_enabled`` read a switch
  back from either form.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import plugins
from plugins.diagnostics import LoadState

__all__ = ["Container", "McpServersContainer", "MCP_SERVERS_ID", "enablement_enabled", "entry_enabled", "internal_shape"]

MCP_SERVERS_ID = "mcp-servers"
"""The container listing a session's MCP servers from the host config and the workspace ``.mcp.json``."""


def enablement_enabled(enablement: Any) -> bool:
    """Whether an ``enablement`` decision list switches its entry on (no decision: on)."""
    if isinstance(enablement, list) and enablement and isinstance(enablement[0], dict):
        return bool(enablement[0].get("enabled", True))
    return True


def entry_enabled(entry: dict[str, Any]) -> bool:
    """Whether a published customization (either form) is switched on."""
    if "enablement" in entry:
        return enablement_enabled(entry.get("enablement"))
    return bool(entry.get("enabled", True))


def internal_shape(entry: dict[str, Any], states: Mapping[Any, Any] | None = None) -> dict[str, Any]:
    """A customization as the plugin parser builds it (``enabled`` everywhere) in the internal
    model's shape (see the module docstring); ``states`` are known MCP server states by id."""
    entry = dict(entry)
    kind = entry.get("type")
    if kind == "plugin":
        enabled = entry.pop("enabled", True)
        if not enabled:
            entry["enablement"] = [{"kind": "session", "enabled": False}]
    elif kind == "mcpServer":
        enabled = entry.pop("enabled", True)
        if not enabled:
            entry["enablement"] = [{"kind": "session", "enabled": False}]
        entry["state"] = (states or {}).get(entry.get("id")) or entry.get("state") or {"kind": "stopped"}
    if isinstance(entry.get("children"), list):
        entry["children"] = [internal_shape(child, states) if isinstance(child, dict) else child for child in entry["children"]]
    return entry


@dataclass
class Container:
    """A plugin or directory as one session sees it."""

    id: str
    loaded: plugins.LoadedContainer | None
    """None while the container is still ``loading`` or could not be fetched at all."""
    enabled: bool = True
    client_id: str | None = None
    uri: str | None = None
    """The published URI when it is not the local root (a client's plugin)."""
    nonce: str | None = None
    """The client's change token: a client plugin is re-parsed only when it changes."""
    name: str | None = None
    failure: str | None = None
    """Why a container that has no ``loaded`` form failed (e.g. an unreachable client plugin)."""
    problems: dict[str, str] = field(default_factory=dict)
    """Runtime problems keyed by what caused them (``mcp:<server>``)."""
    directory: plugins.DirectorySpec | None = None
    """For a workspace folder: what it holds (so even its ``loading`` form is a directory)."""
    held: str | None = None
    """Why it waits for the user to trust its folder (it runs nothing until then), or None."""
    claude_id: str | None = None
    """A Claude Code plugin (``name@marketplace``) switched on by settings or on this host."""
    enabled_by: str | None = None
    """The project settings file that alone switched that plugin on (it waits for trust)."""
    server_meta: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The ``_meta`` of its ``mcpServer`` children by server name (log, prompts, resources)."""

    @property
    def usable(self) -> plugins.LoadedContainer | None:
        """What the session acts on: enabled, parsed without a fatal error, not held for trust."""
        if not self.enabled or self.held is not None or self.loaded is None or self.loaded.state.kind == "error":
            return None
        return self.loaded

    def shown_problems(self) -> list[str]:
        """Run-time problems and the trust hold, as published."""
        return sorted(self.problems.values()) + ([self.held] if self.held else [])

    def wire(self, states: Mapping[Any, Any] | None = None) -> dict[str, Any]:
        """The AHP container customization (internal model), children included; ``states`` are the
        MCP server states already published, by entry id (kept rather than reset)."""
        wire = internal_shape(self._parsed_wire(), states)
        if self.server_meta and isinstance(wire.get("children"), list):
            wire["children"] = [
                {**child, "_meta": {**(child.get("_meta") or {}), **self.server_meta[child["name"]]}}
                if isinstance(child, dict) and child.get("type") == "mcpServer" and child.get("name") in self.server_meta
                else child
                for child in wire["children"]
            ]
        return wire

    def _parsed_wire(self) -> dict[str, Any]:
        if self.loaded is None:
            state = LoadState("error", self.failure) if self.failure else LoadState("loading")
            wire: dict[str, Any] = {"type": "directory" if self.directory else "plugin", "id": self.id, "uri": self.uri or self.id,
                                    "name": self.name or self.id, "enabled": self.enabled}
            if self.client_id is not None:
                wire["clientId"] = self.client_id
            wire["load"] = state.to_wire()
            if self.directory is not None:
                wire["contents"] = self.directory.contents
                wire["writable"] = self.directory.writable
            return wire
        problems = self.shown_problems()
        shown = self.loaded.state.with_problems(problems) if problems else None
        if isinstance(self.loaded, plugins.LoadedDirectory):
            return plugins.directory_customization(self.loaded, mint_id=plugins.uri_id, id=self.id, enabled=self.enabled,
                                                   client_id=self.client_id, state=shown)
        assert isinstance(self.loaded, plugins.LoadedPlugin)
        return plugins.plugin_customization(self.loaded, mint_id=plugins.uri_id, id=self.id, enabled=self.enabled,
                                            client_id=self.client_id, uri=self.uri, state=shown)


@dataclass
class McpServersContainer(Container):
    """The MCP servers a session gets from the host config and its ``.mcp.json`` (plugins list
    their own servers). It contributes nothing at run time; it exists so a person can see those
    servers, and why one failed to start or crashed (its ``problems``), in the session's
    customizations like any plugin's."""

    servers: list[tuple[str, str]] = field(default_factory=list)
    """``(server name, URI of where it was declared)``."""

    @property
    def usable(self) -> plugins.LoadedContainer | None:
        return None

    def _parsed_wire(self) -> dict[str, Any]:
        problems = self.shown_problems()
        state = LoadState("loaded").with_problems(problems) if problems else LoadState("loaded")
        children = [{"type": "mcpServer", "id": f"{self.id}#{name}", "uri": uri, "name": name} for name, uri in self.servers]
        return {"type": "directory", "id": self.id, "uri": self.uri or self.id, "name": self.name or "MCP servers",
                "enabled": self.enabled, "load": state.to_wire(), "children": children,
                "contents": "mcpServer", "writable": False}
