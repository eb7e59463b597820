"""Anthropic Messages API provider (official ``anthropic`` SDK, streamed).

Translates the raw ``messages.create(stream=True)`` events into neutral events and nothing
more: text and thinking blocks become text / reasoning parts, ``tool_use`` becomes a tool-call
part whose deltas are the ``input_json_delta`` fragments, ``redacted_thinking`` becomes an empty
reasoning part. At each ``content_block_stop`` the block is rebuilt exactly as the API defines
it (thinking with its ``signature``, ``redacted_thinking`` with its ``data``, ``tool_use`` with
parsed ``input``) and attached as the part's ``native`` payload, which :func:`build_params`
sends back unchanged next turn. Only the SDK call site maps exceptions (:func:`map_error`).
A ``text_delta``, ``thinking_delta`` or ``input_json_delta`` of the block started last is given as
its content, a bare delta (``providers.stream``; ``_Translator.feed_bare``), folded into the
accumulator already.

The SDK builds, authenticates and sends the request and maps HTTP error statuses; the events are
read from its raw response with the lean reader (``providers._sse``, orjson) as plain dicts, as
the SDK's typed models would cost several times more a chunk (``benchmarks/provider_parsing.py``;
the typed way remains the fallback, ``providers._events``). On that raw way a delta of the block
started last whose bytes are laid out as the API writes them gives its piece alone, only that
string parsed (``providers._sse``, its ``bare`` reader: ``_Translator.bare_prefix``; off with
``PICK_PIECES``), and ``feed_bare`` takes it as it is. An ``error`` event inside the stream is
raised as the SDK would raise it (``anthropic.APIStatusError`` on the 200 response).
"""

from __future__ import annotations

import json
import os
from typing import Any

from ._events import TypedEventStream, open_events
from ._history import SentHistory
from ._sse import BarePrefix, RawEventStream
from ._streaming import sdk_events
from ._tls import ssl_context
from ._transport_errors import is_transport_error, really_timed_out
from .accumulator import StreamAccumulator
from .errors import (
    AuthenticationError,
    ContextLengthError,
    InvalidRequestError,
    ModelNotFoundError,
    ProviderError,
    ProviderProtocolError,
    ProviderUnavailableError,
    RateLimitError,
    RequestCancelledError,
    looks_like_context_overflow,
    parse_retry_after,
)
from .events import Finish, FinishReason, StreamEvent, Usage, UsageReport
from .messages import (
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
from .stream import ModelStream

PROVIDER = "anthropic"
DEFAULT_MAX_TOKENS = 16000
_EPHEMERAL = {"type": "ephemeral"}

_STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "pause_turn": "pause",
    "refusal": "refusal",
}

_CONTENT_OF: dict[str, str] = {"text_delta": "text", "thinking_delta": "thinking", "input_json_delta": "partial_json"}
"""A ``content_block_delta``'s type → the member of its ``delta`` holding the part's streamed content."""

PICK_PIECES = True
"""Whether the raw reader gives a delta's piece picked out of the event's bytes (``providers._sse``,
``bare``); False: the plain way, every event parsed whole (the same results, a test's comparison)."""

_EVENT_AND_DATA = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":'


def delta_prefix(index: int, delta_type: str, field: str) -> bytes:
    """The bytes of a ``content_block_delta`` event of block ``index`` up to its content: the
    ``event`` line, then the ``data`` as the API writes it (no spaces) up to the string of
    ``field`` of a delta of ``delta_type``."""
    return b"%s%d,\"delta\":{\"type\":\"%s\",\"%s\":" % (_EVENT_AND_DATA, index, delta_type.encode(), field.encode())


_DELTA_OF: dict[str, tuple[str, str]] = {"text": ("text_delta", "text"), "thinking": ("thinking_delta", "thinking"),
                                         "tool_use": ("input_json_delta", "partial_json")}
"""A content block's type → the type of the deltas streaming its content and the member holding it."""


