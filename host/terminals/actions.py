"""The actions the host dispatches on terminal channels and the root terminal list, built in one
place (plain AHP wire dicts: camelCase keys, absent values omitted, never ``None``)."""

from __future__ import annotations

from typing import Any, Iterable

__all__ = ["cleared", "data", "exited", "terminal_info", "terminals_changed"]


def data(text: str) -> dict[str, Any]:
    return {"type": "terminal/data", "data": text}


def cleared() -> dict[str, Any]:
    return {"type": "terminal/cleared"}


def exited(exit_code: int | None) -> dict[str, Any]:
    action: dict[str, Any] = {"type": "terminal/exited"}
    if exit_code is not None:
        action["exitCode"] = exit_code
    return action


def terminal_info(uri: str, state: dict[str, Any]) -> dict[str, Any]:
    """The root's ``TerminalInfo`` for one terminal channel."""
    info: dict[str, Any] = {"resource": uri, "title": state.get("title") or "Terminal", "claim": state.get("claim")}
    if state.get("exitCode") is not None:
        info["exitCode"] = state["exitCode"]
    return info


def terminals_changed(terminals: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    return {"type": "root/terminalsChanged", "terminals": [terminal_info(uri, state) for uri, state in terminals]}
