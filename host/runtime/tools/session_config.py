"""The session config property this package owns: ``autoApprove``.

Contract: ``with_auto_approve(config, requested, default)`` returns a ``SessionConfigState``
(``{schema, values}``) that keeps whatever other properties ``config`` already had and adds the
boolean ``autoApprove`` (``sessionMutable: true``, so clients flip it with
``session/configChanged``). Its value comes from ``createSession``'s ``params.config`` when given,
else the ``[tools] auto_approve`` default. ``auto_approve_of(state)`` reads it back: on when the
value is a JSON ``true``, or when the session's ``mode`` is VS Code's ``"autopilot"`` (which runs
tools without asking); anything else means off.

``auto_approve_value(value)`` is what a client's ``autoApprove`` means to this host: a boolean as
is, or one of VS Code's approval levels (it sends them from its own settings, whatever our schema
says): ``"default"`` (ask as usual) and ``"assisted"`` (the Copilot agent's own classifier, which
this host does not have: ask as usual) are off, ``"autoApprove"`` and the older ``"autopilot"``
are on. Anything else raises ``AutoApproveValueError``. ``createSession`` keeps the boolean; a
later ``session/configChanged`` keeps the level as VS Code sent it, which ``auto_approve_of``
reads the same way.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AUTO_APPROVE", "with_auto_approve", "auto_approve_of", "auto_approve_property", "auto_approve_value", "AutoApproveValueError",
]

AUTO_APPROVE = "autoApprove"
APPROVAL_LEVELS = {"default": False, "assisted": False, "autoApprove": True, "autopilot": True}
"""VS Code's ``autoApprove`` levels and what each means here."""

_PROPERTY = {
    "type": "boolean",
    "title": "Auto-approve tools",
    "description": "Run tool calls without asking, unless a rule asks or denies. Deny rules always apply.",
    "default": False,
    "sessionMutable": True,
}


class AutoApproveValueError(ValueError):
    """``params.config.autoApprove`` was neither a boolean nor one of VS Code's levels."""


def auto_approve_value(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in APPROVAL_LEVELS:
        return APPROVAL_LEVELS[value]
    levels = ", ".join(repr(level) for level in APPROVAL_LEVELS)
    raise AutoApproveValueError(f"config.{AUTO_APPROVE} must be true or false (or one of VS Code's levels {levels}), not {value!r}.")


def auto_approve_property(default: bool) -> dict[str, Any]:
    """The ``autoApprove`` property schema with the host's default."""
    return {**_PROPERTY, "default": default}


def with_auto_approve(config: dict[str, Any] | None, requested: dict[str, Any] | None, default: bool) -> dict[str, Any]:
    config = config or {}
    schema = dict(config.get("schema") or {"type": "object", "properties": {}})
    schema["properties"] = {**(schema.get("properties") or {}), AUTO_APPROVE: auto_approve_property(default)}
    value = auto_approve_value((requested or {}).get(AUTO_APPROVE, default))
    values = {**(config.get("values") or {}), AUTO_APPROVE: value}
    return {"schema": schema, "values": values}


def auto_approve_of(state: dict[str, Any]) -> bool:
    values = (state.get("config") or {}).get("values") or {}
    value = values.get(AUTO_APPROVE)
    return value is True or (isinstance(value, str) and APPROVAL_LEVELS.get(value) is True) or values.get("mode") == "autopilot"