class AnthropicProvider:
    """Streams Claude models. ``http_client`` must be an ``httpx2.AsyncClient`` (SDK rule); without one
    the SDK's aiohttp-backed ``anthropic.DefaultAioHttpClient`` is used."""

    name = PROVIDER
    api: ApiName = "anthropic"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        http_client: Any = None,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout: float | None = 600.0,
    ) -> None:
        self._api_key = api_key
        self._base_url = base_url
        self._http_client = http_client
        self._timeout = timeout
        self.default_max_tokens = default_max_tokens
        self._client: Any = None

    def _sdk(self) -> Any:
        if self._client is None:
            import anthropic

            api_key = self._api_key or os.environ.get("ANTHROPIC_API_KEY")
            if not api_key:
                raise AuthenticationError(
                    "No Anthropic API key is configured: set ANTHROPIC_API_KEY.", provider=PROVIDER
                )
            self._client = anthropic.AsyncAnthropic(
                api_key=api_key,
                base_url=self._base_url,
                # The SDK's aiohttp-backed client reads a streamed chunk for about half the CPU of
                # its default httpx2 stack (see providers/openai/_client.py).
                # Its TLS context is the process's one (``providers._tls``).
                http_client=self._http_client if self._http_client is not None else anthropic.DefaultAioHttpClient(verify=ssl_context()),
                # The turn loop owns retries; and a client without them (nor custom headers, middleware or
                # a credentials provider) sends its later requests as the first one kept, with their own
                # body (``providers._request_body``: "The request made once per client").
                max_retries=0,
                timeout=self._timeout,
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()

    def build_params(self, request: ModelRequest) -> dict[str, Any]:
        return build_params(request, default_max_tokens=self.default_max_tokens)

    def stream(self, request: ModelRequest) -> ModelStream:
        translator = _Translator()
        # ``sdk_events`` itself is the stream's generator: one generator layer per event, not two.
        events = sdk_events(
            lambda params: open_event_stream(self._sdk(), params, request.stall_timeout, translator),
            translator.feed_bare,
            map_error,
            finished=lambda: translator.finished,
            dropped="The connection to Anthropic dropped before the response finished. Try again.",
            provider=PROVIDER,
            stall_timeout=request.stall_timeout,
            prepare=lambda: self.build_params(request),
            data_only=True,
        )
        return ModelStream(events, translator.acc, bare=True)  # feed_bare's deltas are bare deltas


async def open_event_stream(client: Any, params: dict[str, Any], stall_timeout: float | None = None,
                            reader: BarePrefix | None = None) -> RawEventStream | TypedEventStream:
    """The SDK sends the request; the events are read as plain dicts (``providers._events``).
    ``stall_timeout``: the caller's stall watch bounds every read (no per-read bound in the client).
    ``reader``: a translator whose streamed pieces may come as ``str`` (``providers._sse``'s ``bare``,
    on the raw way only, with ``PICK_PIECES``)."""
    import anthropic

    watched = (stall_timeout, anthropic.Timeout) if stall_timeout is not None else None
    stream = await open_events(client, "/v1/messages", params, error=stream_error, names=False, watched=watched)
    if reader is not None and PICK_PIECES and type(stream) is RawEventStream:
        stream.bare = reader
    return stream


def stream_error(response: Any, data: Any) -> BaseException | None:
    """An ``error`` event (``{"type": "error", "error": {...}}``) as the SDK would raise it."""
    if not isinstance(data, dict) or data.get("type") != "error":
        return None
    import anthropic

    return anthropic.APIStatusError(f"{data}", response=response, body=data)


def _without_none(value: dict[str, Any]) -> dict[str, Any]:
    """A block as the SDK's ``model_dump(exclude_none=True)`` gave it (top-level ``None`` dropped)."""
    return {k: v for k, v in value.items() if v is not None}


class _Translator:
    """Raw Anthropic stream events (plain dicts, as sent) → neutral events, one message's worth."""

    def __init__(self) -> None:
        self.acc = StreamAccumulator(api="anthropic", provider=PROVIDER)
        self.usage = Usage()
        self.finished = False
        self._blocks: dict[int, dict[str, Any]] = {}
        self._ignored: set[int] = set()
        self._message_id: str | None = None
        self._model: str | None = None
        self._stop_reason: str | None = None
        self._last: int | None = None
        """The index of the block whose part was started last (None: none yet)."""
        self._pieces: list[str] | None = None
        """That block's pieces while its part is open (``StreamAccumulator.bare_pieces``): its deltas
        may be given bare."""
        self._prefixes: dict[int, bytes] = {}
        """Per started block whose content streams, the bytes its deltas begin with (``delta_prefix``)."""
        self.bare_prefix: bytes | None = None
        """While ``_pieces`` is open, the bytes a delta of that block begins with: the raw reader
        (``providers._sse``, ``bare``) gives the content of such an event as a ``str``."""

    def feed(self, raw: dict[str, Any] | str) -> list[StreamEvent]:
        """The events of one raw event."""
        return self.acc.unbared(self.feed_bare(raw))

    def feed_bare(self, raw: dict[str, Any] | str) -> str | list[StreamEvent]:
        """``feed``, but a delta of text, thinking or tool input for the open block started last
        gives its content, a bare delta (``providers.stream``), already folded into the accumulator:
        no event made. ``raw`` may be that content itself, a ``str`` the raw reader picked out of a
        delta event of that block (``bare_prefix``)."""
        if type(raw) is str:
            self._pieces.append(raw)  # type: ignore[union-attr]  # a str only while _pieces is open
            return raw
        data: dict[str, Any] = raw  # type: ignore[assignment]  # not a str
        # Nearly every event of an answer that the raw reader did not give as a str (the SDK's
        # typed events, another layout): exactly what the general way below makes of it, with
        # fewer steps; anything else goes that way.
        if self._pieces is not None and data.get("type") == "content_block_delta" and data.get("index") == self._last:
            delta = data.get("delta")
            if type(delta) is dict:
                field = _CONTENT_OF.get(delta.get("type"))  # type: ignore[arg-type]  # any type: None if not ours
                content = delta.get(field) if field is not None else None
                if type(content) is str and content:
                    self._pieces.append(content)
                    return content
        events = self._feed(data)
        self._pieces = pieces = self.acc.bare_pieces(self._last)
        self.bare_prefix = self._prefixes.get(self._last) if pieces is not None else None  # type: ignore[arg-type]
        return events

    def _feed(self, raw: dict[str, Any]) -> list[StreamEvent]:
        match raw.get("type"):
            case "content_block_delta":  # nearly every event: matched first
                return self._delta(raw["index"], raw["delta"])
            case "message_start":
                message = raw["message"]
                self._message_id, self._model = message.get("id"), message.get("model")
                return [self._usage(message.get("usage") or {})]
            case "content_block_start":
                return self._start(raw["index"], _without_none(raw["content_block"]))
            case "content_block_stop":
                return self._stop(raw["index"])
            case "message_delta":
                self._stop_reason = (raw.get("delta") or {}).get("stop_reason") or self._stop_reason
                return [self._usage(raw["usage"])] if raw.get("usage") is not None else []
            case "message_stop":
                self.finished = True
                reason = _STOP_REASONS.get(self._stop_reason or "", "other")
                return [
                    *self.acc.end_all(),
                    self.acc.finish_call(Finish(reason=reason, raw_reason=self._stop_reason, response_id=self._message_id, model=self._model)),
                ]
        return []  # ping, and event types added by later API versions, are not ours to guess at

    def _start(self, index: int, block: dict[str, Any]) -> list[StreamEvent]:
        kind = block.get("type")
        self._blocks[index] = block
        if kind in _DELTA_OF and type(index) is int:
            self._prefixes[index] = delta_prefix(index, *_DELTA_OF[kind])
        if kind == "text":
            events: list[StreamEvent] = [self.acc.start(index, "text")]
            initial = block.get("text", "")
        elif kind == "thinking":
            events = [self.acc.start(index, "reasoning")]
            initial = block.get("thinking", "")
        elif kind == "redacted_thinking":
            self._last = index
            return [self.acc.start(index, "reasoning")]
        elif kind == "tool_use":
            events = [self.acc.start(index, "tool_call", tool_call_id=block["id"], tool_name=block["name"])]
            initial = json.dumps(block["input"]) if block.get("input") else ""
        else:
            self._ignored.add(index)  # server-tool blocks etc.: not modelled as neutral parts yet
            return []
        self._last = index
        if initial:
            events.append(self.acc.delta(index, initial))
        return events

    def _delta(self, index: int, delta: dict[str, Any]) -> list[StreamEvent]:
        if index in self._ignored:
            return []
        kind = delta.get("type")
        field = _CONTENT_OF.get(kind)  # type: ignore[arg-type]  # any type: None if not ours
        if field is not None:
            return [self.acc.delta(index, delta[field])] if delta.get(field) else []
        match kind:
            case "signature_delta":
                block = self._open_block(index)
                block["signature"] = block.get("signature", "") + (delta.get("signature") or "")
            case "citations_delta":
                block = self._open_block(index)
                block.setdefault("citations", []).append(_without_none(delta["citation"]))
        return []

    def _open_block(self, index: int) -> dict[str, Any]:
        if not self.acc.is_open(index):
            self.acc.delta(index, "")  # raises the typed "fits no part" error
        return self._blocks[index]

    def _stop(self, index: int) -> list[StreamEvent]:
        if index in self._ignored:
            return []
        block = self._open_block(index)
        text = self.acc.part_text(index)
        match block["type"]:
            case "text":
                native: dict[str, Any] = {"type": "text", "text": text}
                if block.get("citations"):
                    native["citations"] = block["citations"]
            case "thinking":
                native = {"type": "thinking", "thinking": text, "signature": block.get("signature", "")}
            case "redacted_thinking":
                native = {"type": "redacted_thinking", "data": block["data"]}
            case _:  # tool_use
                try:
                    arguments = json.loads(text) if text.strip() else {}
                except ValueError:
                    arguments = {}  # truncated by max_tokens; the raw text stays on the part
                native = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": arguments}
        return [self.acc.end(index, native)]

    def _usage(self, usage: dict[str, Any]) -> UsageReport:
        current = self.usage
        self.usage = Usage(
            input_tokens=_first_int(usage.get("input_tokens"), current.input_tokens),
            output_tokens=_first_int(usage.get("output_tokens"), current.output_tokens),
            cache_read_tokens=_first_int(usage.get("cache_read_input_tokens"), current.cache_read_tokens),
            cache_write_tokens=_first_int(usage.get("cache_creation_input_tokens"), current.cache_write_tokens),
        )
        return UsageReport(usage=self.usage)


def _first_int(value: Any, fallback: int) -> int:
    return value if isinstance(value, int) else fallback


# ---- request building ------------------------------------------------------------------


def build_params(request: ModelRequest, *, default_max_tokens: int = DEFAULT_MAX_TOKENS) -> dict[str, Any]:
    """The ``messages.create`` keyword arguments for ``request`` (without ``stream``)."""
    options = request.anthropic
    params: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens or default_max_tokens,
        "messages": list(_sent(request.messages)),
    }
    if request.system:
        params["system"] = [{"type": "text", "text": request.system}]
    if request.tools:
        params["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in request.tools
        ]
    thinking = options.thinking
    if thinking is not None and thinking.type == "enabled":
        params["thinking"] = {"type": "enabled", "budget_tokens": thinking.budget_tokens}
    elif thinking is not None:
        params["thinking"] = {"type": "adaptive"}
        if thinking.display is not None:
            params["thinking"]["display"] = thinking.display
        if thinking.effort is not None:
            params["output_config"] = {"effort": thinking.effort}
    if request.temperature is not None and thinking is None:
        params["temperature"] = request.temperature  # the API rejects temperature with thinking
    if options.cache_prompt:
        _mark_cache_breakpoints(params)
    return params


