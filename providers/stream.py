"""One model call as a stream that answers for the message it built. No I/O of its own.

``provider.stream(request)`` returns a :class:`ModelStream`:

* ``async for event in stream`` yields the call's neutral events (:mod:`providers.events`), as the
  provider's translator made them; iterating costs nothing over iterating the translator's own
  generator (``__aiter__`` hands that generator out).
* ``stream.message()`` is the assistant message those events built so far (complete once the
  stream finished; a cancelled or failed call gives what had streamed), read from the one
  :class:`~providers.accumulator.StreamAccumulator` that made or checked the events. Nobody
  downstream folds the events again: the turn maps them to actions and asks the stream.
* ``stream.bare()`` is the same events for the one consumer that wants a streamed chunk at its
  lowest cost (the host's turn): a **bare delta**, a plain ``str``, may stand for a ``PartDelta``
  of the part started last, of that part's kind (``providers.events``; the ``PartDelta`` is
  ``StreamAccumulator.bare_delta``). A provider whose translator makes them (``bare=True``:
  Chat Completions and LiteLLM, Anthropic Messages, OpenAI Responses, each through its
  translator's ``feed_bare``: a chunk of text, of reasoning or of a tool call's arguments for the
  part started last) folds the content into its accumulator itself, so nothing is built per
  chunk but the string the SDK parsed; ``async for event in stream`` turns each back into its
  ``PartDelta`` (equal to the one a translator would have made) for everyone else, at the cost
  of one generator layer. A wrapper that passes a stream's ``bare()`` events on keeps them bare
  (:meth:`ModelStream.relayed`).
* ``stream.aclose()`` ends the call (``contextlib.aclosing(stream)``); the HTTP response is
  released by the generator's ``finally``.

:meth:`ModelStream.of` is the seam for a provider whose ``stream`` yields plain events (a wrapper,
a test's fake): its events are folded once on their way through, so the message is still there.
The host starts every call with :meth:`ModelStream.open` (``provider.stream`` through that seam).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from .accumulator import StreamAccumulator
from .events import StreamEvent
from .messages import AssistantMessage

__all__ = ["ModelStream"]


class ModelStream:
    """The events of one model call and the message they built (see the module docstring)."""

    __slots__ = ("_events", "_acc", "_bare")

    def __init__(self, events: AsyncIterator[StreamEvent | str], acc: StreamAccumulator, *, bare: bool = False) -> None:
        self._events = events
        """The events, each already folded into ``acc`` by whoever made them; bare deltas
        (``str``) among them when ``bare``."""
        self._acc = acc
        self._bare = bare

    @classmethod
    def of(cls, stream: AsyncIterator[StreamEvent], *, api: Any = None, provider: str | None = None) -> ModelStream:
        """``stream`` itself when it is a ``ModelStream``, else one that folds its plain events as they pass."""
        if isinstance(stream, ModelStream):
            return stream
        acc = StreamAccumulator(api=api, provider=provider)
        return cls(_folded(stream, acc), acc)

    @classmethod
    def open(cls, provider: Any, request: Any) -> ModelStream:
        """``provider.stream(request)`` as a ``ModelStream`` (through :meth:`of`): how the host starts a call."""
        return cls.of(provider.stream(request), api=provider.api, provider=provider.name)

    def relayed(self, events: AsyncIterator[StreamEvent | str]) -> ModelStream:
        """A stream of ``events`` (this stream's ``bare()`` events, passed on by a wrapper: a replay,
        a recording) answering with this one's message, and bare as this one is."""
        return ModelStream(events, self._acc, bare=self._bare)

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        if self._bare:
            return _unbared(self._events, self._acc)
        return self._events  # type: ignore[return-value]  # not bare: events only

    def bare(self) -> AsyncIterator[StreamEvent | str]:
        """The events, bare deltas among them (see the module docstring)."""
        return self._events

    async def __anext__(self) -> StreamEvent:
        event = await anext(self._events)
        if type(event) is str:
            return self._acc.bare_delta(event)
        return event  # type: ignore[return-value]  # not a str

    def message(self) -> AssistantMessage:
        return self._acc.message()

    async def aclose(self) -> None:
        close = getattr(self._events, "aclose", None)
        if close is not None:
            await close()


async def _unbared(events: AsyncIterator[StreamEvent | str], acc: StreamAccumulator) -> AsyncGenerator[StreamEvent, None]:
    """``events`` with each bare delta made the ``PartDelta`` it stands for."""
    try:
        async for event in events:
            yield acc.bare_delta(event) if type(event) is str else event  # type: ignore[misc]
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()


async def _folded(events: AsyncIterator[StreamEvent], acc: StreamAccumulator) -> AsyncGenerator[StreamEvent, None]:
    try:
        async for event in events:
            acc.apply(event)
            yield event
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()
