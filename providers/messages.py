"""The neutral conversation and request model every provider accepts.

Contract:

* A conversation is a tuple of :data:`Message`: :class:`UserMessage` (text and images),
  :class:`AssistantMessage` (what a model produced, as ordered parts) and
  :class:`ToolResultsMessage` (answers to the tool calls of the assistant message before it).
* Assistant parts keep ``native`` payloads (Anthropic content blocks, OpenAI Responses output
  items) together with the ``api`` that produced them. A provider replays ``native`` verbatim
  only when the message came from the same ``api``; otherwise it rebuilds the part from the
  neutral fields and drops reasoning it cannot vouch for (signatures are provider-bound).
* Tool-call arguments are raw JSON text, exactly as streamed.
* Everything is a frozen pydantic model, so a session can persist a conversation as JSON and
  load it back (``MessageAdapter``) without losing native payloads.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

ApiName = Literal["anthropic", "openai-responses", "openai-chat", "litellm", "scripted"]
"""Which wire API produced an assistant message (decides whether ``native`` can be replayed)."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TextContent(_Model):
    """Plain text in a user message or tool result."""

    kind: Literal["text"] = "text"
    text: str


class ImageContent(_Model):
    """An image, inline (base64 ``data``) or by ``url``; exactly one of them is set."""

    kind: Literal["image"] = "image"
    media_type: str = "image/png"
    data: str | None = None
    """Base64 without a ``data:`` prefix."""
    url: str | None = None

    def model_post_init(self, __context: Any) -> None:
        if (self.data is None) == (self.url is None):
            raise ValueError("an image needs exactly one of data or url")

    def data_url(self) -> str:
        """The image as a URL (a ``data:`` URL when inline)."""
        return self.url if self.url is not None else f"data:{self.media_type};base64,{self.data}"


UserContent = Annotated[TextContent | ImageContent, Field(discriminator="kind")]


class UserMessage(_Model):
    """What the user said (text, optionally images)."""

    role: Literal["user"] = "user"
    content: tuple[UserContent, ...]

    @classmethod
    def of(cls, text: str, *images: ImageContent) -> UserMessage:
        """Shortcut for a text message with optional images."""
        return cls(content=(TextContent(text=text), *images))

    @property
    def text(self) -> str:
        return "".join(c.text for c in self.content if isinstance(c, TextContent))


class TextPart(_Model):
    """Assistant markdown."""

    kind: Literal["text"] = "text"
    text: str
    native: dict[str, Any] | None = None


class ReasoningPart(_Model):
    """Assistant reasoning (Anthropic thinking, OpenAI reasoning summary).

    ``text`` may be empty (Anthropic ``redacted_thinking``, an OpenAI reasoning item without a
    summary); the part still matters because ``native`` must go back to the provider."""

    kind: Literal["reasoning"] = "reasoning"
    text: str
    native: dict[str, Any] | None = None


class ToolCallPart(_Model):
    """A tool call the model made; ``arguments`` is the raw JSON text it streamed."""

    kind: Literal["tool_call"] = "tool_call"
    tool_call_id: str
    tool_name: str
    arguments: str
    native: dict[str, Any] | None = None

    def parsed_arguments(self) -> Any:
        """The arguments as JSON; ``{}`` for empty text. Raises ``ValueError`` on bad JSON."""
        return json.loads(self.arguments) if self.arguments.strip() else {}


AssistantPart = Annotated[TextPart | ReasoningPart | ToolCallPart, Field(discriminator="kind")]


class AssistantMessage(_Model):
    """What the model produced in one call, in stream order."""

    role: Literal["assistant"] = "assistant"
    parts: tuple[AssistantPart, ...]
    api: ApiName | None = None
    """The API that produced ``native`` payloads; ``None`` for hand-built messages."""
    model: str | None = None
    response_id: str | None = None

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCallPart))


class ToolResult(_Model):
    """The outcome of one tool call; a failed tool is a result with ``is_error``."""

    tool_call_id: str
    tool_name: str
    content: tuple[UserContent, ...]
    is_error: bool = False

    @classmethod
    def of(cls, tool_call_id: str, tool_name: str, text: str, *, is_error: bool = False) -> ToolResult:
        return cls(tool_call_id=tool_call_id, tool_name=tool_name, content=(TextContent(text=text),), is_error=is_error)

    @property
    def text(self) -> str:
        return "".join(c.text for c in self.content if isinstance(c, TextContent))


class ToolResultsMessage(_Model):
    """Results for the tool calls of the preceding assistant message, in call order."""

    role: Literal["tool"] = "tool"
    results: tuple[ToolResult, ...]


Message = Annotated[UserMessage | AssistantMessage | ToolResultsMessage, Field(discriminator="role")]
MessageAdapter: TypeAdapter[Message] = TypeAdapter(Message)
"""Validates / serialises one :data:`Message` from / to JSON."""


class ToolDefinition(_Model):
    """A tool offered to the model."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON Schema of the arguments object."""


class AnthropicThinkingBudget(_Model):
    """Extended thinking with a fixed token budget (must be below ``max_tokens``)."""

    type: Literal["enabled"] = "enabled"
    budget_tokens: int


class AnthropicThinkingAdaptive(_Model):
    """Adaptive thinking: the model decides how much to think, steered by ``effort``."""

    type: Literal["adaptive"] = "adaptive"
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None
    display: Literal["summarized", "omitted"] | None = None


class AnthropicOptions(_Model):
    """Anthropic-only request options."""

    thinking: Annotated[AnthropicThinkingBudget | AnthropicThinkingAdaptive, Field(discriminator="type")] | None = None
    cache_prompt: bool = True
    """Mark the system prompt, tools and latest user turn with ``cache_control`` (prompt caching)."""


class OpenAIOptions(_Model):
    """OpenAI-only request options (Responses and Chat Completions)."""

    reasoning_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None
    reasoning_summary: Literal["auto", "concise", "detailed"] | None = None
    """Responses API only: ask for reasoning summaries (streamed as reasoning parts)."""
    store: bool | None = None
    """Responses API: ``False`` also requests encrypted reasoning content so tool loops keep it."""


class ModelRequest(_Model):
    """Everything one model call needs."""

    model: str
    messages: tuple[Message, ...]
    system: str | None = None
    tools: tuple[ToolDefinition, ...] = ()
    max_tokens: int | None = None
    """Output-token cap; Anthropic requires one, so providers fall back to their default."""
    temperature: float | None = None
    anthropic: AnthropicOptions = AnthropicOptions()
    openai: OpenAIOptions = OpenAIOptions()
    stall_timeout: float | None = None
    """Seconds without receiving anything (response headers, then each stream event, keep-alive
    pings included) after which the call fails with ``ProviderStalledError``; None: no limit."""
