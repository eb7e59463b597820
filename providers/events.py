"""Neutral stream events: what every provider yields while a model answers.

Contract (the turn loop in ``host/`` codes against this):

* A provider stream is a sequence of :data:`StreamEvent` values for **one** model call.
* Parts are numbered by ``index``: 0, 1, 2 ... in the order they start, stable for the whole
  call. Every part sees exactly one :class:`PartStart`, zero or more :class:`PartDelta` and at
  most one :class:`PartEnd`, in that order. Parts may interleave (parallel tool calls), so always
  route deltas by ``index``.
* ``part_kind`` is ``text`` (markdown), ``reasoning`` (thinking / reasoning summary) or
  ``tool_call``. A tool-call delta is **raw JSON argument text**: concatenate, never parse
  fragments. The arguments are only complete at :class:`PartEnd`.
* :class:`PartEnd` may carry ``native``: the provider's own payload for that part (an Anthropic
  content block, an OpenAI Responses output item) that must be sent back unchanged next turn.
  It is opaque to the host; :class:`providers.accumulator.StreamAccumulator` stores it.
* :class:`UsageReport` carries cumulative totals for this call so far: the latest one wins, do not add.
* A successful stream ends with exactly one :class:`Finish`, after every part has ended. A failed
  stream raises :class:`providers.errors.ProviderError` instead (never a ``Finish``).

Events are frozen pydantic models with a ``Literal`` ``kind`` tag, so ``match`` on ``kind`` or
on the class, and the whole union round-trips through JSON (``StreamEventAdapter``).

One consumer may ask for less: ``ModelStream.bare()`` (``providers.stream``) may give a delta as
a **bare delta**, the ``str`` itself, standing for a ``PartDelta`` of the part started last (the
last :class:`PartStart` the stream gave), of that part's kind: text, reasoning text or raw JSON
argument text; that part is open. The host's turn reads streamed chunks that way (no object per
chunk); ``StreamAccumulator.bare_delta`` is the ``PartDelta`` one stands for, and iterating a
``ModelStream`` gives every one of them as that ``PartDelta``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

PartKind = Literal["text", "reasoning", "tool_call"]
"""What a part holds: markdown text, model reasoning, or a tool call's arguments."""

FinishReason = Literal["stop", "tool_calls", "max_tokens", "content_filter", "refusal", "pause", "other"]
"""Why the model stopped. ``tool_calls``: run the tools and call again. ``pause``: Anthropic
``pause_turn`` (call again with the assistant message to let it continue). ``other``: see
``Finish.raw_reason``."""


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PartStart(_Event):
    """A new part begins; the host creates its response part (or tool call) here."""

    kind: Literal["part_start"] = "part_start"
    index: int
    """Position of the part in this model call; later events refer to it."""
    part_kind: PartKind
    tool_call_id: str | None = None
    """Provider-issued call id (tool_call parts only); the id to answer with a tool result."""
    tool_name: str | None = None
    """Name of the tool being called (tool_call parts only)."""


class PartDelta(_Event):
    """More content for a started part: text, reasoning text, or raw JSON argument text."""

    kind: Literal["part_delta"] = "part_delta"
    index: int
    part_kind: PartKind
    content: str


class PartEnd(_Event):
    """The part is complete; for tool calls the arguments are final."""

    kind: Literal["part_end"] = "part_end"
    index: int
    part_kind: PartKind
    native: dict[str, Any] | None = None
    """Provider-native payload to replay verbatim next turn (opaque to the host)."""


class Usage(BaseModel):
    """Token counts for one model call. ``input_tokens`` excludes cache reads and writes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_tokens: int = 0
    output_tokens: int = 0
    """Includes reasoning tokens."""
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    """Part of ``output_tokens``, when the provider reports it."""


class UsageReport(_Event):
    """Cumulative usage of this call so far (replace, do not add)."""

    kind: Literal["usage"] = "usage"
    usage: Usage


class Finish(_Event):
    """The call ended normally; always the last event of a successful stream."""

    kind: Literal["finish"] = "finish"
    reason: FinishReason
    raw_reason: str | None = None
    """The provider's own stop reason, e.g. ``end_turn`` or ``max_output_tokens``."""
    response_id: str | None = None
    """Provider response/message id (for logs and support requests)."""
    model: str | None = None
    """The model that actually answered (often a dated snapshot of the requested id)."""


StreamEvent = Annotated[PartStart | PartDelta | PartEnd | UsageReport | Finish, Field(discriminator="kind")]
"""Any event a provider stream yields."""

StreamEventAdapter: TypeAdapter[StreamEvent] = TypeAdapter(StreamEvent)
"""Validates / serialises a :data:`StreamEvent` from / to JSON."""
