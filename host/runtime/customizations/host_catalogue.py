"""The host-wide catalogue: what every session can draw on, loaded once and watched for changes
(not ``host.runtime.catalogue``, which cuts the skills and agents offered to the model to a budget).

``HostCatalogue`` holds the host's plugins (parsed from ``[plugins] directories`` by ``load()`` at
host start; ``agent_customizations()`` lists them for ``AgentInfo.customizations``) and the Claude
Code user set-up (``ClaudeCode``, or None when ``[claude_code]`` is off: settings, marketplaces,
installed plugins, the user's hooks and ``CLAUDE.md``). It knows nothing of sessions:

- ``refresh()`` looks whether the Claude Code set-up changed on disk (a turn asks; True: it did).
- ``install(missing)`` installs switched-on plugins that are not installed yet, in the background,
  one batch at a time; when something was installed it calls ``changed`` (the service then
  re-lists every session's Claude Code plugins). ``wait_installed`` bounds how long a turn waits.
- ``user_containers()`` are the containers of the user's own Claude Code settings and
  instructions, listed in every session.
- ``listeners`` are called after the Claude Code set-up changed (the root config's plugin keys
  follow it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import plugins
from host.config import HostConfig
from host.runtime.customizations._containers import Container, internal_shape
from host.runtime.customizations.claude_code import ClaudeCode

__all__ = ["HostCatalogue"]

logger = logging.getLogger("host.runtime.customizations.service")
"""(The service's logger: what it logs about plugins reads as it did before the split.)"""


class HostCatalogue:
    """The host's plugins and the Claude Code user set-up, shared by every session."""

    def __init__(self, config: HostConfig, claude: ClaudeCode | None, *,
                 spawn: Callable[[Coroutine[Any, Any, Any]], None], changed: Callable[[], None]) -> None:
        self.config = config
        self.claude = claude
        """A Claude Code user's set-up (settings, marketplaces, plugins), or None when off."""
        self.plugins: list[plugins.LoadedPlugin] = []
        self.listeners: list[Any] = []
        """Called after the Claude Code set-up changed (the root config's plugin keys follow it)."""
        self._spawn = spawn
        self._changed = changed
        self._installing = False
        """Whether plugins switched on but not installed are being installed (one batch at a time)."""
        self._installed: asyncio.Event | None = None
        """Set when the background install of missing Claude Code plugins under way has ended."""

    def load(self) -> None:
        """Parse the configured plugin directories and read the Claude Code user set-up (never
        raises for bad plugin or settings content)."""
        if self.claude is not None:
            self.claude.load()
        if not self.config.plugins.directories:
            self.plugins = []  # nothing to parse: the plugin parser is not even imported at start
            return
        data_root = self.config.data_path() / "plugins"
        self.plugins = plugins.load_plugins(self.config.plugins.directories, data_root=data_root)
        for plugin in self.plugins:
            if plugin.state.kind != "loaded":
                logger.warning("plugin %s is %s: %s", plugin.name, plugin.state.kind, plugin.state.message)

    def agent_customizations(self) -> list[dict[str, Any]]:
        """``AgentInfo.customizations``: the host's plugins, ids = their root URIs, in the model's
        shape as a session's are (an MCP server with its state: ``stopped`` here, where none runs;
        the dialects give older clients their own)."""
        if not self.plugins:
            return []
        return [internal_shape(plugins.plugin_customization(p, mint_id=plugins.uri_id, id=p.root.as_uri())) for p in self.plugins]

    def refresh(self) -> bool:
        """Whether the Claude Code set-up changed on disk since it was last read (re-reading it)."""
        return self.claude is not None and self.claude.refresh()

    def user_containers(self) -> list[Container]:
        """The Claude Code user settings (their hooks) and the user's ``CLAUDE.md``, when present."""
        if self.claude is None:
            return []
        containers = []
        user = self.claude.user_container
        if user is not None:
            uri = (user.root / "settings.json").as_uri()
            containers.append(Container(id=uri, loaded=user, name="Claude Code user settings", uri=uri))
        instructions = self.claude.user_instructions
        if instructions is not None:
            uri = (instructions.root / "CLAUDE.md").as_uri()
            containers.append(Container(id=uri, loaded=instructions, name="Claude Code user instructions", uri=uri))
        return containers

    def install(self, missing: list[Any]) -> None:
        """Install ``missing`` switched-on plugins in the background, unless a batch is under way."""
        if missing and not self._installing:
            self._installing = True
            self._installed = asyncio.Event()
            self._spawn(self._install_missing(missing, self._installed))

    async def wait_installed(self, timeout: float) -> None:
        """Until the background install under way (if any) has ended, ``timeout`` seconds at most."""
        installed = self._installed
        if installed is not None and not installed.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(installed.wait(), timeout)

    async def _install_missing(self, missing: list[Any], finished: asyncio.Event) -> None:
        assert self.claude is not None
        try:
            try:
                installed = await asyncio.to_thread(self.claude.install_missing, missing)
            finally:
                self._installing = False
            if installed:
                self._changed()
        finally:
            finished.set()  # (after the sessions list what was installed)
