"""A conversation's wire entries, worked out for the messages added since it was last sent only.

Every model call sends the session's whole conversation again, so a provider that converted every
message on every call would spend per turn what the session's history costs, not what its new
messages do. ``SentHistory(entries, join)`` is that conversion for one provider's wire format:

* ``entries(message)``: one neutral message's wire entries (a list of plain dicts: none, one or
  more), a pure function of the message; ``join(before, first)``: the one entry that replaces the
  entry before a message's first entry and that first entry (a new dict: neither is changed), or
  None to send them apart (Anthropic's two user messages in a row are sent as one).
* ``history(messages)`` is ``history.plain(messages)`` (``ahp.prefix_memo.joined``: every message
  converted, the plain way), with each message converted once (``ahp.identity_memo``: messages are
  frozen; a few long sessions' messages are kept, 16,384) and the entries of the conversation's
  unchanged prefix reused (``ahp.prefix_memo``: the prefix is found by identity in C; the 64
  conversations sent latest are held). A message edited, compacted or cut is another object: it
  and what follows it are converted again.

Contract: the list ``history(messages)`` returns and the entries in it are shared with later
calls: the caller serialises them, or copies the list (and an entry) before changing it, never
changes them in place. ``plain`` returns new ones every call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ahp.identity_memo import IdentityMemo
from ahp.prefix_memo import PrefixMemo, joined

from .messages import Message

__all__ = ["SentHistory"]

Entry = dict[str, Any]


class SentHistory:
    """See the module docstring."""

    __slots__ = ("_entries", "_join", "_run")

    def __init__(self, entries: Callable[[Message], list[Entry]],
                 join: Callable[[Entry, Entry], Entry | None] | None = None) -> None:
        self._entries = entries
        self._join = join
        self._run: PrefixMemo[Message, Entry] = PrefixMemo(IdentityMemo(entries, 16_384), 64, join)

    def __call__(self, messages: Sequence[Message]) -> list[Entry]:
        """The wire entries of ``messages`` (shared: never change them)."""
        return self._run(messages)

    def plain(self, messages: Iterable[Message]) -> list[Entry]:
        """The same entries, every message converted now (new ones)."""
        return joined(messages, self._entries, self._join)
