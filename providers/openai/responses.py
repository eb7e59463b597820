"""OpenAI Responses API provider (official ``openai`` SDK 2.x, ``AsyncOpenAI``, streamed).

The SDK builds, authenticates and sends the request and maps HTTP error statuses; the event
stream is read from its raw response with the lean reader (``providers._sse``, orjson) as plain
dicts, as the SDK's typed models would cost many times more a chunk (``benchmarks/provider_parsing.py``;
the typed way remains the fallback, ``providers._events``). An ``{"error": ...}`` payload inside
the stream is raised as the SDK would raise it (``openai.APIError``).

Each output item becomes one neutral part, keyed by the item id: a ``reasoning`` item → a
reasoning part (its summary parts joined by a blank line), a ``message`` → a text part, a
``function_call`` → a tool-call part fed by ``function_call_arguments.delta``. At
``output_item.done`` the finished item is attached as ``native``; :func:`build_params` sends it
back as-is, so reasoning items survive tool loops. Usage: ``input_tokens`` here excludes cached
tokens (reported as ``cache_read_tokens``), matching the neutral model. A delta of the item started
last (its text, reasoning summary or reasoning text, or function call arguments) is given as its
content, a bare delta (``providers.stream``; ``_Translator.feed_bare``), folded into the
accumulator already.
"""

from __future__ import annotations

from typing import Any

from .._history import SentHistory
from .._streaming import sdk_events
from ..accumulator import StreamAccumulator
from ..events import Finish, FinishReason, PartKind, StreamEvent, Usage, UsageReport
from ..messages import (
    ApiName,
    AssistantMessage,
    ImageContent,
    Message,
    ModelRequest,
    ReasoningPart,
    TextContent,
    TextPart,
    ToolCallPart,
    ToolResultsMessage,
    UserContent,
    UserMessage,
)
from ..stream import ModelStream
from ._client import OpenAIClientOwner, open_raw_stream
from ._errors import error_from_payload, map_error

PROVIDER = "openai"
_PART_ITEMS: dict[str, PartKind] = {"reasoning": "reasoning", "message": "text", "function_call": "tool_call"}


class OpenAIResponsesProvider(OpenAIClientOwner):
    """Streams OpenAI models through ``client.responses.create(stream=True)``."""

    name = PROVIDER
    api: ApiName = "openai-responses"

    def build_params(self, request: ModelRequest) -> dict[str, Any]:
        return build_params(request)

    def stream(self, request: ModelRequest) -> ModelStream:
        translator = _Translator()
        # ``sdk_events`` itself is the stream's generator: one generator layer per event, not two.
        events = sdk_events(
            lambda params: open_raw_stream(self._sdk(), "/responses", params, request.stall_timeout),
            translator.feed_bare,
            lambda exc: map_error(exc, base_url=self._kwargs.get("base_url")),
            finished=lambda: translator.finished,
            dropped="The connection to OpenAI dropped before the response finished. Try again.",
            provider=PROVIDER,
            stall_timeout=request.stall_timeout,
            prepare=lambda: self.build_params(request),
            data_only=True,
        )
        return ModelStream(events, translator.acc, bare=True)  # feed_bare's deltas are bare deltas


_NO_ITEM = object()
"""No item started yet (an item's id may be None)."""

_DELTAS = frozenset({
    "response.output_text.delta",
    "response.refusal.delta",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
    "response.function_call_arguments.delta",
})


