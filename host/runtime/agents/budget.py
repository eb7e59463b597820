"""One turn's context budget: the requests it returns fit the model's context window as far as
they can be made to.

``ContextBudget`` lives as long as one turn and owns what the turn sends: the finished turns as
the model sees them (``past``, refreshed after a compaction) and which of this turn's tool output
is left out. It does no I/O of its own: compacting is a callback (the turn's, which calls the
model and tells the user), and so is a notification.

* ``fit(offered)``: the request for the next model call. When its estimate (``TokenMeter``) passes
  the budget (``compact_at`` of the window, ``limit``), room is made in steps, each only if the
  previous one did not make enough: compact the older turns keeping the latest ``keep_recent``,
  then all of them, then leave out this turn's older tool output (all but the last two rounds;
  the user is told). Without a known window every request is sent as built.
* ``refit(offered)``: the provider said the request does not fit after all (``context_length``):
  compact everything once, keep only the latest round of this turn's tool output, forget the
  meter, and return the request to try again; ``None`` the second time (the caller gives up).
* ``record(request, input_tokens, output_tokens)``: what the call really used, for the next estimate.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from host.runtime.agents.context import TokenMeter, elide_old_tool_results
from providers import Message, ModelRequest
from tools.base import Tool

__all__ = ["ContextBudget", "ELIDED_NOTE"]

ELIDED_NOTE = ("Older tool output in this turn was left out of what the model is sent, "
               "to stay within its context window; the calls themselves are kept.")


class ContextBudget:
    """See the module docstring."""

    def __init__(
        self,
        *,
        messages: list[Message],
        compose: Callable[[Sequence[Message], dict[str, Tool]], ModelRequest],
        past: Callable[[], list[Message]],
        compact: Callable[[int], Awaitable[bool]],
        notify: Callable[[str], None],
        meter: TokenMeter,
        limit: int | None,
        keep_recent: int,
    ) -> None:
        self._messages = messages
        """The turn's own messages (the list the turn appends to)."""
        self._compose = compose
        """Builds the request from the messages to send and the tools offered."""
        self._past = past
        self._compact = compact
        """Compacts the finished turns before the last ``keep``; True if a new summary exists."""
        self._notify = notify
        self._meter = meter
        self._limit = limit
        self._keep_recent = keep_recent
        self._sent_past = past()
        self._elide_keep: int | None = None
        """Tool-result rounds of this turn sent whole (``None``: all of them)."""
        self._refitted = False

    def build(self, offered: dict[str, Tool]) -> ModelRequest:
        """The request as things stand, without making room."""
        sent = self._messages if self._elide_keep is None else elide_old_tool_results(self._messages, self._elide_keep)[0]
        return self._compose([*self._sent_past, *sent], offered)

    async def fit(self, offered: dict[str, Tool]) -> ModelRequest:
        request = self.build(offered)
        limit, meter = self._limit, self._meter
        if limit is None or meter.estimate(request) <= limit:
            return request
        # Older turns first (keeping the latest ones), then all of them, then this turn's oldest
        # tool output: each step only if the previous one did not make enough room.
        for keep in dict.fromkeys((self._keep_recent, 0)):
            if await self._compact(keep):
                self._sent_past = self._past()
                meter.forget()
                request = self.build(offered)
            if meter.estimate(request) <= limit:
                break
        if meter.estimate(request) > limit and self._elide_keep is None and elide_old_tool_results(self._messages, 2)[1]:
            self._elide_keep = 2
            request = self.build(offered)
            self._notify(ELIDED_NOTE)
        return request

    async def refit(self, offered: dict[str, Tool]) -> ModelRequest | None:
        if self._refitted:
            return None
        self._refitted = True
        if await self._compact(0):
            self._sent_past = self._past()
        self._elide_keep = 1
        self._meter.forget()
        return self.build(offered)

    def record(self, request: ModelRequest, input_tokens: int, output_tokens: int) -> None:
        self._meter.record(request, input_tokens, output_tokens)
