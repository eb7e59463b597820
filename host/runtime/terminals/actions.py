"""The actions the host dispatches on terminal channels and the root terminal list, in one place
(through the generated ``ahp.protocol.builders``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ahp.protocol import builders

__all__ = [
    "cleared", "command_detection_available", "command_executed", "command_finished", "cwd_changed", "data", "exited",
    "terminal_info", "terminals_changed",
]


def data(text: str) -> dict[str, Any]:
    return builders.terminal_data(data=text)


def command_executed(command_id: str, command_line: str, timestamp: int) -> dict[str, Any]:
    return builders.terminal_command_executed(command_id=command_id, command_line=command_line, timestamp=timestamp)


def command_finished(command_id: str, exit_code: int | None, duration_ms: int | None) -> dict[str, Any]:
    return builders.terminal_command_finished(command_id=command_id, exit_code=exit_code, duration_ms=duration_ms)


def command_detection_available() -> dict[str, Any]:
    return builders.terminal_command_detection_available()


def cwd_changed(cwd: str) -> dict[str, Any]:
    return builders.terminal_cwd_changed(cwd=cwd)


def cleared() -> dict[str, Any]:
    return builders.terminal_cleared()


def exited(exit_code: int | None) -> dict[str, Any]:
    return builders.terminal_exited(exit_code=exit_code)


def terminal_info(uri: str, state: dict[str, Any]) -> dict[str, Any]:
    """The root's ``TerminalInfo`` for one terminal channel (AHP 0.9.0: with its ``lifecycle``)."""
    lifecycle = state.get("lifecycle") if isinstance(state.get("lifecycle"), dict) else {"status": "running"}
    return {"resource": uri, "title": state.get("title") or "Terminal", "claim": state.get("claim"), "lifecycle": lifecycle}


def has_exited(state: dict[str, Any]) -> bool:
    """Whether a terminal state's process has exited (internal model: ``lifecycle.status``)."""
    lifecycle = state.get("lifecycle")
    return isinstance(lifecycle, dict) and lifecycle.get("status") == "exited"


def terminals_changed(terminals: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    return builders.root_terminals_changed(terminals=[terminal_info(uri, state) for uri, state in terminals])
