"""Projection of loaded plugins and directories onto the AHP 0.2.0 customization tree.

Contract:
- Every function returns plain dicts exactly as they go on the wire: camelCase keys, absent
  optional keys omitted (never ``null``), ``type`` discriminators as in the schema
  (``plugin``, ``directory``, ``skill``, ``agent``, ``rule``, ``prompt``, ``hook``, ``mcpServer``).
- ``id`` values are minted by the injected ``mint_id(key)``; ``key`` is a stable description of
  the item (its URI, plus ``#<type>=<name>`` for items that share a file) so a deterministic
  minter (e.g. :func:`uri_id`) can reuse it. The default :func:`random_id` ignores it.
- URIs are ``file://`` URIs of the declaring file; ``uri_base`` replaces the plugin root's URI
  (e.g. a client's ``virtual://`` plugin URI, whose local copy was parsed).
- A container whose state is ``error`` has no ``children`` (absent = not parsed); any other
  loaded container has a ``children`` list (possibly empty). Commands are ``skill`` children.
- A loaded container's warnings and infos (lenient readings of frontmatter that was not strict
  YAML, unknown keys, things ignored on purpose) are its *notes*: they never change the load
  state (AHP's ``loaded`` has no message), so they travel in the container's ``_meta.notes``, a
  list of ``plugin X ==> file ==> key: message`` strings, at most ``NOTES_LIMIT`` of them plus
  one saying how many more there are.
- Pure: no I/O; call again after a re-parse and dispatch ``session/customizationUpdated``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from plugins.diagnostics import LoadState
from plugins.model import LoadedContainer, LoadedDirectory, LoadedPlugin

__all__ = [
    "MintId",
    "NOTES_LIMIT",
    "child_customizations",
    "container_notes",
    "directory_customization",
    "loading_plugin_customization",
    "plugin_customization",
    "random_id",
    "uri_id",
]

MintId = Callable[[str], str]

NOTES_LIMIT = 20
"""Notes published per container; a plugin with more says how many were left out."""


def container_notes(container: LoadedContainer) -> list[str]:
    """The container's notes as published in ``_meta.notes`` (see the module docstring)."""
    notes = [str(d) for d in container.warnings]
    if len(notes) > NOTES_LIMIT:
        left = len(notes) - NOTES_LIMIT
        notes = notes[:NOTES_LIMIT] + [f"... and {left} more note{'s' if left != 1 else ''}"]
    return notes


def random_id(key: str) -> str:
    """Default minter: a fresh uuid4 per call (``key`` is ignored)."""
    return str(uuid.uuid4())


def uri_id(key: str) -> str:
    """Deterministic minter: the item's key itself (VS Code's approach)."""
    return key


class _Uris:
    """Maps paths under a container root to the URIs clients see."""

    def __init__(self, root: Path, base: str | None) -> None:
        self.root = root
        self.base = base.rstrip("/") if base else None

    def of(self, path: Path) -> str:
        if self.base is None:
            return path.absolute().as_uri()
        try:
            relative = path.relative_to(self.root).as_posix()
        except ValueError:
            return path.absolute().as_uri()
        return self.base if relative == "." else f"{self.base}/{quote(relative)}"


