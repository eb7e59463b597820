"""The per-session tree clients see: how a session's containers are listed and published.

``SessionTree`` keeps ``SessionCustomizations.containers`` and the session's published
``customizations`` in step: ``put`` lists a container in place of the one it replaces (or at a
position) and publishes it with ``session/customizationUpdated``; ``publish`` re-publishes one,
keeping the MCP servers' states the runtime reported (``mcpServerStateChanged``) instead of
resetting them; ``remove`` withdraws one. ``directory_specs`` are the workspace folders a session
lists (the ``ALWAYS_LISTED_DIRECTORIES`` even before they exist; the others when present), and
``refresh_directories`` reads again the folders whose files changed since they were read (a
``.claude/commands`` file added during a session counts from the next turn), looking the paths up
through the host's ``PathProbe`` (an absent folder is not looked up again while the folder above it
is unchanged: a turn's refresh costs a few system calls, not one per known path); ``held`` says whether
a re-read container waits for its folder to be trusted (``host.runtime.trust``, decided by the
service). It starts nothing and asks nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import plugins
from ahp.protocol import builders
from host.config import HostConfig
from host.runtime.customizations._containers import Container
from host.runtime.customizations.path_probe import PathProbe, Probe
from host.runtime.customizations.session import SessionCustomizations
from host.state.store import Store

__all__ = ["SessionTree", "ALWAYS_LISTED_DIRECTORIES", "dir_uri", "folder_stamp"]

ALWAYS_LISTED_DIRECTORIES = (".github/instructions", ".github/prompts", ".github/agents")
"""Workspace folders published even before they exist (writable, so clients can add files);
the other known folders and instruction files appear only when present."""

Held = Callable[[SessionCustomizations, Container], "str | None"]
"""Why a container waits for its folder to be trusted (None: it may act)."""


class SessionTree:
    """The containers of each session, listed and published."""

    def __init__(self, config: HostConfig, store: Store) -> None:
        self.config = config
        self.store = store
        self.probe = PathProbe()
        """The workspace paths' lookups, shared by the host's sessions."""
        self._layouts: dict[Path, _Layout] = {}
        """Each working directory's workspace paths and URIs, worked out once."""

    def remove(self, runtime: SessionCustomizations, container: Container) -> None:
        """Withdraw ``container`` from the session (``session/customizationRemoved``)."""
        runtime.containers.remove(container)
        self.store.dispatch(runtime.session, builders.session_customization_removed(id=container.id))

    def put(self, runtime: SessionCustomizations, container: Container, existing: Container | None, position: int) -> int:
        """List ``container`` in the session in place of ``existing``, or at ``position`` when it is
        new, and publish it; returns where the next new container goes."""
        if existing is not None:
            runtime.containers[runtime.containers.index(existing)] = container
        else:
            runtime.containers.insert(position, container)
            position += 1
        self.publish(runtime, container)
        return position

    def publish(self, runtime: SessionCustomizations, container: Container) -> None:
        if runtime.session in self.store:
            # The MCP servers' states are the runtime's (``mcpServerStateChanged``): re-publishing the
            # container keeps them instead of resetting them to ``stopped``.
            states = {child.get("id"): child.get("state")
                      for entry in (self.store.state(runtime.session) or {}).get("customizations") or ()
                      if isinstance(entry, dict) and entry.get("id") == container.id
                      for child in entry.get("children") or () if isinstance(child, dict) and child.get("type") == "mcpServer"
                      and isinstance(child.get("state"), dict)}
            self.store.dispatch(runtime.session, builders.session_customization_updated(customization=container.wire(states)))

    def refresh_directories(self, runtime: SessionCustomizations, held: Held) -> None:
        """The workspace folders that changed since they were read (a command file added to
        ``.claude/commands``, a skills folder created) are read again: the session has what they
        hold from this turn on, as Claude Code finds a new command without a restart."""
        folder = runtime.working_directory
        if folder is None:
            return
        probe = self.probe.round()
        root = os.path.abspath(folder)
        for spec, paths, uri in self._listed(runtime, probe):
            stamp = _stamp(root, spec, paths, probe)
            existing = runtime.container(uri)
            if existing is not None and runtime.directory_stamps.get(uri) == stamp:
                continue
            runtime.directory_stamps[uri] = stamp
            extra = runtime.settings_notes if spec.format == "settings" else ()
            container = Container(id=uri, loaded=plugins.load_directory(folder, spec, extra_diagnostics=extra), name=spec.display_name,
                                  uri=uri, directory=spec)
            container.held = held(runtime, container)
            if existing is not None:
                container.enabled = existing.enabled
            self.put(runtime, container, existing, len(runtime.containers))

    def directory_specs(self, runtime: SessionCustomizations, probe: Probe | None = None) -> list[Any]:
        """The workspace folders the session lists (``probe``: this refresh's lookups)."""
        return [spec for spec, _, _ in self._listed(runtime, probe or self.probe.round())]

    def _listed(self, runtime: SessionCustomizations, probe: Probe) -> list[tuple[Any, tuple[str, ...], str]]:
        """(spec, its absolute paths, its URI) of each workspace folder the session lists: the
        ``ALWAYS_LISTED_DIRECTORIES``, the file sets with a file present, the folders present."""
        folder = runtime.working_directory
        if not self.config.plugins.workspace or folder is None:
            return []
        layout = self._layouts.get(folder)
        if layout is None:
            if len(self._layouts) >= 1_000:
                self._layouts.clear()
            layout = self._layouts[folder] = _Layout(runtime)
        root = layout.root
        if not probe.is_dir(root, root):
            return []
        chosen = []
        for spec, paths, uri in layout.specs:
            if spec.relative in ALWAYS_LISTED_DIRECTORIES:
                chosen.append((spec, paths, uri))
            elif spec.files:  # instruction files, Claude settings
                if any(probe.is_file(path, root) for path in paths):
                    chosen.append((spec, paths, uri))
            elif probe.is_dir(paths[0], root):
                chosen.append((spec, paths, uri))
        return chosen


