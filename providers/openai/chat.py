"""OpenAI Chat Completions provider, for api.openai.com and OpenAI-compatible servers (``base_url``).

Builds the classic ``messages`` list (system, user with text/image parts, assistant with
``tool_calls``, one ``role: tool`` message per result) and translates the chunk stream with
:class:`providers.openai.chat_stream.ChatStreamTranslator`. Reasoning is shown but never sent
back: Chat Completions has no portable way to replay it (DeepSeek even rejects it).
"""

from __future__ import annotations

from typing import Any, Literal

from .._events import TypedEventStream
from .._history import SentHistory
from .._sse import RawEventStream
from .._streaming import sdk_events
from ..messages import (
    ApiName,
    AssistantMessage,
    ImageContent,
    Message,
    ModelRequest,
    TextContent,
    ToolResultsMessage,
    UserContent,
    UserMessage,
)
from ..stream import ModelStream
from ._client import OpenAIClientOwner, open_raw_stream
from ._errors import map_error
from .chat_stream import ChatStreamTranslator

PROVIDER = "openai"


class OpenAIChatProvider(OpenAIClientOwner):
    """Streams ``client.chat.completions.create(stream=True)``; set ``base_url`` for compatible servers."""

    name = PROVIDER
    api: ApiName = "openai-chat"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        organization: str | None = None,
        http_client: Any = None,
        timeout: float | None = 600.0,
        max_tokens_field: Literal["max_completion_tokens", "max_tokens"] = "max_completion_tokens",
    ) -> None:
        super().__init__(api_key=api_key, base_url=base_url, organization=organization, http_client=http_client, timeout=timeout)
        self.max_tokens_field = max_tokens_field
        """Older compatible servers only understand ``max_tokens``."""

    def build_params(self, request: ModelRequest) -> dict[str, Any]:
        return build_params(request, max_tokens_field=self.max_tokens_field)

    def stream(self, request: ModelRequest) -> ModelStream:
        translator = ChatStreamTranslator(api="openai-chat", provider=PROVIDER)
        # ``sdk_events`` itself is the stream's generator: one generator layer per event, not two.
        events = sdk_events(
            lambda params: open_chunk_stream(self._sdk(), params, request.stall_timeout),
            translator.feed_bare,
            lambda exc: map_error(exc, base_url=self._kwargs.get("base_url")),
            finished=lambda: translator.finish_reason is not None,
            dropped="The connection dropped before the model finished answering. Try again.",
            provider=PROVIDER,
            stall_timeout=request.stall_timeout,
            prepare=lambda: self.build_params(request),
            then=translator.close,
            data_only=True,
        )
        return ModelStream(events, translator.acc, bare=True)  # feed_bare's deltas are bare deltas


async def open_chunk_stream(client: Any, params: dict[str, Any], stall_timeout: float | None = None,
                            ) -> RawEventStream | TypedEventStream:
    """The chunk stream for ``params``, read as plain dicts (see :func:`._client.open_raw_stream`)."""
    return await open_raw_stream(client, "/chat/completions", params, stall_timeout)


def build_params(request: ModelRequest, *, max_tokens_field: str = "max_completion_tokens") -> dict[str, Any]:
    """The ``chat.completions.create`` keyword arguments for ``request`` (without ``stream``)."""
    params: dict[str, Any] = {
        "model": request.model,
        "messages": build_messages(request, shared=True),
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        params["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.input_schema, "strict": False},
            }
            for t in request.tools
        ]
    if request.openai.reasoning_effort is not None:
        params["reasoning_effort"] = request.openai.reasoning_effort
    if request.max_tokens is not None:
        params[max_tokens_field] = request.max_tokens
    if request.temperature is not None:
        params["temperature"] = request.temperature
    return params


def build_messages(request: ModelRequest, *, shared: bool = False) -> list[dict[str, Any]]:
    """The Chat Completions ``messages`` list for ``request``. With ``shared`` the entries of a
    message already sent are the very dicts built for it then (see ``_sent``): the caller only
    serialises them and never changes them."""
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    out += _sent(request.messages) if shared else _sent.plain(request.messages)
    return out


def _entries(message: Message) -> list[dict[str, Any]]:
    """One neutral message's Chat Completions entries (none, one, or one per tool result)."""
    match message:
        case UserMessage():
            return [{"role": "user", "content": _content(message.content)}]
        case AssistantMessage():
            calls = [
                {"id": c.tool_call_id, "type": "function", "function": {"name": c.tool_name, "arguments": c.arguments}}
                for c in message.tool_calls
            ]
            entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if calls:
                entry["tool_calls"] = calls
            return [entry] if entry["content"] is not None or calls else []
        case ToolResultsMessage():
            return [{"role": "tool", "content": _content(result.content), "tool_call_id": result.tool_call_id}
                    for result in message.results]
    return []


_sent = SentHistory(_entries)
"""The entries of a conversation, worked out for the messages added since it was last sent only
(``providers._history``): a turn's request costs what its new messages do, not what the session's
history does."""


def _content(content: tuple[UserContent, ...]) -> str | list[dict[str, Any]]:
    if len(content) == 1 and isinstance(content[0], TextContent):
        return content[0].text
    return [_part(c) for c in content]


def _part(content: UserContent) -> dict[str, Any]:
    if isinstance(content, ImageContent):
        return {"type": "image_url", "image_url": {"url": content.data_url()}}
    return {"type": "text", "text": content.text}
