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

The package owns a second property, ``useRememberedApprovals``: which *Always allow* choices the
session's calls may run on without asking. ``"all"`` (the ``[tools] remembered_approvals``
default unless configured otherwise): those remembered for the session's project and the host-wide
ones; ``"project"``: only the project's (``agent-host -p`` without ``--yes`` asks for this, see
``chat.oneshot``); ``"none"``: none, every call that no configured rule allows asks. It is
``sessionMutable``. ``remembered_use_of(state)`` reads it back (``"all"`` when absent or unknown:
sessions from before this property).

The third property is ``permissionMode`` (``sessionMutable``), the session's permission mode:

* ``"default"``: calls ask as the rules and the other properties say;
* ``"accept-edits"``: file edits (``edit_file``, ``write_file``) inside the session's folders run
  without asking; commands and everything else still ask;
* ``"plan"``: only read-only tools are offered and run; the model explores and proposes a plan
  (``propose_plan``), and the user's approval switches the mode (``host.runtime.tools.modes``);
* ``"full-auto"``: every call runs without asking (deny and ask rules still apply), for trusted
  scripts; commands run in the OS sandbox (``[tools] sandbox``).

Its default is ``[tools] permission_mode``. ``permission_mode_of(state)`` reads it back; a session
without it (created before this property) is in ``"plan"`` when VS Code's ``mode`` is ``"plan"``,
else ``"default"``. ``mode_for_vscode(mode)`` maps VS Code's ``mode`` setting to the permission mode
it means (``"plan"`` → ``"plan"``, ``"autopilot"`` → ``"full-auto"``, ``"interactive"`` →
``"default"``).
"""

from __future__ import annotations

from typing import Any, cast

from host.errors import AgentHostError
from tools.policy import PermissionMode

__all__ = [
    "PERMISSION_MODE", "PERMISSION_MODES", "permission_mode_property", "permission_mode_of", "mode_for_vscode",
    "REMEMBERED_USE", "REMEMBERED_USES", "remembered_use_property", "remembered_use_of",
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


REMEMBERED_USE = "useRememberedApprovals"
REMEMBERED_USES = ("all", "project", "none")
_REMEMBERED_PROPERTY = {
    "type": "string",
    "title": "Remembered approvals",
    "description": "Which 'Always allow' choices let tool calls run without asking: this project's and host-wide ones, "
                   "this project's only, or none.",
    "enum": list(REMEMBERED_USES),
    "enumLabels": ["This project's and host-wide", "This project's only", "None (ask)"],
    "default": "all",
    "sessionMutable": True,
}


def remembered_use_property(default: str) -> dict[str, Any]:
    """The ``useRememberedApprovals`` property schema with the host's default."""
    return {**_REMEMBERED_PROPERTY, "default": default}


def remembered_use_of(state: dict[str, Any]) -> str:
    value = ((state.get("config") or {}).get("values") or {}).get(REMEMBERED_USE)
    return value if value in REMEMBERED_USES else "all"


class AutoApproveValueError(AgentHostError, ValueError):
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


PERMISSION_MODE = "permissionMode"
PERMISSION_MODES = ("default", "accept-edits", "plan", "full-auto")
_MODE_PROPERTY = {
    "type": "string",
    "title": "Permission mode",
    "description": "default: ask before edits and commands; accept-edits: edits in the session's folders run without asking, "
                   "commands ask; plan: read-only tools only until you approve the agent's plan; full-auto: everything runs "
                   "without asking (commands in the OS sandbox), for trusted scripts.",
    "enum": list(PERMISSION_MODES),
    "enumLabels": ["Default (ask)", "Accept edits", "Plan (read-only)", "Full auto"],
    "default": "default",
    "sessionMutable": True,
}
_VSCODE_MODES = {"interactive": "default", "plan": "plan", "autopilot": "full-auto"}


def permission_mode_property(default: str) -> dict[str, Any]:
    """The ``permissionMode`` property schema with the host's default."""
    return {**_MODE_PROPERTY, "default": default}


def mode_for_vscode(mode: Any) -> str | None:
    """The permission mode VS Code's ``mode`` setting means, or None for a value it does not send."""
    return _VSCODE_MODES.get(mode) if isinstance(mode, str) else None


def permission_mode_of(state: dict[str, Any]) -> PermissionMode:
    values = (state.get("config") or {}).get("values") or {}
    value = values.get(PERMISSION_MODE)
    if value in PERMISSION_MODES:
        return cast(PermissionMode, value)
    return "plan" if values.get("mode") == "plan" else "default"