class _Layout:
    """The workspace folders' paths and URIs under one working directory, worked out once."""

    __slots__ = ("root", "specs")

    def __init__(self, runtime: SessionCustomizations) -> None:
        assert runtime.working_directory is not None
        self.root = root = os.path.abspath(runtime.working_directory)
        self.specs = [(spec, _paths(root, spec), dir_uri(runtime, spec.relative)) for spec in plugins.WORKSPACE_DIRECTORIES]


def _paths(root: str, spec: Any) -> tuple[str, ...]:
    """A workspace spec's files, or its folder, as absolute paths under ``root``."""
    if spec.files:
        return tuple(os.path.join(root, name) for name in spec.files)
    return (os.path.normpath(os.path.join(root, spec.relative)),)


def dir_uri(runtime: SessionCustomizations, relative: str) -> str:
    """The URI of a workspace folder (``.`` the working directory itself) of the session."""
    assert runtime.working_directory is not None
    folder = runtime.working_directory if relative == "." else runtime.working_directory / relative
    return folder.absolute().as_uri()


def folder_stamp(working_directory: Path, spec: Any, probe: Probe | None = None) -> tuple[Any, ...]:
    """What changes when a workspace folder's files do: each file's (or, for a folder, each entry's
    and its entries') name, size and modification time; two levels (``skills/<name>/SKILL.md``).
    ``probe``: the refresh's lookups (an absent file or folder is not looked up again while the
    folder above it is unchanged; what exists always is)."""
    root = os.path.abspath(working_directory)
    return _stamp(root, spec, _paths(root, spec), probe or PathProbe().round())


def _stamp(root: str, spec: Any, paths: tuple[str, ...], probe: Probe) -> tuple[Any, ...]:
    """``folder_stamp`` of ``spec`` at its ``paths`` (``_paths``)."""
    def entries(path: str, depth: int) -> list[Any]:
        try:
            found = sorted(os.scandir(path), key=lambda entry: entry.name)
        except OSError:
            return []
        listed: list[Any] = []
        for entry in found:
            try:
                info = entry.stat()
            except OSError:
                continue
            listed.append((entry.name, info.st_size, info.st_mtime_ns))
            if depth and entry.is_dir(follow_symlinks=False):
                listed.append(tuple(entries(entry.path, depth - 1)))
        return listed

    if spec.files:
        stamps: list[Any] = []
        for name, path in zip(spec.files, paths):
            info = probe.stat(path, root)
            stamps.append((name, None) if info is None else (name, info.st_size, info.st_mtime_ns))
        return tuple(stamps)
    if probe.stat(paths[0], root) is None:
        return ()  # (as listing it would: no entries)
    return tuple(entries(paths[0], 1))