def _entries(message: Message) -> list[dict[str, Any]]:
    """One neutral message's entry of the ``messages`` list (none if it has nothing to send)."""
    match message:
        case UserMessage():
            role, content = "user", [_user_block(c) for c in message.content]
        case ToolResultsMessage():
            role, content = "user", [_tool_result_block(r) for r in message.results]
        case AssistantMessage():
            role, content = "assistant", _assistant_blocks(message)
        case _:
            return []
    return [{"role": role, "content": content}] if content else []


def _join(before: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any] | None:
    """Two entries of one role in a row as one (the API wants user/assistant turns to alternate)."""
    if before["role"] != entry["role"]:
        return None
    return {"role": before["role"], "content": before["content"] + entry["content"]}


_sent = SentHistory(_entries, _join)
"""The ``messages`` list of a conversation, worked out for the messages added since it was last
sent only (``providers._history``): a turn's request costs what its new messages do. Its entries
are shared between calls: the cache breakpoint is put on a copy (``_mark_cache_breakpoints``)."""


def _user_block(content: UserContent) -> dict[str, Any]:
    if isinstance(content, TextContent):
        return {"type": "text", "text": content.text}
    return _image_block(content)


def _image_block(image: ImageContent) -> dict[str, Any]:
    if image.url is not None:
        return {"type": "image", "source": {"type": "url", "url": image.url}}
    return {"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.data}}


def _tool_result_block(result: Any) -> dict[str, Any]:
    content = [_user_block(c) for c in result.content]
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.tool_call_id, "content": content}
    if len(content) == 1 and content[0]["type"] == "text":
        block["content"] = content[0]["text"]
    if result.is_error:
        block["is_error"] = True
    return block


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    native_ok = message.api == "anthropic"
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if native_ok and part.native is not None:
            blocks.append(dict(part.native))  # verbatim: signatures must round-trip untouched
            continue
        match part:
            case TextPart() if part.text:
                blocks.append({"type": "text", "text": part.text})
            case ToolCallPart():
                try:
                    arguments = part.parsed_arguments()
                except ValueError:
                    arguments = {}
                blocks.append({"type": "tool_use", "id": part.tool_call_id, "name": part.tool_name, "input": arguments})
            case ReasoningPart():
                pass  # unsigned or foreign reasoning cannot be replayed to Claude
    return blocks


