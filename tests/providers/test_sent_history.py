"""A provider's request body is, byte for byte, the same whether the conversation's entries come from
what was worked out for earlier calls (``providers._history``) or every message is converted again:
over many turns of text, tool calls and results (failed ones, images among them), thinking and
reasoning sent back verbatim, foreign and empty assistant messages, Anthropic's merged user turns
and its cache breakpoint moving every call, and over a conversation edited, compacted, cut back
or forked. A body once built is not changed by the calls after it."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import orjson
import pytest

from ahp import prefix_memo
from providers import anthropic as anthropic_provider
from providers._history import SentHistory
from providers.messages import (
    AnthropicOptions,
    AssistantMessage,
    ImageContent,
    Message,
    ModelRequest,
    ReasoningPart,
    TextContent,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
)
from providers.openai import chat, responses

PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
TOOL = ToolDefinition(name="read_file", description="Read a file.", input_schema={"type": "object", "properties": {"path": {"type": "string"}}})

PROVIDERS: dict[str, tuple[ModuleType, Callable[[ModelRequest], dict[str, Any]]]] = {
    "anthropic": (anthropic_provider, anthropic_provider.build_params),
    "openai-responses": (responses, responses.build_params),
    "openai-chat": (chat, chat.build_params),
}


@pytest.fixture(autouse=True, params=["pointers", "scan"])
def _way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test both ways of finding the shared prefix (``ahp.prefix_memo``)."""
    if request.param == "scan":
        monkeypatch.setattr(prefix_memo, "_pointers", None)


class _Plain:
    """A module's ``_sent`` that converts every message again on every call."""

    def __init__(self, sent: SentHistory) -> None:
        self.plain = sent.plain

    def __call__(self, messages: Any) -> list[dict[str, Any]]:
        return self.plain(messages)


def _bodies(api: str, request: ModelRequest, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, bytes]:
    """(the body built the shared way, the body built the plain way), serialised."""
    module, build = PROVIDERS[api]
    shared = orjson.dumps(build(request))
    with monkeypatch.context() as patch:
        patch.setattr(module, "_sent", _Plain(module._sent))
        plain = orjson.dumps(build(request))
    return shared, plain


def _native(api: str, kind: str, n: int) -> dict[str, Any] | None:
    """What a part of ``kind`` carries back verbatim from ``api`` (None: nothing)."""
    if api == "anthropic":
        return {"thinking": {"type": "thinking", "thinking": f"think {n}", "signature": f"sig{n}"},
                "text": {"type": "text", "text": f"Looking {n}.", "citations": [{"type": "char_location", "cited_text": "x"}]},
                "tool_call": {"type": "tool_use", "id": f"toolu_{n}", "name": "read_file", "input": {"path": f"{n}.txt"}}}[kind]
    if api == "openai-responses":
        return {"thinking": {"type": "reasoning", "id": f"rs_{n}", "summary": [], "encrypted_content": f"enc{n}"},
                "text": {"type": "message", "id": f"msg_{n}", "role": "assistant", "status": "completed",
                         "content": [{"type": "output_text", "text": f"Looking {n}.", "annotations": []}]},
                "tool_call": {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "name": "read_file",
                              "arguments": f'{{"path": "{n}.txt"}}', "status": "completed"}}[kind]
    return None


def _turn(api: str, n: int) -> list[Message]:
    """Turn ``n``'s messages: the user's, a model call with tool calls, their results, the answer;
    every few turns an image, a failed tool, a user message right after the results (one user turn
    for Anthropic), an answer from another API or hand-built, an assistant message with nothing to
    send (reasoning another API made)."""
    own = api if n % 5 else None  # every fifth turn's answers hand-built: no native payloads
    images = (ImageContent(media_type="image/png", data=PIXEL),) if n % 4 == 1 else (
        (ImageContent(url=f"https://example.com/{n}.png"),) if n % 4 == 3 else ())
    messages: list[Message] = [UserMessage.of(f"Question {n}: what is in {n}.txt?", *images)]
    parts: list[Any] = [ReasoningPart(text=f"think {n}", native=_native(api, "thinking", n) if own else None),
                        TextPart(text=f"Looking {n}.", native=_native(api, "text", n) if own else None),
                        ToolCallPart(tool_call_id=f"call_{n}", tool_name="read_file", arguments=f'{{"path": "{n}.txt"}}',
                                     native=_native(api, "tool_call", n) if own else None)]
    if n % 3 == 0:
        parts.append(ToolCallPart(tool_call_id=f"call_{n}b", tool_name="read_file", arguments="{not json"))
    messages.append(AssistantMessage(api=own, parts=tuple(parts)))
    results = [ToolResult.of(f"call_{n}", "read_file", f"contents of {n}.txt")]
    if n % 3 == 0:
        results.append(ToolResult(tool_call_id=f"call_{n}b", tool_name="read_file", is_error=n % 2 == 0,
                                  content=(TextContent(text="bad arguments"), ImageContent(media_type="image/png", data=PIXEL))))
    messages.append(ToolResultsMessage(results=tuple(results)))
    if n % 6 == 1:
        messages.append(UserMessage.of(f"And also {n}.md, please."))
    if n % 7 == 2:
        messages.append(AssistantMessage(api="openai-chat", parts=(ReasoningPart(text="foreign"),)))
        messages.append(UserMessage.of("Go on."))
    messages.append(AssistantMessage(api=own, parts=(TextPart(text=f"It says: contents of {n}.txt.",
                                                              native=_native(api, "text", 1000 + n) if own else None),)))
    return messages


