"""Chat Completions chunks → neutral events (shared by the OpenAI-compatible and LiteLLM providers).

Chunks may be SDK objects or plain dicts (:func:`as_dict`). Only choice 0 is read. Reasoning
comes from ``delta.reasoning_content`` (DeepSeek, vLLM, LiteLLM) or ``delta.reasoning``
(OpenRouter, Ollama); text from ``delta.content``; tool calls are keyed by ``tool_calls[].index``
so parallel calls may interleave. Chat Completions has no part-end markers, so a text/reasoning
part ends when the other kind or a tool call begins, and every part ends at ``finish_reason``;
:meth:`ChatStreamTranslator.close` then yields ``Finish`` (after the trailing usage chunk).
:meth:`ChatStreamTranslator.feed_bare` gives a chunk that only adds text to the open text part as
that text, a bare text delta (``providers.stream``), folded into the accumulator already.
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
        self._writing = False
        """The text part is open and nothing else is (the fast way of :meth:`feed` may be taken)."""
        self._text: list[str] | None = None
        """The open text part's pieces while ``_writing`` (``StreamAccumulator.bare_text``)."""

    def feed(self, chunk: Any) -> list[StreamEvent]:
        """The events of one chunk."""
        return self.acc.unbared(self.feed_bare(chunk))

    def feed_bare(self, chunk: Any) -> str | list[StreamEvent]:
        """``feed``, but a chunk that only adds text to the open text part gives that text, a bare
        text delta (``providers.stream``), already folded into the accumulator: no event made."""
        data = chunk if type(chunk) is dict else as_dict(chunk)
        # Nearly every chunk: one choice whose delta is text for the open text part, and nothing
        # else (no reasoning, tool calls, finish or usage). Exactly what the general way below
        # makes of it, with fewer steps; anything else goes that way.
        choices = data.get("choices")
        if self._writing and type(choices) is list and len(choices) == 1 and data.get("usage") is None:
            choice = choices[0]
            delta = choice.get("delta")
            if type(delta) is dict and not choice.get("finish_reason") and not choice.get("index") and len(delta) <= 2:
                content = delta.get("content")
                if type(content) is str and content and (len(delta) == 1 or "role" in delta):
                    self._text.append(content)  # type: ignore[union-attr]  # set whenever _writing is
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
        self._text = acc.bare_text("text") if self._response_id and self._model and acc.open_parts() == 1 else None
        self._writing = self._text is not None
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