def _mark_cache_breakpoints(params: dict[str, Any]) -> None:
    """Cache the stable prefix: system prompt, tool list and the conversation up to now."""
    if params.get("system"):
        params["system"][-1]["cache_control"] = _EPHEMERAL
    if params.get("tools"):
        params["tools"][-1]["cache_control"] = _EPHEMERAL
    messages = params["messages"]  # a list of this call's, its entries shared (``_sent``): copied where marked
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message["role"] != "user":
            continue
        content = message["content"]
        last = content[-1]
        if last.get("type") in {"text", "image", "tool_result"}:
            messages[index] = {**message, "content": [*content[:-1], {**last, "cache_control": _EPHEMERAL}]}
        break


# ---- error mapping ---------------------------------------------------------------------


def map_error(exc: BaseException) -> ProviderError:
    """An Anthropic SDK / transport exception as a :class:`ProviderError` with advice."""
    import anthropic

    if isinstance(exc, json.JSONDecodeError):  # orjson's error is one too
        return ProviderProtocolError(
            "Anthropic sent a stream event that is not valid JSON, so its answer could not be read. "
            "Try again; if it keeps happening, check base_url points at the Anthropic API.",
            provider=PROVIDER,
        )
    if isinstance(exc, anthropic.APIStatusError):
        return _map_status(exc)
    if isinstance(exc, anthropic.APITimeoutError) and really_timed_out(exc):
        return ProviderUnavailableError("Anthropic did not answer in time. Try again.", provider=PROVIDER)
    if isinstance(exc, anthropic.APIConnectionError) or is_transport_error(exc):
        return ProviderUnavailableError(
            "The connection to Anthropic failed or dropped. Check the network and try again.", provider=PROVIDER
        )
    if type(exc).__name__ == "APIUserAbortError":
        return RequestCancelledError("The Anthropic request was cancelled.", provider=PROVIDER)
    return ProviderError(f"Anthropic request failed: {type(exc).__name__}.", provider=PROVIDER)


