"""A chat's finished turns as the model is sent them, kept on the agent from one turn to the next.

Every model call sends the whole conversation, so building it again from every finished turn before
every turn (the stored transcript or the turn rebuilt from its state, the refused prompts left out,
the whole folded by ``repair``) made a turn's cost grow with the session's length.
``KeptPast`` keeps what the last turn built and what it was built from; the next turn builds only
the turns finished since.

Contract: ``kept.conversation(turns, stored, summary)`` equals
``repair([*summary, *history(turns, stored)])`` for the finished ``turns`` after the latest
compaction (``summary``: the compaction's summary message, if any, and the value it is compared by),
with ``stored`` the transcripts ``TranscriptStore.load`` returned for them. What was kept is reused
only for a prefix of ``turns`` whose turn states and stored transcripts are the very objects it was
built from (a completed turn is never changed in place, and the transcript store hands out the lists
it holds), under the same compaction; anything else (a compaction, a transcript saved or read again,
turns read back from the journal afresh) builds the conversation again from the start. The returned
list is shared: callers must not change it.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

from host.runtime.conversation import history, repair, repair_after
from providers import Message

__all__ = ["KEPT_CHATS", "KeptPast", "kept_for"]

_TURN_ID = operator.methodcaller("get", "id")


class KeptPast:
    """One chat's conversation of finished turns, as the last turn built it (see the module docstring)."""

    __slots__ = ("_turns", "_stored", "_summary", "_summary_key", "_messages")

    def __init__(self) -> None:
        self._turns: list[Mapping[str, Any]] = []
        """The finished turn states the conversation covers, oldest first."""
        self._stored: list[Sequence[Message] | None] = []
        """The stored transcript each of them was built from (None: rebuilt from the state)."""
        self._summary: list[Message] = []
        self._summary_key: object = None
        self._messages: list[Message] = []
        """``repair`` of the summary and those turns' messages."""

    def conversation(
        self,
        turns: Sequence[Mapping[str, Any]],
        stored: Mapping[str, Sequence[Message]],
        summary: tuple[object, list[Message]],
    ) -> list[Message]:
        key, summary_messages = summary
        transcripts = list(map(stored.get, map(str, map(_TURN_ID, turns))))  # (of every finished turn: in C)
        count = len(self._turns)
        if (
            count
            and key == self._summary_key
            and len(turns) >= count
            and all(map(operator.is_, turns[:count], self._turns))
            and all(map(operator.is_, transcripts[:count], self._stored))
        ):
            added = history(turns[count:], stored)
            messages = repair_after(self._messages, [*self._messages, *added]) if added else self._messages
        else:
            self._summary, self._summary_key = summary_messages, key
            messages = repair([*summary_messages, *history(turns, stored)])
        self._turns, self._stored, self._messages = list(turns), transcripts, messages
        return messages


KEPT_CHATS = 64
"""Chats whose conversation an agent keeps; the chat whose turn ran longest ago is let go first
(its next turn builds the conversation from the transcript store again)."""


def kept_for(pasts: dict[str, KeptPast], chat: str) -> KeptPast:
    """The chat's ``KeptPast`` in the agent's ``pasts`` (made if new, marked as the latest used)."""
    kept = pasts.pop(chat, None) or KeptPast()
    pasts[chat] = kept
    while len(pasts) > KEPT_CHATS:
        del pasts[next(iter(pasts))]
    return kept