class _Translator:
    """Responses stream events (plain dicts, as sent) → neutral events, for one response."""

    def __init__(self) -> None:
        self.acc = StreamAccumulator(api="openai-responses", provider=PROVIDER)
        self.finished = False
        self._ignored: set[str | None] = set()
        self._saw_function_call = False
        self._last: object = _NO_ITEM
        """The id of the item whose part was started last."""
        self._pieces: list[str] | None = None
        """Its part's pieces while that part is open (``StreamAccumulator.bare_pieces``): its
        deltas may be given bare."""

    def feed(self, raw: dict[str, Any]) -> list[StreamEvent]:
        """The events of one stream event."""
        return self.acc.unbared(self.feed_bare(raw))

    def feed_bare(self, raw: dict[str, Any]) -> str | list[StreamEvent]:
        """``feed``, but a delta (``_DELTAS``) of the open item started last gives its content, a
        bare delta (``providers.stream``), already folded into the accumulator: no event made."""
        # Nearly every event of an answer: exactly what the general way below makes of it, with
        # fewer steps; anything else goes that way.
        if self._pieces is not None and raw.get("item_id") == self._last and raw.get("type") in _DELTAS:
            delta = raw.get("delta")
            if type(delta) is str and delta:
                self._pieces.append(delta)
                return delta
        events = self._feed(raw)
        # (An item of an ignored id is given no delta by the general way: never bare either.)
        self._pieces = self.acc.bare_pieces(self._last) if self._last not in self._ignored else None
        return events

    def _feed(self, raw: dict[str, Any]) -> list[StreamEvent]:
        kind = raw.get("type")
        if kind in _DELTAS:  # nearly every event: checked first
            item_id, delta = raw.get("item_id"), raw.get("delta")
            if item_id in self._ignored or not delta:
                return []
            return [self.acc.delta(item_id, delta)]
        if kind == "response.output_item.added":
            return self._item_added(raw["item"])
        if kind == "response.output_item.done":
            return self._item_done(raw["item"])
        if kind == "response.reasoning_summary_part.added" and (raw.get("summary_index") or 0) > 0:
            return [self.acc.delta(raw.get("item_id"), "\n\n")]  # keep summary sections apart
        if kind in {"response.completed", "response.incomplete"}:
            return self._completed(raw["response"])
        if kind == "response.failed":
            error = (raw.get("response") or {}).get("error")
            payload = error if isinstance(error, dict) else {"message": "the response failed"}
            raise error_from_payload(payload, provider=PROVIDER)
        if kind == "error":
            raise error_from_payload({"code": raw.get("code"), "message": raw.get("message")}, provider=PROVIDER)
        return []

    def _item_added(self, item: dict[str, Any]) -> list[StreamEvent]:
        part_kind = _PART_ITEMS.get(item.get("type") or "")
        if part_kind is None:
            self._ignored.add(item.get("id"))  # hosted tools (web search ...) are not neutral parts yet
            return []
        if part_kind == "tool_call":
            self._saw_function_call = True
            events: list[StreamEvent] = [
                self.acc.start(item.get("id"), "tool_call", tool_call_id=item.get("call_id"), tool_name=item.get("name"))
            ]
            self._last = item.get("id")
            if item.get("arguments"):
                events.append(self.acc.delta(item.get("id"), item["arguments"]))
            return events
        start = self.acc.start(item.get("id"), part_kind)
        self._last = item.get("id")
        return [start]

    def _item_done(self, item: dict[str, Any]) -> list[StreamEvent]:
        item_id = item.get("id")
        if item_id in self._ignored:
            return []
        native = without_none(item)
        if item.get("type") == "function_call" and not self.acc.part_text(item_id) and item.get("arguments"):
            self.acc.delta(item_id, item["arguments"])  # servers that only send the final arguments
        return [self.acc.end(item_id, native)]

    def _completed(self, response: dict[str, Any]) -> list[StreamEvent]:
        self.finished = True
        events: list[StreamEvent] = list(self.acc.end_all())
        if response.get("usage") is not None:
            events.append(UsageReport(usage=_usage(response["usage"])))
        status = response.get("status")
        incomplete = response.get("incomplete_details")
        raw_reason = incomplete.get("reason") if isinstance(incomplete, dict) else status
        reason: FinishReason
        if status == "incomplete":
            reason = "max_tokens" if raw_reason == "max_output_tokens" else "content_filter" if raw_reason == "content_filter" else "other"
        else:
            reason = "tool_calls" if self._saw_function_call else "stop"
        events.append(self.acc.finish_call(
            Finish(reason=reason, raw_reason=raw_reason, response_id=response.get("id"), model=response.get("model"))
        ))
        return events


