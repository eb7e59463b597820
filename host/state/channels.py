"""The host's channel states: one holder per channel, reduced by the pure reducers of the model.

The reducers are ``ahp.state`` (AHP 0.9.0 shapes; pure functions of ``(state, action, now)``);
this module only binds them as the host runs them (``reduce``: a session's status follows its chats)
and holds each channel's current state (:class:`Channel`). Nothing here does I/O, numbers actions
or sends anything: the store (``host.state.store``) composes this with the log and the fan-out.

* States are never mutated in place (reducers return new objects), so a snapshot of a channel is
  just a reference to its current state.
* **Streamed text costs O(1) per token**: consecutive joinable appends to one target
  (``ahp.state.appends.TextRun``, the one definition of a run, which the journal holds too) are
  kept as a list of strings in the channel and reduced, as one joined append, when the state is
  next read (``state``, a snapshot, an observer that wants the states, any other action on the
  channel). Whoever reads gets exactly the dicts and plain strings the reducers would have produced
  action by action; ``shape`` answers per-token questions (the active turn) without that.

  Why here and not in the values: a rope or ``str`` subclass in the state would have to be
  understood by every reader (orjson, the journal, tools, clients' tests comparing with plain
  JSON), while a run held by the one mutable object is invisible outside it, and the reducers stay
  the single definition of every state.
"""

from __future__ import annotations

from typing import Any

from ahp.state import reduce as _reduce_internal
from ahp.state import refresh_session_status
from ahp.state.appends import RUN_ACTION_TYPES, AppendingState

__all__ = ["Channel", "ROOT", "STREAMED", "reduce"]

ROOT = "ahp-root://"
"""The root channel: every host has it from the start and never removes it."""

STREAMED = RUN_ACTION_TYPES
"""Streamed-token actions (text appends and tool-call input): held as runs in the channel's state;
the store shows them to ``observers`` and ``token_observers``, never to ``change_observers``."""


def reduce(kind: str, state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    """The internal reducers as the host runs them: a session's status follows its chats
    (``ahp.state.refresh_session_status`` after every change of a session, e.g. the
    ``session/chatUpdated`` that ``host.state.chat_summaries`` dispatches when a chat's summary moves)."""
    after = _reduce_internal(kind, state, action, now)
    if kind == "session" and after is not state:
        return refresh_session_status(after)
    return after


class Channel(AppendingState):
    """One channel's state (runs of text appends held back, ``ahp.state.appends``) and who
    subscribes to it: its fan-out groups, which only ``host.state.fanout`` reads and changes (they
    sit here so that an action's channel is found with one lookup)."""

    __slots__ = ("subscribers", "translated")

    def __init__(self, kind: str, state: dict[str, Any]) -> None:
        super().__init__(kind, state, reduce)
        self.subscribers: set[Any] = set()
        """Subscribers that take the store's own shapes (the shared frame)."""
        self.translated: dict[Any, set[Any]] = {}
        """Subscribers of other shapes, grouped by their translator."""
