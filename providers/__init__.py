"""Model providers behind one neutral streaming interface. Deliberately not AHP-aware.

How the turn loop uses this package::

    provider = AnthropicProvider()                      # or OpenAIResponsesProvider(), ...
    request = ModelRequest(model="claude-sonnet-4-5", system=..., messages=history, tools=...)
    stream = provider.stream(request)                   # one model call (a ModelStream)
    try:
        async for event in stream:
            match event:
                case PartStart(part_kind="text" | "reasoning"): ...    # new markdown/reasoning part
                case PartStart(part_kind="tool_call"): ...             # toolCallStart(tool_call_id, tool_name)
                case PartDelta(part_kind="tool_call"): ...             # toolCallDelta(raw JSON text)
                case PartDelta(): ...                                  # text/reasoning delta
                case PartEnd(part_kind="tool_call"): ...               # arguments final → toolCallReady
                case UsageReport(usage=u): ...                         # cumulative; latest wins
                case Finish(reason=r): ...                             # "tool_calls" → run tools, call again
    except ProviderError as err:                        # err.error_type, str(err), err.retryable, err.retry_after
        ...
    history += (stream.message(),)                      # built once, by the provider; keeps native payloads
    history += (ToolResultsMessage(results=(ToolResult.of(call_id, name, "output"),)),)

Invariants: events follow :mod:`providers.events` (start → deltas → end per part index, then
one ``Finish``); errors follow :mod:`providers.errors`; providers never retry. Importing
``providers`` loads none of its modules: each name is loaded on first use, so neither the message
models nor ``openai``, ``anthropic``, ``litellm`` or ``httpx2`` are imported until something uses them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .accumulator import StreamAccumulator, UnexpectedDeltaError
    from .anthropic import AnthropicProvider
    from .base import Provider
    from .cassette import CassetteError, RecordingTransport, ReplayTransport, replay_client
    from .errors import (
        AuthenticationError,
        ContextLengthError,
        InvalidRequestError,
        ModelNotFoundError,
        ProviderError,
        ProviderProtocolError,
        ProviderStalledError,
        ProviderUnavailableError,
        RateLimitError,
        RequestCancelledError,
    )
    from .events import (
        Finish,
        FinishReason,
        PartDelta,
        PartEnd,
        PartKind,
        PartStart,
        StreamEvent,
        StreamEventAdapter,
        Usage,
        UsageReport,
    )
    from .litellm import LiteLLMProvider
    from .messages import (
        AnthropicOptions,
        AnthropicThinkingAdaptive,
        AnthropicThinkingBudget,
        ApiName,
        AssistantMessage,
        ImageContent,
        Message,
        MessageAdapter,
        ModelRequest,
        OpenAIOptions,
        ReasoningPart,
        TextContent,
        TextPart,
        ToolCallPart,
        ToolDefinition,
        ToolResult,
        ToolResultsMessage,
        UserMessage,
    )
    from .openai import OpenAIChatProvider, OpenAIResponsesProvider
    from .scripted import Pause, Script, ScriptedProvider
    from .stream import ModelStream

# Every name is loaded on first use (PEP 562): the host imports this package at start-up, and the
# message and event models (pydantic classes, some 20 ms to build) only when a turn needs them.
_WHERE = {
    **dict.fromkeys(["StreamAccumulator", "UnexpectedDeltaError"], ".accumulator"),
    "AnthropicProvider": ".anthropic",
    "Provider": ".base",
    **dict.fromkeys(["CassetteError", "RecordingTransport", "ReplayTransport", "replay_client"], ".cassette"),
    **dict.fromkeys(
        [
            "AuthenticationError", "ContextLengthError", "InvalidRequestError", "ModelNotFoundError", "ProviderError",
            "ProviderProtocolError", "ProviderStalledError", "ProviderUnavailableError", "RateLimitError",
            "RequestCancelledError",
        ],
        ".errors",
    ),
    **dict.fromkeys(
        ["Finish", "FinishReason", "PartDelta", "PartEnd", "PartKind", "PartStart", "StreamEvent", "StreamEventAdapter",
         "Usage", "UsageReport"],
        ".events",
    ),
    "LiteLLMProvider": ".litellm",
    **dict.fromkeys(
        [
            "AnthropicOptions", "AnthropicThinkingAdaptive", "AnthropicThinkingBudget", "ApiName", "AssistantMessage",
            "ImageContent", "Message", "MessageAdapter", "ModelRequest", "OpenAIOptions", "ReasoningPart", "TextContent",
            "TextPart", "ToolCallPart", "ToolDefinition", "ToolResult", "ToolResultsMessage", "UserMessage",
        ],
        ".messages",
    ),
    **dict.fromkeys(["OpenAIChatProvider", "OpenAIResponsesProvider"], ".openai"),
    **dict.fromkeys(["Pause", "Script", "ScriptedProvider"], ".scripted"),
    "ModelStream": ".stream",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'providers' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups never come back here
    return value


__all__ = [
    "AnthropicOptions",
    "AnthropicProvider",
    "AnthropicThinkingAdaptive",
    "AnthropicThinkingBudget",
    "ApiName",
    "AssistantMessage",
    "AuthenticationError",
    "CassetteError",
    "ContextLengthError",
    "Finish",
    "FinishReason",
    "ImageContent",
    "InvalidRequestError",
    "LiteLLMProvider",
    "Message",
    "MessageAdapter",
    "ModelNotFoundError",
    "ModelRequest",
    "ModelStream",
    "OpenAIChatProvider",
    "OpenAIOptions",
    "OpenAIResponsesProvider",
    "PartDelta",
    "PartEnd",
    "PartKind",
    "PartStart",
    "Pause",
    "Provider",
    "ProviderError",
    "ProviderProtocolError",
    "ProviderUnavailableError",
    "ProviderStalledError",
    "RateLimitError",
    "ReasoningPart",
    "RecordingTransport",
    "ReplayTransport",
    "RequestCancelledError",
    "Script",
    "ScriptedProvider",
    "StreamAccumulator",
    "StreamEvent",
    "StreamEventAdapter",
    "TextContent",
    "TextPart",
    "ToolCallPart",
    "ToolDefinition",
    "ToolResult",
    "ToolResultsMessage",
    "UnexpectedDeltaError",
    "Usage",
    "UsageReport",
    "UserMessage",
    "replay_client",
]