def without_none(value: Any) -> Any:
    """``value`` with every ``None`` member of its objects dropped, at any depth (what the SDK's
    ``model_dump(exclude_none=True)`` gave): the item is sent back next turn exactly so."""
    if isinstance(value, dict):
        return {k: without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_none(v) for v in value]
    return value

def _usage(usage: dict[str, Any]) -> Usage:
    cached = (usage.get("input_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (usage.get("output_tokens_details") or {}).get("reasoning_tokens") or 0
    return Usage(
        input_tokens=(usage.get("input_tokens") or 0) - cached,
        output_tokens=usage.get("output_tokens") or 0,
        cache_read_tokens=cached,
        reasoning_tokens=reasoning,
    )


# ---- request building ------------------------------------------------------------------


def build_params(request: ModelRequest) -> dict[str, Any]:
    """The ``responses.create`` keyword arguments for ``request`` (without ``stream``)."""
    options = request.openai
    items: list[dict[str, Any]] = []
    if request.system:
        items.append({"role": "developer", "content": request.system})
    items += _sent(request.messages)
    params: dict[str, Any] = {"model": request.model, "input": items}
    if request.tools:
        params["tools"] = [
            {"type": "function", "name": t.name, "description": t.description, "parameters": t.input_schema, "strict": False}
            for t in request.tools
        ]
    reasoning = {"effort": options.reasoning_effort, "summary": options.reasoning_summary}
    if any(v is not None for v in reasoning.values()):
        params["reasoning"] = {k: v for k, v in reasoning.items() if v is not None}
    if request.max_tokens is not None:
        params["max_output_tokens"] = request.max_tokens
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if options.store is not None:
        params["store"] = options.store
        if not options.store:
            params["include"] = ["reasoning.encrypted_content"]  # reasoning must travel with us
    return params


def _items(message: Message) -> list[dict[str, Any]]:
    """One neutral message's ``input`` items."""
    match message:
        case UserMessage():
            return [{"role": "user", "content": _user_content(message.content)}]
        case AssistantMessage():
            return _assistant_items(message)
        case ToolResultsMessage():
            return [{"type": "function_call_output", "call_id": result.tool_call_id, "output": _user_content(result.content)}
                    for result in message.results]
    return []


_sent = SentHistory(_items)
"""The ``input`` items of a conversation, worked out for the messages added since it was last sent
only (``providers._history``): a turn's request costs what its new messages do."""


def _user_content(content: tuple[UserContent, ...]) -> str | list[dict[str, Any]]:
    if len(content) == 1 and isinstance(content[0], TextContent):
        return content[0].text
    return [_input_part(c) for c in content]


def _input_part(content: UserContent) -> dict[str, Any]:
    if isinstance(content, ImageContent):
        return {"type": "input_image", "image_url": content.data_url(), "detail": "auto"}
    return {"type": "input_text", "text": content.text}


def _assistant_items(message: AssistantMessage) -> list[dict[str, Any]]:
    native_ok = message.api == "openai-responses"
    items: list[dict[str, Any]] = []
    for part in message.parts:
        if native_ok and part.native is not None:
            items.append(dict(part.native))
            continue
        match part:
            case TextPart() if part.text:
                items.append({"role": "assistant", "content": part.text})
            case ToolCallPart():
                items.append(
                    {"type": "function_call", "call_id": part.tool_call_id, "name": part.tool_name, "arguments": part.arguments}
                )
            case ReasoningPart():
                pass  # another API's reasoning cannot be replayed as an OpenAI reasoning item
    return items
