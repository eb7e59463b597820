"""The session config property this package owns: ``autoApprove``.

Contract: ``with_auto_approve(config, requested, default)`` returns a ``SessionConfigState``
(``{schema, values}``) that keeps whatever other properties ``config`` already had and adds the
boolean ``autoApprove`` (``sessionMutable: true``, so clients flip it with
``session/configChanged``). Its value comes from ``createSession``'s ``params.config`` when given,
else the ``[tools] auto_approve`` default. ``auto_approve_of(state)`` reads it back; anything but
a JSON ``true`` means off.
"""

from __future__ import annotations

from typing import Any

__all__ = ["AUTO_APPROVE", "with_auto_approve", "auto_approve_of", "auto_approve_property", "AutoApproveValueError"]

AUTO_APPROVE = "autoApprove"

_PROPERTY = {
    "type": "boolean",
    "title": "Auto-approve tools",
    "description": "Run tool calls without asking, unless a rule asks or denies. Deny rules always apply.",
    "default": False,
    "sessionMutable": True,
}


class AutoApproveValueError(ValueError):
    """``params.config.autoApprove`` was not a boolean."""


def auto_approve_property(default: bool) -> dict[str, Any]:
    """The ``autoApprove`` property schema with the host's default."""
    return {**_PROPERTY, "default": default}


def with_auto_approve(config: dict[str, Any] | None, requested: dict[str, Any] | None, default: bool) -> dict[str, Any]:
    config = config or {}
    schema = dict(config.get("schema") or {"type": "object", "properties": {}})
    schema["properties"] = {**(schema.get("properties") or {}), AUTO_APPROVE: auto_approve_property(default)}
    value = (requested or {}).get(AUTO_APPROVE, default)
    if not isinstance(value, bool):
        raise AutoApproveValueError(f"config.{AUTO_APPROVE} must be true or false, not {value!r}.")
    values = {**(config.get("values") or {}), AUTO_APPROVE: value}
    return {"schema": schema, "values": values}


def auto_approve_of(state: dict[str, Any]) -> bool:
    values = (state.get("config") or {}).get("values") or {}
    return values.get(AUTO_APPROVE) is True
