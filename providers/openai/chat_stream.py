"""Chat Completions chunks → neutral events (shared by the OpenAI-compatible and LiteLLM providers).

Chunks may be SDK objects or plain dicts (:func:`as_dict`). Only choice 0 is read. Reasoning
comes from ``delta.reasoning_content`` (DeepSeek, vLLM, LiteLLM) or ``delta.reasoning``
(OpenRouter, Ollama); text from ``delta.content``; tool calls are keyed by ``tool_calls[].index``
so parallel calls may interleave. Chat Completions has no part-end markers, so a text/reasoning
part ends when the other kind or a tool call begins, and every part ends at ``finish_reason``;
:meth:`ChatStreamTranslator.close` then yields ``Finish`` (after the trailing usage chunk).
:meth:`ChatStreamTranslator.feed_bare` gives a chunk that only adds to the open part started last
(text, reasoning, or one tool call's arguments) as what it adds, a bare delta (``providers.stream``),
folded into the accumulator already.
"""

from __future__ import annotations

from typing import Any

from ..accumulator import StreamAccumulator
from ..events import Finish, FinishReason, StreamEvent, Usage, UsageReport
from ..messages import ApiName

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "max_tokens",
    "content_filter": "content_filter",
}


def as_dict(chunk: Any) -> dict[str, Any]:
    """A chunk as a plain dict, whatever object the client library returned."""
    if isinstance(chunk, dict):
        return chunk
    dump = getattr(chunk, "model_dump", None)
    return dump() if dump is not None else dict(chunk)


