"""Today's store shapes (AHP 0.2.0) shown in the shapes of AHP 0.7.0 and 0.9.0: the root channel
and the session summaries of the session list. Pure functions, no I/O.

This is the interim half of the seam. The store still holds the 0.2.0 model, so the newer
dialects project from it; once the store holds the 0.9.0 model (``ahp/state``), the root is
already in the newer shape and these functions go: the 0.2.0 projection (``ahp/dialects/v0_2``)
takes their place on the other side, and session summaries come from the new model.

Contract:

* ``root_state(state, version)`` is a ``RootState`` of ``version``: agents and their models
  (``agent_info``), ``activeSessions``, ``config`` and ``terminals`` (``terminal_infos``).
* ``root_action(action, version)`` is a root action in the shapes of ``version``: the very
  object when nothing differs, a new one when something does, ``None`` for a type this module
  does not know. Applying it to ``root_state(state)`` gives ``root_state`` of the reduced state
  (tests/host/dialects/test_projection.py checks that for every root action).
* ``session_summary`` / ``summary_changes`` turn a 0.2.0 ``SessionSummary`` (or the changes of
  ``root/sessionSummaryChanged``) into the 0.7.0/0.9.0 one: ISO-8601 ``createdAt``/``modifiedAt``,
  ``workingDirectories`` instead of ``workingDirectory``, no ``model``/``agent``/``changesets``
  (those moved to messages and chats in 0.5.0).
* Where a newer version added a required field this host has no value for, the choice is
  stated where it is made: an agent's MCP server declarations are ``stopped`` (nothing runs at
  root level), and 0.9.0 lists only client-held terminals (a terminal a session holds needs its
  chat URI in 0.9.0; sessions are not served to 0.9.0 clients yet).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from ahp.dialects.negotiation import parse_version

__all__ = [
    "SHAPE_CHANGES",
    "agent_info",
    "iso_time",
    "root_action",
    "root_state",
    "session_summary",
    "summary_changes",
    "terminal_infos",
]

SHAPE_CHANGES: dict[str, str] = {
    "terminalLifecycle": "0.9.0",
}
"""Shape changes of the root channel after 0.7.0, by the version that made them: 0.9.0's
``TerminalInfo`` has a ``lifecycle`` (``running``/``exited``) instead of ``exitCode``, and a
session's claim names its chat."""


def _has(change: str, version: str) -> bool:
    wanted, negotiated = parse_version(SHAPE_CHANGES[change]), parse_version(version)
    return negotiated is not None and wanted is not None and negotiated >= wanted


# -- root -----------------------------------------------------------------------------------------


def root_state(state: dict[str, Any], version: str) -> dict[str, Any]:
    shown: dict[str, Any] = {"agents": [agent_info(agent) for agent in state.get("agents") or ()]}
    for key in ("activeSessions", "config"):
        if key in state:
            shown[key] = state[key]
    if "terminals" in state:
        shown["terminals"] = terminal_infos(state["terminals"], version)
    return shown


def root_action(action: dict[str, Any], version: str) -> dict[str, Any] | None:
    kind = action.get("type")
    if kind == "root/agentsChanged":
        return {**action, "agents": [agent_info(agent) for agent in action.get("agents") or ()]}
    if kind == "root/terminalsChanged":
        return {**action, "terminals": terminal_infos(action.get("terminals") or (), version)}
    if kind in ("root/activeSessionsChanged", "root/configChanged"):
        return action  # the same shape in every version
    return None


def agent_info(agent: dict[str, Any]) -> dict[str, Any]:
    """``AgentInfo``: provider, names, models (our model fields are a subset of the newer
    ``SessionModelInfo``), protected resources and customizations."""
    shown = dict(agent)
    if isinstance(agent.get("customizations"), list):
        shown["customizations"] = [_container(item) for item in agent["customizations"]]
    return shown


def _container(container: Any) -> Any:
    """A plugin or directory container; since 0.3.0 an MCP server customization carries its
    ``enabled`` flag and a ``state``. At root level no server runs, so the declaration is
    ``stopped``, enabled as its container is."""
    if not isinstance(container, dict) or not isinstance(container.get("children"), list):
        return container
    enabled = container.get("enabled", True) is not False
    children = []
    for child in container["children"]:
        if isinstance(child, dict) and child.get("type") == "mcpServer":
            child = {"enabled": enabled, "state": {"kind": "stopped"}, **child}
        children.append(child)
    return {**container, "children": children}


def terminal_infos(terminals: Any, version: str) -> list[dict[str, Any]]:
    lifecycle = _has("terminalLifecycle", version)
    shown = []
    for info in terminals or ():
        if not isinstance(info, dict):
            continue
        if not lifecycle:
            shown.append(info)
            continue
        claim = info.get("claim")
        if isinstance(claim, dict) and claim.get("kind") == "session":
            continue  # 0.9.0 needs the claiming chat's URI: comes with the session/chat model
        item = {key: value for key, value in info.items() if key != "exitCode"}
        if info.get("exitCode") is not None:
            item["lifecycle"] = {"status": "exited", "exitCode": info["exitCode"]}
        else:
            item["lifecycle"] = {"status": "running"}
        shown.append(item)
    return shown


# -- the session list ----------------------------------------------------------------------------

_KEPT = ("resource", "provider", "title", "status", "activity", "project", "annotations", "changes", "_meta")
_DROPPED = frozenset({"model", "agent", "changesets", "workingDirectory", "createdAt", "modifiedAt"})


def iso_time(epoch_ms: Any) -> str:
    """Milliseconds since the epoch as ISO 8601 in UTC, ``2026-11-26T20:45:00.123Z``."""
    moment = datetime.fromtimestamp(float(epoch_ms or 0) / 1000, tz=timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def session_summary(summary: dict[str, Any]) -> dict[str, Any]:
    shown = {key: summary[key] for key in _KEPT if key in summary}
    shown["createdAt"] = iso_time(summary.get("createdAt"))
    shown["modifiedAt"] = iso_time(summary.get("modifiedAt"))
    if summary.get("workingDirectory"):
        shown["workingDirectories"] = [summary["workingDirectory"]]
    return shown


def summary_changes(changes: dict[str, Any]) -> dict[str, Any]:
    shown = {key: value for key, value in changes.items() if key not in _DROPPED}
    for key in ("createdAt", "modifiedAt"):
        if key in changes:
            shown[key] = iso_time(changes[key])
    if changes.get("workingDirectory"):
        shown["workingDirectories"] = [changes["workingDirectory"]]
    return shown