def child_customizations(container: LoadedContainer, *, mint_id: MintId = random_id,
                         uri_base: str | None = None) -> list[dict[str, Any]]:
    """The AHP child list of a loaded container, in a stable order."""
    uris = _Uris(container.root, uri_base)
    children: list[dict[str, Any]] = []

    def add(kind: str, path: Path, name: str, extra: dict[str, Any], span: Any = None, shared: bool = False) -> None:
        uri = uris.of(path)
        key = f"{uri}#{kind}={quote(name, safe='')}" if shared or span is not None else uri
        child: dict[str, Any] = {"type": kind, "id": mint_id(key), "uri": uri, "name": name}
        if span is not None:
            child["range"] = span.to_wire()
        child.update({k: v for k, v in extra.items() if v is not None})
        children.append(child)

    for skill in container.skills:
        add("skill", skill.path, skill.name,
            {"description": skill.description, "disableModelInvocation": skill.disable_model_invocation})
    for command in container.commands:
        add("skill", command.path, command.name,
            {"description": command.description, "disableModelInvocation": command.disable_model_invocation})
    for agent in container.agents:
        add("agent", agent.path, agent.name, {"description": agent.description})
    for rule in container.rules:
        add("rule", rule.path, rule.name, {"description": rule.description, "alwaysApply": rule.always_apply,
                                           "globs": list(rule.globs) if rule.globs else None})
    for prompt in container.prompts:
        add("prompt", prompt.path, prompt.name, {"description": prompt.description})
    for hook_file in container.hook_files:
        add("hook", hook_file.path, hook_file.name, {}, hook_file.range)
    for server in container.mcp_servers:
        add("mcpServer", server.path or container.root, server.name, {}, server.range, shared=True)
    return children


def _container(kind: str, container_id: str, uri: str, name: str, enabled: bool, client_id: str | None,
               state: LoadState, children: list[dict[str, Any]] | None, notes: list[str] | None = None) -> dict[str, Any]:
    wire: dict[str, Any] = {"type": kind, "id": container_id, "uri": uri, "name": name, "enabled": enabled}
    if client_id is not None:
        wire["clientId"] = client_id
    wire["load"] = state.to_wire()
    if children is not None:
        wire["children"] = children
    if notes:
        wire["_meta"] = {"notes": notes}
    return wire


def plugin_customization(
    plugin: LoadedPlugin,
    *,
    mint_id: MintId = random_id,
    id: str | None = None,
    enabled: bool = True,
    client_id: str | None = None,
    uri: str | None = None,
    state: LoadState | None = None,
) -> dict[str, Any]:
    """AHP ``PluginCustomization`` for a loaded plugin.

    ``id`` keeps the container's id stable across re-parses (pass the one published before);
    ``uri`` is the published plugin URI when it is not the local root (client plugins);
    ``state`` overrides ``plugin.state``, e.g. ``plugin.state.with_problems([...])`` after an
    MCP server failed to start.
    """
    uris = _Uris(plugin.root, uri)
    container_uri = uris.of(plugin.root)
    effective = state or plugin.state
    children = None if effective.kind == "error" or plugin.state.kind == "error" else \
        child_customizations(plugin, mint_id=mint_id, uri_base=uri)
    wire = _container("plugin", id or mint_id(container_uri), container_uri, plugin.name, enabled, client_id,
                      effective, children, container_notes(plugin))
    if plugin.icon is not None:
        wire["icons"] = [plugin.icon.to_wire()]
    return wire


def loading_plugin_customization(
    root: Path,
    *,
    name: str | None = None,
    mint_id: MintId = random_id,
    id: str | None = None,
    enabled: bool = True,
    client_id: str | None = None,
    uri: str | None = None,
) -> dict[str, Any]:
    """The ``loading`` placeholder a host publishes before parsing (no ``children``)."""
    container_uri = uri or Path(root).absolute().as_uri()
    return _container("plugin", id or mint_id(container_uri), container_uri, name or Path(root).name, enabled,
                      client_id, LoadState("loading"), None)


def directory_customization(
    directory: LoadedDirectory,
    *,
    mint_id: MintId = random_id,
    id: str | None = None,
    enabled: bool = True,
    client_id: str | None = None,
    writable: bool | None = None,
    state: LoadState | None = None,
) -> dict[str, Any]:
    """AHP ``DirectoryCustomization``; ``writable`` defaults to the spec's policy; ``state``
    overrides ``directory.state`` (run-time problems, as for plugins)."""
    container_uri = directory.root.absolute().as_uri()
    children = None if directory.state.kind == "error" else child_customizations(directory, mint_id=mint_id)
    wire = _container("directory", id or mint_id(container_uri), container_uri, directory.name, enabled,
                      client_id, state or directory.state, children, container_notes(directory))
    wire["contents"] = directory.contents
    wire["writable"] = directory.writable if writable is None else writable
    return wire
