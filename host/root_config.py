"""The host's root configuration (``RootState.config``): what clients may set with ``root/configChanged``.

The schema advertised here is the contract:

* Keys it declares are checked against their declared ``type`` and ``enum``; a ``readOnly`` key
  cannot be set. It declares ``telemetryLevel``, and honours it trivially: this host collects and
  sends no telemetry at any level; and ``rememberedApprovals``, the *Always allow* choices the host
  remembers, which clients list there and revoke by removing an entry (the host owns the value:
  ``host.runtime.tools.remembered``; ``declared_value_problem`` checks its shape).
* ``trustedFolders`` (``ahp.workspace_trust``) lists the folders the user trusts: the host adds one
  when a user answers its trust question with "Trust this folder", and a client revokes one by
  dispatching the list without it. Each entry must be an absolute path (``declared_value_problem``,
  ``trusted_folders_problem``); ``host.runtime.trust`` acts on every change.
* ``workspaceTrust`` (``ahp.workspace_trust.FORWARDED_PROPERTY``) is a client's own workspace
  trust, in the shape VS Code forwards to every agent host: ``{enabled, trustedUris}``. Declared
  ``readOnly`` as VS Code's own host declares it (users do not edit it; a settings UI only shows
  it), yet a client may set it: it is in ``CLIENT_FORWARDED``, the keys a client sets from its own
  state. Its URIs must be ``file:`` URIs (``forwarded_value_problem``). ``host.runtime.trust``
  follows it as ``[trust] client_trust`` says. It is the client's live state: ``root_config_state``
  does not carry it into a new run (the client sends it again when it connects).
* ``enabledPlugins``, ``pluginMarketplaces`` and the read-only ``claudePlugins``
  (``ahp.claude_plugins``) list the user's Claude Code plugins and marketplaces: a client switches
  a plugin, installs one or adds a marketplace by changing them; the host acts on each change
  (``host.runtime.customizations.claude_config``) and publishes the outcome.
* Keys it does not declare are accepted into ``values`` and kept (journaled, shown to every root
  subscriber, so each client's mirror agrees with the host) but **the host never acts on them**.
  VS Code 1.139.1 pushes about 60 settings of its own reference host on every connect
  (``http.proxy``, ``permissions``, ``sandbox``, ``terminalAutoApproveRules``...); refusing them
  would fill its log with rejections for settings that simply mean nothing here, and acting on
  them would mean honouring settings this host does not implement. To keep a client from growing
  the shared state without bound, at most ``MAX_UNDECLARED_KEYS`` undeclared keys are kept, each
  value at most ``MAX_VALUE_CHARS`` characters of JSON.
* ``root_config_state(previous)`` is the ``config`` the root starts with: this schema, and the
  values a previous run kept (but ``workspaceTrust``).
"""

from __future__ import annotations

import posixpath
from typing import Any

from ahp import claude_plugins
from ahp.workspace_trust import CONFIG_KEY as TRUSTED_FOLDERS
from ahp.workspace_trust import CONFIG_PROPERTY as TRUSTED_FOLDERS_PROPERTY
from ahp.workspace_trust import FORWARDED_KEY as WORKSPACE_TRUST
from ahp.workspace_trust import FORWARDED_PROPERTY as WORKSPACE_TRUST_PROPERTY
from ahp.workspace_trust import MAX_TRUSTED_FOLDERS, forwarded_value_problem
from host.runtime.tools.remembered import ROOT_KEY as REMEMBERED_KEY
from host.runtime.tools.remembered import ROOT_PROPERTY as REMEMBERED_PROPERTY
from host.runtime.tools.remembered import value_problem as remembered_value_problem

__all__ = ["CLIENT_FORWARDED", "MAX_TRUSTED_FOLDERS", "MAX_UNDECLARED_KEYS", "MAX_VALUE_CHARS", "ROOT_CONFIG_SCHEMA", "declared_value_problem",
           "root_config_state", "trusted_folders_problem"]

ROOT_CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "telemetryLevel": {
            "type": "string",
            "title": "Telemetry Level",
            "description": "The most restrictive telemetry level a connected client asks for. This host collects and "
            "sends no telemetry at any level.",
            "enum": ["all", "error", "crash", "off"],
            "default": "off",
        },
        REMEMBERED_KEY: REMEMBERED_PROPERTY,
        TRUSTED_FOLDERS: TRUSTED_FOLDERS_PROPERTY,
        WORKSPACE_TRUST: WORKSPACE_TRUST_PROPERTY,
        claude_plugins.ENABLED_KEY: claude_plugins.ENABLED_PROPERTY,
        claude_plugins.MARKETPLACES_KEY: claude_plugins.MARKETPLACES_PROPERTY,
        claude_plugins.PLUGINS_KEY: claude_plugins.PLUGINS_PROPERTY,
    },
}

CLIENT_FORWARDED = frozenset({WORKSPACE_TRUST})
"""Read-only keys a client still sets: it forwards its own state in them (users do not edit them)."""
MAX_UNDECLARED_KEYS = 256
"""Undeclared keys kept in the root config values at most."""
MAX_VALUE_CHARS = 256 * 1024
"""Characters of JSON one undeclared value may take at most."""


def declared_value_problem(key: str, value: Any) -> str | None:
    """What is wrong with a client's value for a declared key beyond its JSON type, or None."""
    if key == REMEMBERED_KEY:
        return remembered_value_problem(value)
    if key == TRUSTED_FOLDERS:
        return trusted_folders_problem(value)
    if key == WORKSPACE_TRUST:
        return forwarded_value_problem(value)
    return claude_plugins.value_problem(key, value)


def root_config_state(previous: Any = None) -> dict[str, Any]:
    """``RootConfigState``: the advertised schema with the values kept so far, but a client's
    forwarded workspace trust (it holds while that client says so; it says so again when it connects)."""
    values = previous.get("values") if isinstance(previous, dict) else None
    kept = {key: value for key, value in values.items() if key != WORKSPACE_TRUST} if isinstance(values, dict) else {}
    return {"schema": ROOT_CONFIG_SCHEMA, "values": kept}


def trusted_folders_problem(value: Any) -> str | None:
    """Why a ``trustedFolders`` value cannot be kept (a list of absolute paths), else None."""
    if not isinstance(value, list):
        return None  # the declared type check says so
    if len(value) > MAX_TRUSTED_FOLDERS:
        return f"must list at most {MAX_TRUSTED_FOLDERS} folders"
    for item in value:
        if not isinstance(item, str) or not posixpath.isabs(item) or "\0" in item:
            return "must list absolute folder paths (such as /home/me/project)"
    return None
