"""What the turn runner needs from an agent backend, and what it gives one.

An ``Agent`` advertises itself as an AHP ``AgentInfo`` and runs turns. A turn belongs to a chat
(``chat``, the session's default chat unless said otherwise) of a session (``session``, internal
URI ``<provider>:/<id>``), both in the host's internal model (``ahp.state``, AHP 0.9.0). While
running a turn the agent only *emits chat actions* through its ``TurnContext`` (response parts,
deltas, reasoning, tool calls, usage); the runner owns the turn's start and end
(``chat/turnComplete`` when ``run_turn`` returns, ``chat/error`` when it raises ``TurnFailed``,
nothing when the turn was cancelled).

Invariants: once the turn is no longer the chat's active turn (cancelled, truncated, ended),
``emit`` raises ``TurnEnded`` instead of dispatching, so a late token can never land in a later
turn. ``dispatch`` is for session actions (title, server tools...) and ``dispatch_chat`` for chat
actions that are not part of the turn (activity, consuming a steering message); they only require
the session (the chat) to still exist. ``state`` is the session's state (metadata, config,
``activeClients``, customizations); ``chat_state`` is the chat's (turns, ``activeTurn``, pending
messages).

``message`` is the turn's ``Message`` (text, origin, attachments, model, agent). ``model`` and
``agent`` are the selections the turn runs with, fixed when it started: the message's own, else
what the runner fell back to (the chat's draft, the session's config); a different selection
applies from the next message.

``grants`` is what the turn's own message brought with it and ends with the turn: a slash command
whose frontmatter lists ``allowed-tools`` pre-approves those tools for this turn only (its ``!``
commands and the model's calls), and a plugin's command sets ``CLAUDE_PLUGIN_ROOT`` for the
commands the turn runs. A sub-agent's turn has its own, empty, grants.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ahp.state import default_chat_uri
from ahp.state.appends import run_key
from host.errors import AgentHostError

__all__ = ["Agent", "TurnContext", "TurnEnded", "TurnFailed", "TurnGrants", "TurnStopped", "SessionCreationFailed"]


BLOCKED_BY_HOOK = "blockedByHook"
"""The ``errorType`` of a turn whose prompt a ``UserPromptSubmit`` hook refused (left out of the
conversation later turns send: ``host.runtime.conversation``)."""


class TurnEnded(AgentHostError):
    """The turn is over (cancelled or replaced); stop producing output."""


class TurnStopped(AgentHostError):
    """End the turn now, as a completed turn: a hook answered ``continue: false``. ``reason`` (its
    ``stopReason``) is shown to the user, not to the model."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TurnFailed(AgentHostError):
    """End the turn with ``chat/error``; ``error`` is an AHP ``ErrorInfo`` a person can act on."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error = {"errorType": error_type, "message": message}


class SessionCreationFailed(AgentHostError):
    """The backend cannot serve this session; becomes ``session/creationFailed``."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error = {"errorType": error_type, "message": message}


@dataclass
class TurnGrants:
    """What the message that started a turn allows for that turn only (see the module docstring)."""

    allow: tuple[str, ...] = ()
    """``tools.policy`` allow rules (``shell(git add:*)``) the invoked command pre-approves."""
    granted_by: str | None = None
    """Who granted them, as the user typed it (``/commit``), for the reason shown on each call."""
    environment: dict[str, str] = field(default_factory=dict)
    """Variables the commands the turn runs get (``CLAUDE_PLUGIN_ROOT`` of the command's plugin)."""


