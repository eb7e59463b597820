"""Folds neutral stream events into parts and the final assistant message. No I/O.

Two ways in, one state:

* **Vendor side** (used by the vendor modules): :meth:`StreamAccumulator.start`, :meth:`delta`
  and :meth:`end` take the vendor's own key for a block (Anthropic content-block index, an
  OpenAI output-item id, a Chat Completions tool-call index ...), assign neutral part indexes
  in start order, and return the event to yield; :meth:`finish_call` folds the call's
  ``Finish``. The accumulator that made a call's events is the one its
  :class:`providers.stream.ModelStream` answers the message from: nothing folds them again.
  :meth:`bare_pieces` is the way of a bare delta (``providers.stream``): the translator
  appends the content to the pieces of the open part started last (text, reasoning or a tool
  call's arguments) itself and yields the ``str``, no event; :meth:`bare_delta` is the event it
  stands for, :meth:`unbared` a translator's output as events.
* **Any events**: :meth:`StreamAccumulator.apply` folds events from any provider (the scripted
  one checks its scripts with it; ``ModelStream.of`` folds a plain event stream with it).

Invariants: part indexes are 0, 1, 2 ... in start order; a part is started once, ended at most
once, and receives no delta after its end; tool arguments stay raw JSON text. Any event that
fits no part raises :class:`UnexpectedDeltaError` (the stream broke its protocol).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from ._fast_events import part_delta
from .errors import ProviderProtocolError
from .events import Finish, PartDelta, PartEnd, PartKind, PartStart, StreamEvent, Usage, UsageReport
from .messages import ApiName, AssistantMessage, AssistantPart, ReasoningPart, TextPart, ToolCallPart


class UnexpectedDeltaError(ProviderProtocolError):
    """An event referred to a part that was never started, or already ended."""

    def __init__(self, detail: str, *, provider: str | None = None) -> None:
        super().__init__(f"The model's response stream was malformed ({detail}). Try again.", provider=provider)
        self.detail = detail


@dataclass
class _OpenPart:
    kind: PartKind
    chunks: list[str] = field(default_factory=list)
    tool_call_id: str | None = None
    tool_name: str | None = None
    native: dict[str, Any] | None = None
    ended: bool = False


class StreamAccumulator:
    """Collects one model call's parts; build the message with :meth:`message`."""

    def __init__(self, *, api: ApiName | None = None, provider: str | None = None) -> None:
        self._api: ApiName | None = api
        self._provider = provider
        self._parts: list[_OpenPart] = []
        self._by_vendor_key: dict[Hashable, int] = {}
        self.usage: Usage | None = None
        """Latest cumulative usage, if the provider reported any."""
        self.finish: Finish | None = None
        """The finish event, once the stream completed."""

    # ---- vendor side -------------------------------------------------------------------

    def start(
        self,
        vendor_key: Hashable,
        part_kind: PartKind,
        *,
        tool_call_id: str | None = None,
        tool_name: str | None = None,
    ) -> PartStart:
        """Open a part for ``vendor_key``; a reused key after its part ended opens a new part."""
        if vendor_key in self._by_vendor_key and not self._parts[self._by_vendor_key[vendor_key]].ended:
            raise UnexpectedDeltaError(f"block {vendor_key!r} started twice", provider=self._provider)
        event = PartStart(index=len(self._parts), part_kind=part_kind, tool_call_id=tool_call_id, tool_name=tool_name)
        self.apply(event)
        self._by_vendor_key[vendor_key] = event.index
        return event

    def delta(self, vendor_key: Hashable, content: str) -> PartDelta:
        """Append to the open part of ``vendor_key``."""
        index = self._open_index(vendor_key)
        part = self._parts[index]
        # What ``apply`` would do, without checking again what ``_open_index`` and the event's
        # own kind (the part's) already guarantee: this runs for every streamed chunk, so the event
        # is not validated again either (``providers._fast_events``) unless ``content`` is not a str.
        if type(content) is not str:
            event = PartDelta(index=index, part_kind=part.kind, content=content)
        else:
            event = part_delta(index, part.kind, content)
        part.chunks.append(content)
        return event

    def bare_pieces(self, vendor_key: Hashable) -> list[str] | None:
        """For a bare delta (``providers.stream``): the list the streamed pieces of the open part of
        ``vendor_key`` go in, when that part is the one started last, whatever its kind (appending
        ``content`` to it is ``delta(vendor_key, content)`` without an event); None otherwise."""
        index = self._by_vendor_key.get(vendor_key)
        if index is None or index != len(self._parts) - 1:
            return None
        part = self._parts[index]
        if part.ended:
            return None
        return part.chunks

    def last_part(self) -> int:
        """The index of the part started last (-1: none): the part a bare delta is for."""
        return len(self._parts) - 1

    def bare_delta(self, content: str) -> PartDelta:
        """The ``PartDelta`` a bare delta of ``content`` stands for: the one place that says it (see
        ``providers.events``): a delta of the part started last, of that part's kind."""
        index = len(self._parts) - 1
        return part_delta(index, self._parts[index].kind, content)

    def unbared(self, out: str | list[StreamEvent]) -> list[StreamEvent]:
        """What a translator's ``feed_bare`` gave (a bare delta, or events) as events: a
        translator's ``feed`` for every consumer but the one that reads bare deltas."""
        if type(out) is str:
            return [self.bare_delta(out)]
        return out  # type: ignore[return-value]  # a list when not a str

    def end(self, vendor_key: Hashable, native: dict[str, Any] | None = None) -> PartEnd:
        """Close the open part of ``vendor_key``, attaching its provider-native payload."""
        index = self._open_index(vendor_key)
        event = PartEnd(index=index, part_kind=self._parts[index].kind, native=native)
        self.apply(event)
        return event

    def finish_call(self, finish: Finish) -> Finish:
        """Fold the call's ``Finish`` (every part must have ended) and return it."""
        self.apply(finish)
        return finish

    def is_open(self, vendor_key: Hashable) -> bool:
        index = self._by_vendor_key.get(vendor_key)
        return index is not None and not self._parts[index].ended

    def open_parts(self) -> int:
        """How many parts are open."""
        return sum(1 for part in self._parts if not part.ended)

    def part_text(self, vendor_key: Hashable) -> str:
        """Everything streamed so far into the part of ``vendor_key``."""
        index = self._by_vendor_key.get(vendor_key)
        if index is None:
            raise UnexpectedDeltaError(f"unknown block {vendor_key!r}", provider=self._provider)
        return "".join(self._parts[index].chunks)

    def end_all(self) -> list[PartEnd]:
        """Close every still-open part in index order (for APIs without explicit part ends)."""
        open_keys = sorted(
            (index, key) for key, index in self._by_vendor_key.items() if not self._parts[index].ended
        )
        return [self.end(key) for _, key in open_keys]

    def _open_index(self, vendor_key: Hashable) -> int:
        index = self._by_vendor_key.get(vendor_key)
        if index is None:
            raise UnexpectedDeltaError(f"delta for unknown block {vendor_key!r}", provider=self._provider)
        if self._parts[index].ended:
            raise UnexpectedDeltaError(f"delta for finished block {vendor_key!r}", provider=self._provider)
        return index

    # ---- any events --------------------------------------------------------------------

    def apply(self, event: StreamEvent) -> None:
        """Fold one event; raises :class:`UnexpectedDeltaError` on an out-of-order event."""
        match event:
            case PartStart():
                if event.index != len(self._parts):
                    raise UnexpectedDeltaError(f"part {event.index} started out of order", provider=self._provider)
                if event.part_kind == "tool_call" and not (event.tool_call_id and event.tool_name):
                    raise UnexpectedDeltaError("tool call without id or name", provider=self._provider)
                self._parts.append(
                    _OpenPart(kind=event.part_kind, tool_call_id=event.tool_call_id, tool_name=event.tool_name)
                )
            case PartDelta():
                part = self._checked_part(event.index, event.part_kind)
                part.chunks.append(event.content)
            case PartEnd():
                part = self._checked_part(event.index, event.part_kind)
                part.ended = True
                part.native = event.native
            case UsageReport():
                self.usage = event.usage
            case Finish():
                if any(not p.ended for p in self._parts):
                    raise UnexpectedDeltaError("finish before every part ended", provider=self._provider)
                self.finish = event

    def _checked_part(self, index: int, kind: PartKind) -> _OpenPart:
        if not 0 <= index < len(self._parts):
            raise UnexpectedDeltaError(f"event for unknown part {index}", provider=self._provider)
        part = self._parts[index]
        if part.ended:
            raise UnexpectedDeltaError(f"event for finished part {index}", provider=self._provider)
        if part.kind != kind:
            raise UnexpectedDeltaError(f"{kind} event for {part.kind} part {index}", provider=self._provider)
        return part

    def message(self) -> AssistantMessage:
        """The assistant message so far (complete once :attr:`finish` is set).

        Unfinished parts are included with what they have, so a cancelled turn keeps its
        partial text; their ``native`` is ``None`` and will not be replayed."""
        parts: list[AssistantPart] = []
        for part in self._parts:
            text = "".join(part.chunks)
            match part.kind:
                case "text":
                    parts.append(TextPart(text=text, native=part.native))
                case "reasoning":
                    parts.append(ReasoningPart(text=text, native=part.native))
                case "tool_call":
                    assert part.tool_call_id is not None and part.tool_name is not None
                    parts.append(
                        ToolCallPart(
                            tool_call_id=part.tool_call_id,
                            tool_name=part.tool_name,
                            arguments=text,
                            native=part.native,
                        )
                    )
        finish = self.finish
        return AssistantMessage(
            parts=tuple(parts),
            api=self._api,
            model=finish.model if finish else None,
            response_id=finish.response_id if finish else None,
        )
