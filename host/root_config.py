"""The host's root configuration (``RootState.config``): what clients may set with ``root/configChanged``.

The schema advertised here is the contract:

* Keys it declares are checked against their declared ``type`` and ``enum``; a ``readOnly`` key
  cannot be set. It declares ``telemetryLevel``, and honours it trivially: this host collects and
  sends no telemetry at any level; and ``rememberedApprovals``, the *Always allow* choices the host
  remembers, which clients list there and revoke by removing an entry (the host owns the value:
  ``host.runtime.tools.remembered``; ``declared_value_problem`` checks its shape).
* Keys it does not declare are accepted into ``values`` and kept (journaled, shown to every root
  subscriber, so each client's mirror agrees with the host) but **the host never acts on them**.
  VS Code 1.139.1 pushes about 60 settings of its own reference host on every connect
  (``http.proxy``, ``permissions``, ``sandbox``, ``terminalAutoApproveRules``...); refusing them
  would fill its log with rejections for settings that simply mean nothing here, and acting on
  them would mean honouring settings this host does not implement. To keep a client from growing
  the shared state without bound, at most ``MAX_UNDECLARED_KEYS`` undeclared keys are kept, each
  value at most ``MAX_VALUE_CHARS`` characters of JSON.
* ``root_config_state(previous)`` is the ``config`` the root starts with: this schema, and the
  values a previous run kept.
"""

from __future__ import annotations

from typing import Any

from host.runtime.tools.remembered import ROOT_KEY as REMEMBERED_KEY
from host.runtime.tools.remembered import ROOT_PROPERTY as REMEMBERED_PROPERTY
from host.runtime.tools.remembered import value_problem as remembered_value_problem

__all__ = ["MAX_UNDECLARED_KEYS", "MAX_VALUE_CHARS", "ROOT_CONFIG_SCHEMA", "declared_value_problem", "root_config_state"]

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
    },
}

MAX_UNDECLARED_KEYS = 256
"""Undeclared keys kept in the root config values at most."""
MAX_VALUE_CHARS = 256 * 1024
"""Characters of JSON one undeclared value may take at most."""


def declared_value_problem(key: str, value: Any) -> str | None:
    """What is wrong with a client's value for a declared key beyond its JSON type, or None."""
    if key == REMEMBERED_KEY:
        return remembered_value_problem(value)
    return None


def root_config_state(previous: Any = None) -> dict[str, Any]:
    """``RootConfigState``: the advertised schema with the values kept so far."""
    values = previous.get("values") if isinstance(previous, dict) else None
    return {"schema": ROOT_CONFIG_SCHEMA, "values": dict(values) if isinstance(values, dict) else {}}
