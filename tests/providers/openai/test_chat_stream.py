"""providers.openai.chat_stream: a text chunk read the short way gives what the general way gives."""

from __future__ import annotations

from typing import Any

from providers.events import PartDelta, PartEnd, PartStart
from providers.openai.chat_stream import ChatStreamTranslator


class _GeneralOnly(ChatStreamTranslator):
    """The translator with its short way for text chunks never taken."""

    @property  # type: ignore[override]
    def _writing(self) -> bool:
        return False

    @_writing.setter
    def _writing(self, value: bool) -> None:
        pass


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "delta": delta if delta is not None else {}, "finish_reason": finish}
    return {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice], **extra}


CHUNKS = [
    chunk({"role": "assistant", "content": ""}),
    chunk({"content": "Hel"}),
    chunk({"role": "assistant", "content": "lo"}),
    chunk({"content": " there", "tool_calls": None}),
    chunk({"reasoning_content": "hmm"}),
    chunk({"content": "again"}),
    chunk({"content": "x", "reasoning": "y"}),
    chunk({"content": ""}),
    {**chunk({"content": "usage rides along"}), "usage": {"prompt_tokens": 3, "completion_tokens": 2}},
    {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
     "choices": [{"index": 1, "delta": {"content": "choice 1"}, "finish_reason": None}]},
    chunk({"content": "more"}),
    chunk({"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f", "arguments": "{}"}}]}),
    chunk({"content": "after the call"}),
    chunk({"content": "!"}, "stop"),
    chunk({"content": "late"}),
]


def feed_all(translator: ChatStreamTranslator) -> list[Any]:
    events: list[Any] = []
    for item in CHUNKS:
        events += translator.feed(item)
    return [*events, *translator.close()]


def test_text_chunks_give_the_same_events_whichever_way_they_are_read() -> None:
    short = ChatStreamTranslator(api="openai-chat", provider="openai")
    general = _GeneralOnly(api="openai-chat", provider="openai")
    events = feed_all(short)
    assert events == feed_all(general)
    assert short.acc.message() == general.acc.message()
    text = [e.content for e in events if isinstance(e, PartDelta) and e.part_kind == "text"]
    assert text[:4] == ["Hel", "lo", " there", "again"]
    assert [type(e) for e in events[:2]] == [PartStart, PartDelta]
    assert any(isinstance(e, PartEnd) for e in events)
