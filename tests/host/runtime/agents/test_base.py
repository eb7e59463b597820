"""host.runtime.agents.base.TurnContext: a streamed part's appender emits what ``emit`` would, and
nothing once the turn is over."""

from __future__ import annotations

from typing import Any

import pytest

from ahp.protocol import builders
from ahp.state.appends import run_key
from host.runtime.agents.base import TurnContext, TurnEnded


def _context(active: list[str], lean: bool) -> tuple[TurnContext, list[tuple[str, dict[str, Any]]]]:
    sent: list[tuple[str, dict[str, Any]]] = []

    def streamed(channel: str, action: dict[str, Any], key: Any, turn: str) -> dict[str, Any] | None:
        """``Store.dispatch_streamed``'s contract: nothing dispatched, None, unless ``turn`` is active."""
        if active[-1] != turn:
            return None
        sent.append((channel, {**action, "lean": key == run_key(action)}))
        return action

    ctx = TurnContext(
        session="p:/s", turn_id="t1", message={"text": "hi"},
        _dispatch=lambda channel, action: sent.append((channel, action)),
        _state=lambda: {},
        _active_turn_id=lambda: active[-1],
        _dispatch_streamed=streamed if lean else None,
    )
    return ctx, sent


@pytest.mark.parametrize("lean", [False, True])
def test_an_appender_emits_each_chunk_as_its_builder_makes_it_until_the_turn_is_over(lean: bool) -> None:
    active = ["t1"]
    ctx, sent = _context(active, lean)
    text = ctx.appender("chat/delta", "partId", "t1:text-1")
    tool = ctx.appender("chat/toolCallDelta", "toolCallId", "call-1")
    text("Hel")
    tool('{"a"')
    marked = {"lean": True} if lean else {}
    assert sent == [
        (ctx.chat, {**builders.chat_delta(turn_id="t1", part_id="t1:text-1", content="Hel"), **marked}),
        (ctx.chat, {**builders.chat_tool_call_delta(turn_id="t1", tool_call_id="call-1", content='{"a"'), **marked}),
    ]
    assert list(sent[0][1])[:4] == ["type", "turnId", "partId", "content"]  # the key order the wire shows
    active.append("t2")  # cancelled, another turn started
    with pytest.raises(TurnEnded):
        text("lo")
    assert len(sent) == 2