def _map_status(exc: Any) -> ProviderError:
    status: int = exc.status_code
    error_type = exc.type or ""
    detail = exc.api_message or "no details given"
    http_status = status if status >= 400 else None  # mid-stream errors arrive on a 200 response
    if error_type in {"authentication_error", "permission_error"} or status in {401, 403}:
        return AuthenticationError(
            f"Anthropic rejected the credentials ({detail}). Check ANTHROPIC_API_KEY and the key's access.",
            provider=PROVIDER,
            status_code=http_status,
        )
    if error_type == "rate_limit_error" or status == 429:
        return RateLimitError(
            f"Anthropic rate limit reached ({detail}). Wait and try again.",
            provider=PROVIDER,
            status_code=http_status,
            retry_after=parse_retry_after(exc.response.headers),
        )
    if error_type in {"overloaded_error", "api_error"} or status >= 500:
        return ProviderUnavailableError(
            f"Anthropic is unavailable or overloaded ({detail}). Try again shortly.",
            provider=PROVIDER,
            status_code=http_status,
            retry_after=parse_retry_after(exc.response.headers),
        )
    if error_type == "not_found_error" or status == 404:
        return ModelNotFoundError(
            f"Anthropic could not find that model or resource ({detail}). Check the model id.",
            provider=PROVIDER,
            status_code=http_status,
        )
    if looks_like_context_overflow(detail):
        return ContextLengthError(
            f"The conversation is too long for the model ({detail}). Compact or shorten it.",
            provider=PROVIDER,
            status_code=http_status,
        )
    return InvalidRequestError(f"Anthropic rejected the request ({detail}).", provider=PROVIDER, status_code=http_status)
