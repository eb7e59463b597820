"""What the turn runner needs from an agent backend, and what it gives one.

An ``Agent`` advertises itself as an AHP ``AgentInfo`` and runs turns. While running a turn it
only *emits host actions* through its ``TurnContext`` (response parts, deltas, reasoning, tool
calls, usage); the runner owns the turn's start and end (``turnComplete`` when ``run_turn``
returns, ``session/error`` when it raises ``TurnFailed``, nothing when the turn was cancelled).

Invariant: once the turn is no longer the session's active turn (cancelled, truncated, ended),
``emit`` raises ``TurnEnded`` instead of dispatching, so a late token can never land in a later
turn. ``dispatch`` is for session-wide actions that are not part of the turn (activity, title,
consuming a steering message); it only requires the session to still exist.

``model`` and ``agent`` are the session's selections *captured when the turn started*: a model or
agent change during a turn applies from the next turn (AHP ``session/modelChanged``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

__all__ = ["Agent", "TurnContext", "TurnEnded", "TurnFailed", "SessionCreationFailed"]


class TurnEnded(Exception):
    """The turn is over (cancelled or replaced); stop producing output."""


class TurnFailed(Exception):
    """End the turn with ``session/error``; ``error`` is an AHP ``ErrorInfo`` a person can act on."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error = {"errorType": error_type, "message": message}


class SessionCreationFailed(Exception):
    """The backend cannot serve this session; becomes ``session/creationFailed``."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error = {"errorType": error_type, "message": message}


@dataclass
class TurnContext:
    session: str
    turn_id: str
    user_message: dict[str, Any]
    _dispatch: Callable[[dict[str, Any]], None]
    _state: Callable[[], dict[str, Any] | None]
    model: dict[str, Any] | None = None
    """The session's ``ModelSelection`` when the turn started."""
    agent: dict[str, Any] | None = None
    """The session's ``AgentSelection`` when the turn started."""
    _part_ids: int = field(default=0)

    @property
    def state(self) -> dict[str, Any]:
        """The session's current state (read-only: never mutate it)."""
        return self._state() or {}

    def is_active(self) -> bool:
        turn = self.state.get("activeTurn")
        return isinstance(turn, dict) and turn.get("id") == self.turn_id

    def emit(self, action: dict[str, Any]) -> None:
        """Dispatch a host action for this turn (made by ``ahp.protocol.builders`` with this
        turn's id; an action without ``turnId`` gets it filled in)."""
        if not self.is_active():
            raise TurnEnded(self.turn_id)
        self._dispatch(action if "turnId" in action else {**action, "turnId": self.turn_id})

    def dispatch(self, action: dict[str, Any]) -> bool:
        """Dispatch a session action that is not turn-scoped; False if the session is gone."""
        if self._state() is None:
            return False
        self._dispatch(action)
        return True

    def new_part_id(self, prefix: str = "part") -> str:
        self._part_ids += 1
        return f"{self.turn_id}:{prefix}-{self._part_ids}"


class Agent(Protocol):
    provider: str

    def info(self) -> dict[str, Any]:
        """This agent as an AHP ``AgentInfo``."""

    async def prepare_session(self, session: str, state: dict[str, Any]) -> None:
        """Get ready to serve ``session``; raise ``SessionCreationFailed`` if it cannot."""

    async def run_turn(self, ctx: TurnContext) -> None:
        """Produce the turn's output through ``ctx.emit``; return when the answer is complete."""