class ChatStreamTranslator:
    """Feed chunks with :meth:`feed`; call :meth:`close` once the stream ended."""

    def __init__(self, *, api: ApiName, provider: str) -> None:
        self.acc = StreamAccumulator(api=api, provider=provider)
        self.finish_reason: str | None = None
        self._response_id: str | None = None
        self._model: str | None = None
        self._pending_tool_args: dict[int, list[str]] = {}
        self._last: Any = None
        """The key of the part started last: ``"text"``, ``"reasoning"`` or ``("tool", index)``."""
        self._pieces: list[str] | None = None
        """That part's pieces (``StreamAccumulator.bare_pieces``) while it is open and the response's
        id and model are known: the fast way of :meth:`feed_bare` may be taken."""

    def feed(self, chunk: Any) -> list[StreamEvent]:
        """The events of one chunk."""
        return self.acc.unbared(self.feed_bare(chunk))

    def feed_bare(self, chunk: Any) -> str | list[StreamEvent]:
        """``feed``, but a chunk that only adds to the open part started last (text, reasoning, or
        one tool call's arguments) gives what it adds, a bare delta (``providers.stream``),
        already folded into the accumulator: no event made."""
        data = chunk if type(chunk) is dict else as_dict(chunk)
        # Nearly every chunk: one choice whose delta adds to the open part and does nothing else
        # (no other kind of content, no finish or usage). Exactly what the general way below makes
        # of it, with fewer steps; anything else goes that way.
        pieces = self._pieces
        choices = data.get("choices")
        if pieces is not None and type(choices) is list and len(choices) == 1 and data.get("usage") is None:
            choice = choices[0]
            delta = choice.get("delta")
            if type(delta) is dict and not choice.get("finish_reason") and not choice.get("index"):
                last = self._last
                content: Any = None
                if last == "text":
                    if (size := len(delta)) == 1 or (size == 2 and "role" in delta):
                        content = delta.get("content")
                elif last == "reasoning":
                    if not delta.get("content") and not delta.get("tool_calls"):
                        content = delta.get("reasoning_content") or delta.get("reasoning")
                else:  # ("tool", index): one call's arguments
                    calls = delta.get("tool_calls")
                    if (type(calls) is list and len(calls) == 1 and type(call := calls[0]) is dict
                            and (call.get("index") or 0) == last[1] and type(function := call.get("function")) is dict
                            and not delta.get("content") and not delta.get("reasoning_content") and not delta.get("reasoning")):
                        content = function.get("arguments")
                if type(content) is str and content:
                    pieces.append(content)
                    return content
        return self._feed(data)

    def _feed(self, data: dict[str, Any]) -> list[StreamEvent]:
        if not self._response_id:
            self._response_id = data.get("id")
        if not self._model:
            self._model = data.get("model")
        events: list[StreamEvent] = []
        choices = data.get("choices")
        if choices:
            choice = choices[0] if type(choices) is list else None  # choice 0 comes first in practice
            if choice is None or (choice.get("index") or 0) != 0:
                choice = next((c for c in choices if (c.get("index") or 0) == 0), None)
            if choice is not None:
                delta = choice.get("delta") or {}
                reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                if isinstance(reasoning, str) and reasoning:
                    self._text_like(events, "reasoning", reasoning, close="text")
                content = delta.get("content")
                if isinstance(content, str) and content:
                    self._text_like(events, "text", content, close="reasoning")
                calls = delta.get("tool_calls")
                if calls:
                    for call in calls:
                        events += self._tool_call(call)
                finish_reason = choice.get("finish_reason")
                if finish_reason:
                    self.finish_reason = finish_reason
                    events += self.acc.end_all()  # parts are final now; usage may still follow
        usage = data.get("usage")
        if usage:
            events.append(UsageReport(usage=_usage(usage)))
        acc = self.acc
        # Other parts may be open (earlier parallel tool calls end only at the finish): a chunk for
        # the part started last does nothing to them on the general way either.
        self._pieces = acc.bare_pieces(self._last) if self._response_id and self._model else None
        return events

    def close(self) -> list[StreamEvent]:
        """End every open part and emit ``Finish``; ``None`` finish reason means 'dropped'."""
        events: list[StreamEvent] = list(self.acc.end_all())
        raw = self.finish_reason or "stop"
        events.append(self.acc.finish_call(
            Finish(reason=_FINISH.get(raw, "other"), raw_reason=raw, response_id=self._response_id, model=self._model)
        ))
        return events

    def _text_like(self, events: list[StreamEvent], key: str, content: str, *, close: str) -> None:
        acc = self.acc
        if acc.is_open(close):
            events.append(acc.end(close))
        if not acc.is_open(key):
            events.append(acc.start(key, "reasoning" if key == "reasoning" else "text"))
            self._last = key
        events.append(acc.delta(key, content))

    def _tool_call(self, call: dict[str, Any]) -> list[StreamEvent]:
        index = call.get("index") or 0
        key = ("tool", index)
        function = call.get("function") or {}
        arguments = function.get("arguments") or ""
        events: list[StreamEvent] = []
        if not self.acc.is_open(key):
            name = function.get("name")
            if not name:  # a few servers send arguments before the name; hold them
                self._pending_tool_args.setdefault(index, []).append(arguments)
                return []
            for other in ("text", "reasoning"):
                if self.acc.is_open(other):
                    events.append(self.acc.end(other))
            call_id = call.get("id") or f"call_{self._response_id or 'chat'}_{index}"
            events.append(self.acc.start(key, "tool_call", tool_call_id=call_id, tool_name=name))
            self._last = key
            arguments = "".join(self._pending_tool_args.pop(index, [])) + arguments
        if arguments:
            events.append(self.acc.delta(key, arguments))
        return events


def _usage(usage: dict[str, Any]) -> Usage:
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    cached = prompt_details.get("cached_tokens") or 0
    return Usage(
        input_tokens=(usage.get("prompt_tokens") or 0) - cached,
        output_tokens=usage.get("completion_tokens") or 0,
        cache_read_tokens=cached,
        cache_write_tokens=usage.get("cache_creation_input_tokens") or 0,
        reasoning_tokens=completion_details.get("reasoning_tokens") or 0,
    )