@dataclass
class TurnContext:
    session: str
    turn_id: str
    message: dict[str, Any]
    """The turn's ``Message`` (``text``, ``origin``, ``attachments?``, ``model?``, ``agent?``)."""
    _dispatch: Callable[[str, dict[str, Any]], object]
    """``dispatch(channel, action)`` into the store."""
    _state: Callable[[], dict[str, Any] | None]
    """The session's current state."""
    chat: str = ""
    """The chat the turn runs in; the session's default chat when left empty."""
    _chat_state: Callable[[], dict[str, Any] | None] | None = None
    """The chat's current state (None: the chat has no state to read, e.g. a tool listing)."""
    model: dict[str, Any] | None = None
    """The ``ModelSelection`` the turn runs with."""
    agent: dict[str, Any] | None = None
    """The ``AgentSelection`` the turn runs with."""
    grants: TurnGrants = field(default_factory=TurnGrants)
    """What the turn's message pre-approved or set for this turn only."""
    _part_ids: int = field(default=0)
    _finished_turns: Callable[[], list[dict[str, Any]]] | None = None
    """Every completed turn of the chat, also those older than its state holds (``Store.turns``)."""
    _active_turn_id: Callable[[], Any] | None = None
    """The chat's active turn id, read without building the whole state (``Store.active_turn_id``);
    ``is_active`` runs on every token, so reading ``chat_state`` there would cost a copy of the turn's text."""
    stopped: bool = False
    """Set when the host stopped the turn without ending it (its session disposed, or lost to
    another process of a cluster): from then on it dispatches nothing (``is_active`` is False)."""
    _dispatch_streamed: Callable[[str, dict[str, Any], Any, str], object] | None = None
    """``dispatch(channel, action, run_key, turn_id)`` for a streamed append of the turn
    ``turn_id`` (``Store.dispatch_streamed``: the store's lean way for them), which dispatches
    nothing and returns None unless ``turn_id`` is the chat's active turn (the store asks that
    itself: a call a token fewer than ``_active_turn_id`` then the dispatch); None: ``emit``."""
    _commit_with_next_step: Callable[[], None] | None = None
    """``Store.commit_with_next_step``: what the callbacks this tick queued dispatch is committed,
    and its frames leave, with what this tick dispatched; None: nothing to join (no store)."""

    def __post_init__(self) -> None:
        if not self.chat:
            self.chat = default_chat_uri(self.session)

    @property
    def state(self) -> dict[str, Any]:
        """The session's current state (read-only: never mutate it)."""
        return self._state() or {}

    @property
    def chat_state(self) -> dict[str, Any]:
        """The chat's current state (read-only: never mutate it)."""
        return (self._chat_state() if self._chat_state is not None else None) or {}

    def finished_turns(self) -> list[dict[str, Any]]:
        """The chat's completed turns, oldest first: the whole conversation so far, also the
        turns the chat's state no longer holds (read back from the journal)."""
        if self._finished_turns is not None:
            return self._finished_turns()
        return list(self.chat_state.get("turns") or [])

    def is_active(self) -> bool:
        if self.stopped:
            return False
        if self._active_turn_id is not None:
            return self._active_turn_id() == self.turn_id
        turn = self.chat_state.get("activeTurn")
        return isinstance(turn, dict) and turn.get("id") == self.turn_id

    def emit(self, action: dict[str, Any]) -> None:
        """Dispatch a chat action for this turn (made by ``ahp.protocol.builders`` with this
        turn's id; an action without ``turnId`` gets it filled in)."""
        if not self.is_active():
            raise TurnEnded(self.turn_id)
        self._dispatch(self.chat, action if "turnId" in action else {**action, "turnId": self.turn_id})

    def appender(self, action_type: str, target_field: str, target: str) -> Callable[[str], None]:
        """``emit`` of streamed appends to one target, made once for the target and called per
        token: ``append(content)`` emits ``{"type": action_type, "turnId": <this turn>,
        target_field: target, "content": content}`` (as ``ahp.protocol.builders`` makes
        ``chat/delta``, ``chat/reasoning``, ``chat/toolCallDelta`` without ``_meta``), raising
        ``TurnEnded`` as ``emit`` does once the turn is over."""
        turn_id, chat, streamed = self.turn_id, self.chat, self._dispatch_streamed
        if streamed is None:
            return lambda content: self.emit({"type": action_type, "turnId": turn_id, target_field: target, "content": content})
        # Every append of the target has one run key (``ahp.state.appends.run_key``): worked out here once.
        key = run_key({"type": action_type, "turnId": turn_id, target_field: target, "content": ""})

        def append(content: str) -> None:
            # The store dispatches nothing, and says None, unless the turn is the chat's active one.
            if self.stopped or streamed(chat, {"type": action_type, "turnId": turn_id, target_field: target,
                                               "content": content}, key, turn_id) is None:
                raise TurnEnded(turn_id)

        return append

    def dispatch(self, action: dict[str, Any]) -> bool:
        """Dispatch a session action; False if the session is gone (or the turn was stopped)."""
        if self.stopped or self._state() is None:
            return False
        self._dispatch(self.session, action)
        return True

    def dispatch_chat(self, action: dict[str, Any]) -> bool:
        """Dispatch a chat action that is not turn-scoped; False if the chat (or its session) is gone
        (or the turn was stopped)."""
        if self.stopped or self._state() is None or (self._chat_state is not None and self._chat_state() is None):
            return False
        self._dispatch(self.chat, action)
        return True

    def commit_with_next_step(self) -> None:
        """What the callbacks queued in this tick dispatch joins this tick's commit, and their
        frames leave together (``Store.commit_with_next_step``): for a step that ends in a task
        whose waiter goes on (a model call's stream read in a task of its own, whose last chunk and
        the turn's end must reach a client together, as they would in one task)."""
        if self._commit_with_next_step is not None:
            self._commit_with_next_step()

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
