"""host.runtime.agents.budget: one turn's requests are made to fit the context window, step by step,
and a request the provider refuses as too long is refitted once. Compaction is a callback here, so
these tests see which steps ran and what each request holds."""

from __future__ import annotations

from collections.abc import Sequence

from host.runtime.agents.budget import ELIDED_NOTE, ContextBudget
from host.runtime.agents.context import TokenMeter, estimate_tokens
from providers import (
    AssistantMessage,
    Message,
    ModelRequest,
    ToolCallPart,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
)
from tools.base import Tool

LONG = "x" * 4_000  # about 1,000 tokens by the host's estimate


def _round(n: int) -> list[Message]:
    call = ToolCallPart(tool_call_id=f"c{n}", tool_name="read", arguments="{}")
    return [AssistantMessage(parts=(call,)), ToolResultsMessage(results=(ToolResult.of(f"c{n}", "read", LONG),))]


class Turn:
    """A turn's side of the budget: its messages, the past as compaction leaves it, what was asked."""

    def __init__(self, messages: list[Message], *, past: int, compacts: bool = True) -> None:
        self.messages = messages
        self.past: list[Message] = [UserMessage.of(LONG) for _ in range(past)]
        self.compacts = compacts
        self.compacted: list[int] = []
        self.notes: list[str] = []

    async def compact(self, keep: int) -> bool:
        self.compacted.append(keep)
        if not self.compacts:
            return False
        self.past = [UserMessage.of("summary"), *self.past[len(self.past) - keep:]] if keep else [UserMessage.of("summary")]
        return True

    def budget(self, limit: int | None, meter: TokenMeter | None = None) -> ContextBudget:
        def compose(messages: Sequence[Message], offered: dict[str, Tool]) -> ModelRequest:
            return ModelRequest(model="m", messages=tuple(messages))

        return ContextBudget(messages=self.messages, compose=compose, past=lambda: list(self.past), compact=self.compact,
                             notify=self.notes.append, meter=meter or TokenMeter(), limit=limit, keep_recent=2)


def _texts(request: ModelRequest) -> list[str]:
    out = []
    for message in request.messages:
        if isinstance(message, UserMessage):
            out.append(message.text[:10])
        elif isinstance(message, ToolResultsMessage):
            out.append(message.results[0].text[:10])
    return out


async def test_a_request_within_the_budget_is_sent_as_built() -> None:
    turn = Turn([UserMessage.of("hi")], past=3)
    request = await turn.budget(10_000).fit({})
    assert len(request.messages) == 4 and turn.compacted == [] and turn.notes == []


async def test_without_a_known_window_nothing_is_compacted() -> None:
    turn = Turn([UserMessage.of("hi")], past=30)
    await turn.budget(None).fit({})
    assert turn.compacted == []


async def test_older_turns_are_compacted_first_keeping_the_latest_ones() -> None:
    turn = Turn([UserMessage.of("hi")], past=6)
    request = await turn.budget(3_500).fit({})
    assert turn.compacted == [2]  # keeping two turns made enough room: the next step did not run
    assert _texts(request) == ["summary", "x" * 10, "x" * 10, "hi"]
    assert estimate_tokens(request) <= 3_500


async def test_all_older_turns_are_compacted_when_keeping_the_latest_is_not_enough() -> None:
    turn = Turn([UserMessage.of("hi")], past=6)
    request = await turn.budget(1_500).fit({})
    assert turn.compacted == [2, 0]
    assert _texts(request) == ["summary", "hi"]


async def test_this_turns_older_tool_output_is_left_out_last_and_the_user_is_told() -> None:
    turn = Turn([UserMessage.of("hi"), *_round(1), *_round(2), *_round(3)], past=0, compacts=False)
    request = await turn.budget(1_500).fit({})
    assert turn.compacted == [2, 0]
    assert _texts(request) == ["hi", "[Output el", "x" * 10, "x" * 10]  # the last two rounds whole
    assert turn.notes == [ELIDED_NOTE]
    assert turn.messages[2].results[0].text == LONG  # the turn's own messages keep everything


async def test_a_request_refused_as_too_long_is_refitted_once_with_one_round_of_tool_output() -> None:
    turn = Turn([UserMessage.of("hi"), *_round(1), *_round(2)], past=2)
    meter = TokenMeter()
    budget = turn.budget(100_000, meter)
    meter.record(await budget.fit({}), 90_000, 10)
    retry = await budget.refit({})
    assert retry is not None and turn.compacted == [0]
    assert _texts(retry) == ["summary", "hi", "[Output el", "x" * 10]
    assert meter.input_tokens == 0  # what the refused request reported no longer counts
    assert await budget.refit({}) is None  # the second refusal is the caller's to report
