"""Claude Code plugins on the wire: the root config keys through which any client lists the user's
marketplaces and plugins, switches plugins on and off, installs them and adds marketplaces.
Pure: no I/O. The host owns the values (``host.runtime.customizations.claude_config``); a client
changes them with ``root/configChanged``, as it changes ``trustedFolders``:

* :data:`ENABLED_KEY` (``enabledPlugins``): ``{"name@marketplace": true|false}``, the user-level
  switches (Claude Code's user settings, then the choices made on this host). Setting a plugin
  ``true`` switches it on for every session from its next turn, installing it first when its
  marketplace lists it and it is not installed; ``false`` switches it off; removing a key forgets
  the choice made here (Claude Code's user settings apply again).
* :data:`MARKETPLACES_KEY` (``pluginMarketplaces``): a list of ``{"name", "source", "origin",
  "plugins": [names], "error"?}``. A client appends ``{"source": "owner/repo"}`` (or a git URL, or
  an absolute folder) to add a marketplace; the host then publishes it with its name and plugins,
  or with an ``error`` saying why it could not be added (such an entry is dropped at the next
  change); an entry sent again with its ``source`` only fetches that marketplace again (an
  update). Removing an entry removes a marketplace added on this host (Claude Code's own and those
  settings declare stay: the host lists them again).
* :data:`PLUGINS_KEY` (``claudePlugins``, read-only): one row per plugin known at user level:
  ``id``, ``enabled``, ``installed`` (``here``, ``claude-code``, ``in place``, or null),
  ``version``, ``problem`` (why it does not load, or why installing failed).

``with_enabled``, ``with_marketplace`` and ``without_marketplace`` build a client's change;
``value_problem`` is what the host checks a client's value against.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ENABLED_KEY", "ENABLED_PROPERTY", "MARKETPLACES_KEY", "MARKETPLACES_PROPERTY", "MAX_MARKETPLACES", "PLUGINS_KEY",
    "PLUGINS_PROPERTY", "enabled_plugins", "marketplaces", "plugin_rows", "value_problem", "with_enabled",
    "with_marketplace", "with_marketplace_updated", "without_marketplace",
]

ENABLED_KEY = "enabledPlugins"
MARKETPLACES_KEY = "pluginMarketplaces"
PLUGINS_KEY = "claudePlugins"
MAX_MARKETPLACES = 200
MAX_PLUGINS = 2000

ENABLED_PROPERTY: dict[str, Any] = {
    "type": "object",
    "title": "Enabled plugins",
    "description": 'Claude Code plugins switched on for every session, as {"name@marketplace": true|false}. '
    "Switching one on installs it from its marketplace when needed; removing a key forgets the choice made here.",
}
MARKETPLACES_PROPERTY: dict[str, Any] = {
    "type": "array",
    "title": "Plugin marketplaces",
    "description": 'Claude Code plugin marketplaces. Append {"source": "owner/repo"} (or a git URL, or a folder) '
    "to add one; remove an entry to remove a marketplace added on this host.",
    "items": {"type": "object", "title": "Marketplace"},
}
PLUGINS_PROPERTY: dict[str, Any] = {
    "type": "array",
    "title": "Claude Code plugins",
    "description": "The plugins installed or switched on for this user, and where each is installed.",
    "items": {"type": "object", "title": "Plugin"},
    "readOnly": True,
}


def _values(config: Any) -> dict[str, Any]:
    values = config.get("values") if isinstance(config, dict) else None
    return values if isinstance(values, dict) else {}


def enabled_plugins(config: Any) -> dict[str, bool]:
    """``RootState.config`` -> the published ``enabledPlugins``."""
    value = _values(config).get(ENABLED_KEY)
    return {k: v for k, v in value.items() if isinstance(v, bool)} if isinstance(value, dict) else {}


def marketplaces(config: Any) -> list[dict[str, Any]]:
    value = _values(config).get(MARKETPLACES_KEY)
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def plugin_rows(config: Any) -> list[dict[str, Any]]:
    value = _values(config).get(PLUGINS_KEY)
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def with_enabled(current: dict[str, bool], plugin_id: str, enabled: bool) -> dict[str, bool]:
    return {**current, plugin_id: enabled}


def with_marketplace(current: list[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    return [*current, {"source": source}]


def without_marketplace(current: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [item for item in current if item.get("name") != name]


def with_marketplace_updated(current: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The list with marketplace ``name`` sent again by its source only (the host fetches it again)."""
    return [{"source": item["source"]} if item.get("name") == name else item for item in current]


def value_problem(key: str, value: Any) -> str | None:
    """Why a client's value for one of these keys cannot be taken (beyond its JSON type), or None."""
    if key == ENABLED_KEY:
        if not isinstance(value, dict):
            return None
        if len(value) > MAX_PLUGINS:
            return f"must list at most {MAX_PLUGINS} plugins"
        for plugin_id, flag in value.items():
            name, at, market = plugin_id.rpartition("@")
            if not at or not name or not market or not isinstance(flag, bool):
                return 'must map "name@marketplace" ids to true or false'
        return None
    if key == MARKETPLACES_KEY:
        if not isinstance(value, list):
            return None
        if len(value) > MAX_MARKETPLACES:
            return f"must list at most {MAX_MARKETPLACES} marketplaces"
        for item in value:
            if not isinstance(item, dict) or not isinstance(item.get("source"), str) or not item["source"].strip():
                return 'must list objects with a "source" (owner/repo, a git URL, or a folder)'
        return None
    return None
