"""The user's Claude Code plugins in the root config, where every client lists and changes them.

Contract (the wire shapes are ``ahp.claude_plugins``'s):
- ``publish()`` puts ``enabledPlugins``, ``pluginMarketplaces`` and ``claudePlugins`` in the root
  config as the host sees them now (at start, and after every change, whoever made it: a client,
  the command line, an edited settings file noticed at a turn).
- A client's ``root/configChanged`` (observed on the root channel) that changes ``enabledPlugins``
  records each changed switch (``ClaudePlugins.set_enabled``; a removed key forgets the choice);
  a plugin switched on that is neither installed nor usable in place is installed from its
  marketplace first. One that changes ``pluginMarketplaces`` adds the entries with a new
  ``source`` and removes the marketplaces added here whose entries are gone. The work (git, copies)
  runs in a thread, one change at a time; then ``changed`` is called (the customization service
  re-lists every open session's plugins, from their next turn) and the values are published
  again: a failure shows as the ``error`` of the marketplace entry the client added, or as the
  ``problem`` of the plugin's row.
- The host's own ``root/configChanged`` (what ``publish`` dispatches) is recognised by its values
  being the ones last published and is not acted on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from ahp import claude_plugins as wire
from ahp.protocol import builders
from host.runtime.customizations.claude_code import ClaudeCode
from host.state.store import ROOT, Store
from plugins.marketplaces import MarketplaceError

__all__ = ["ClaudeRootConfig"]

logger = logging.getLogger(__name__)


class ClaudeRootConfig:
    """Keeps the root config's plugin keys and the host's record in step (see the contract)."""

    def __init__(self, store: Store, claude: ClaudeCode, changed: Callable[[], None]) -> None:
        self.store = store
        self.claude = claude
        self.changed = changed
        self._published: dict[str, Any] = {}
        self._failed_adds: list[dict[str, Any]] = []
        self._install_problems: dict[str, str] = {}
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()
        store.change_observers.append(self._observe)

    def values(self) -> dict[str, Any]:
        rows = self.claude.plugin_rows()
        for row in rows:
            if row["id"] in self._install_problems:
                row["problem"] = self._install_problems[row["id"]]
        markets = [{**row, "source": row["source"] or row["name"]} for row in self.claude.marketplace_rows()]
        return {
            wire.ENABLED_KEY: self.claude.user_enabled(),
            wire.MARKETPLACES_KEY: [*markets, *self._failed_adds],
            wire.PLUGINS_KEY: rows,
        }

    def publish(self) -> None:
        values = self.values()
        config = (self.store.state(ROOT) or {}).get("config")
        current = (config or {}).get("values") or {} if isinstance(config, dict) else {}
        self._published = values
        if any(current.get(key) != value for key, value in values.items()):
            self.store.dispatch(ROOT, builders.root_config_changed(config=values))

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # -- a client's change ---------------------------------------------------------------------

    def _observe(self, channel: str, before: dict[str, Any], after: dict[str, Any], envelope: dict[str, Any]) -> None:
        if channel != ROOT or (envelope.get("action") or {}).get("type") != "root/configChanged":
            return
        values = (envelope.get("action") or {}).get("config") or {}
        wanted = {key: values[key] for key in (wire.ENABLED_KEY, wire.MARKETPLACES_KEY) if key in values}
        if not wanted or all(self._published.get(key) == value for key, value in wanted.items()):
            return  # the host's own publication (or no change to these keys)
        task = asyncio.get_running_loop().create_task(self._apply(wanted, dict(self._published)))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _apply(self, wanted: dict[str, Any], published: dict[str, Any]) -> None:
        async with self._lock:
            try:
                await asyncio.to_thread(self._apply_sync, wanted, published)
            except Exception:  # one bad change must not stop later ones; the listing says what is true
                logger.exception("applying a client's plugin change failed")
            self.changed()
            self.publish()

    def _apply_sync(self, wanted: dict[str, Any], published: dict[str, Any]) -> None:
        store = self.claude.store
        if wire.MARKETPLACES_KEY in wanted:
            entries = [item for item in wanted[wire.MARKETPLACES_KEY] if isinstance(item, dict)]
            known = {item.get("name") for item in published.get(wire.MARKETPLACES_KEY) or () if item.get("name")}
            kept = {item.get("name") for item in entries if item.get("name")}
            self._failed_adds = []
            for item in entries:
                if item.get("name") or item.get("error"):
                    continue
                source = str(item.get("source"))
                try:
                    market = store.add_marketplace(source)  # (an entry a client re-sent without its name: fetched again)
                    kept.add(market.name)
                    logger.info("marketplace %s added from %s", market.name, source)
                except MarketplaceError as error:
                    self._failed_adds.append({"source": source, "error": str(error)})
            for name in known - kept:
                try:
                    store.remove_marketplace(name)
                except MarketplaceError as error:
                    logger.info("marketplace %s not removed: %s", name, error)
        if wire.ENABLED_KEY in wanted:
            before = published.get(wire.ENABLED_KEY) or {}
            after = {k: v for k, v in (wanted[wire.ENABLED_KEY] or {}).items() if isinstance(v, bool)}
            for plugin_id in set(before) | set(after):
                if before.get(plugin_id) == after.get(plugin_id):
                    continue
                self._install_problems.pop(plugin_id, None)
                store.set_enabled(plugin_id, after.get(plugin_id))
                if after.get(plugin_id) and isinstance(store.resolve(plugin_id), str) \
                        and self.claude.in_marketplace(plugin_id) is None:
                    try:
                        store.install(plugin_id, self.claude.user.marketplaces)
                    except MarketplaceError as error:
                        self._install_problems[plugin_id] = f"cannot install it: {error}"
