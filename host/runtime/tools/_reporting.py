"""Throttled ``chat/toolCallContentChanged`` for running host tools.

Contract: a tool reports its *whole* partial content as often as it likes; the chat sees the
first report at once and then at most one ``toolCallContentChanged`` per ``interval`` seconds,
always carrying the latest content (nothing is appended, so dropping intermediate reports loses
nothing). ``stop`` (the call is completing) discards a pending report so no update lands after
the result; ``pause``/``resume`` hold reports while the call is back at pending-confirmation.
A report for a turn that has ended is dropped silently.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from ahp.protocol import builders
from host.runtime.agents.base import TurnContext, TurnEnded

__all__ = ["ContentReporters"]


@dataclass
class _Reporter:
    ctx: TurnContext
    tool_call_id: str
    last_sent: float = float("-inf")
    pending: list[dict] | None = None
    timer: asyncio.TimerHandle | None = None
    paused: bool = False
    sent: list[dict] | None = field(default=None)


class ContentReporters:
    def __init__(self, interval: float = 0.1, clock: Any = time.monotonic) -> None:
        self.interval = interval
        self._clock = clock
        self._reporters: dict[tuple[str, str], _Reporter] = {}

    def callback(self, ctx: TurnContext, tool_call_id: str):
        """The ``ToolContext.report_content`` for one call."""

        def report(content: list[dict]) -> None:
            reporter = self._reporters.setdefault((ctx.chat, tool_call_id), _Reporter(ctx, tool_call_id))
            reporter.ctx = ctx
            reporter.pending = list(content)
            if reporter.paused or reporter.timer is not None:
                return
            wait = reporter.last_sent + self.interval - self._clock()
            if wait <= 0:
                self._send(reporter)
            else:
                reporter.timer = asyncio.get_running_loop().call_later(wait, self._send, reporter)

        return report

    def _send(self, reporter: _Reporter) -> None:
        reporter.timer = None
        content, reporter.pending = reporter.pending, None
        if content is None or reporter.paused or content == reporter.sent:
            return
        reporter.last_sent = self._clock()
        reporter.sent = content
        try:
            reporter.ctx.emit(builders.chat_tool_call_content_changed(
                turn_id=reporter.ctx.turn_id, tool_call_id=reporter.tool_call_id, content=content))
        except TurnEnded:
            self.stop(reporter.ctx.chat, reporter.tool_call_id)

    def pause(self, chat: str, tool_call_id: str) -> None:
        reporter = self._reporters.get((chat, tool_call_id))
        if reporter is not None:
            reporter.paused = True
            if reporter.timer is not None:
                reporter.timer.cancel()
                reporter.timer = None

    def resume(self, chat: str, tool_call_id: str) -> None:
        reporter = self._reporters.get((chat, tool_call_id))
        if reporter is not None:
            reporter.paused = False
            reporter.sent = None  # re-confirmation dropped the content: send the latest again
            if reporter.pending is not None:
                self._send(reporter)

    def stop(self, chat: str, tool_call_id: str) -> None:
        reporter = self._reporters.pop((chat, tool_call_id), None)
        if reporter is not None and reporter.timer is not None:
            reporter.timer.cancel()