def _request(messages: list[Message], api: str = "anthropic") -> ModelRequest:
    return ModelRequest(model="some-model", system="Be brief.", tools=(TOOL,), max_tokens=300,
                        messages=tuple(messages), anthropic=AnthropicOptions(cache_prompt=True))


def _calls(api: str, history: list[Message], new: list[Message]) -> list[ModelRequest]:
    """The model calls of a turn adding ``new`` to ``history``: one after every user or tool message."""
    calls = []
    for message in new:
        history.append(message)
        if not isinstance(message, AssistantMessage):
            calls.append(_request(history, api))
    return calls


def _marked(body: dict[str, Any]) -> list[tuple[int, int]]:
    """Where an Anthropic body's messages carry a cache breakpoint: (message, block) indexes."""
    return [(i, j) for i, message in enumerate(body["messages"]) for j, block in enumerate(message["content"])
            if "cache_control" in block]


@pytest.mark.parametrize("api", list(PROVIDERS))
def test_a_long_session_s_bodies_are_the_plain_bodies_and_stay_as_built(api: str, monkeypatch: pytest.MonkeyPatch) -> None:
    history: list[Message] = []
    built: list[tuple[ModelRequest, bytes]] = []
    merged = 0
    for n in range(1, 61):
        for request in _calls(api, history, _turn(api, n)):
            shared, plain = _bodies(api, request, monkeypatch)
            assert shared == plain
            built.append((request, shared))
            if api == "anthropic":
                body = orjson.loads(shared)
                merged += len(request.messages) - len(body["messages"])
                last_user = max(i for i, m in enumerate(body["messages"]) if m["role"] == "user")
                # The breakpoint moves every call: on the last user turn's last block only.
                assert _marked(body) == [(last_user, len(body["messages"][last_user]["content"]) - 1)]
    assert merged > 0 or api != "anthropic"  # user messages in a row were sent as one
    for request, body in built[::7]:  # what later calls shared was not changed by them
        assert _bodies(api, request, monkeypatch) == (body, body)


@pytest.mark.parametrize("api", list(PROVIDERS))
def test_an_edited_compacted_cut_or_forked_conversation_is_sent_as_it_now_is(api: str, monkeypatch: pytest.MonkeyPatch) -> None:
    history: list[Message] = []
    for n in range(1, 21):
        _calls(api, history, _turn(api, n))
        _bodies(api, _request(history, api), monkeypatch)

    def sent(messages: list[Message]) -> bytes:
        shared, plain = _bodies(api, _request(messages, api), monkeypatch)
        assert shared == plain
        return shared

    # A message in the middle edited (another object, equal-looking but for its text).
    edited = [*history[:30], UserMessage.of("Question 7, asked again."), *history[31:]]
    assert b"asked again" in sent(edited)
    # Old tool output elided (new results messages, the rest the same objects).
    elided = [ToolResultsMessage(results=tuple(ToolResult.of(r.tool_call_id, r.tool_name, "[Output elided]") for r in m.results))
              if isinstance(m, ToolResultsMessage) and i < 60 else m for i, m in enumerate(history)]
    assert sent(elided).count(b"[Output elided]") == sum(len(m.results) for m in history[:60] if isinstance(m, ToolResultsMessage))
    # Compacted: a summary, then the latest turn; then it grows again.
    compacted = [UserMessage.of("[Summary] the first 19 turns."), *history[-6:]]
    sent(compacted)
    for n in range(21, 24):
        for request in _calls(api, compacted, _turn(api, n)):
            sent(list(request.messages))
    # Cut back (a turn retried): every length, ends after a merged user turn among them; then
    # forked: two continuations of one prefix asked in turn.
    for end in range(len(history), 0, -3):
        sent(history[:end])
    fork_a = [*history[:40], *_turn(api, 100)]
    fork_b = [*history[:41], *_turn(api, 200)]
    for _ in range(3):
        assert b"Question 100" in sent(fork_a) and b"Question 200" in sent(fork_b)
    assert b"Question 200" not in sent(history)


def test_anthropic_user_messages_in_a_row_are_one_turn_and_the_one_before_is_kept_apart() -> None:
    # Tool results then a user message: sent as one user turn; the same results then an answer:
    # the results' turn alone (the memo kept it as it was before the join), marked for the cache.
    ask = UserMessage.of("Read a.txt")
    call = AssistantMessage(api=None, parts=(ToolCallPart(tool_call_id="c1", tool_name="read_file", arguments="{}"),))
    results = ToolResultsMessage(results=(ToolResult.of("c1", "read_file", "hello"),))
    steer = UserMessage.of("Also b.txt")
    joined = anthropic_provider.build_params(_request([ask, call, results, steer]))["messages"]
    assert [m["role"] for m in joined] == ["user", "assistant", "user"]
    assert [b["type"] for b in joined[2]["content"]] == ["tool_result", "text"]
    assert joined[2]["content"][1]["cache_control"] == {"type": "ephemeral"} and "cache_control" not in joined[2]["content"][0]
    alone = anthropic_provider.build_params(_request([ask, call, results]))["messages"]
    assert alone[2]["content"] == [{"type": "tool_result", "tool_use_id": "c1", "content": "hello", "cache_control": {"type": "ephemeral"}}]
    assert "cache_control" not in alone[0]["content"][0]
    again = anthropic_provider.build_params(_request([ask, call, results, steer]))["messages"]
    assert again == joined and "cache_control" not in again[2]["content"][0]
