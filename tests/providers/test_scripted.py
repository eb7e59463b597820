"""ScriptedProvider: plays scripts, records requests, pauses on events, raises scripted errors."""

from __future__ import annotations

import asyncio

import pytest

from providers import ModelRequest, Pause, RateLimitError, ScriptedProvider, UserMessage
from providers.scripted import ScriptExhaustedError, call_tools, reply, text

from .streams import collect, summarize

REQUEST = ModelRequest(model="m", system="be brief", messages=(UserMessage.of("hi"),))


async def test_plays_scripts_in_order_and_records_requests():
    provider = ScriptedProvider([call_tools(("read", {"path": "a"}), text_before="Let me look."), reply("Done.", reasoning_text="easy")])
    events, message = await collect(provider, REQUEST)
    assert [(c.tool_name, c.parsed_arguments()) for c in message.tool_calls] == [("read", {"path": "a"})]
    assert events[-1].reason == "tool_calls"
    events2, message2 = await collect(provider, REQUEST)
    assert [p.kind for p in message2.parts] == ["reasoning", "text"] and message2.text == "Done."
    assert [r.system for r in provider.requests] == ["be brief", "be brief"]
    with pytest.raises(ScriptExhaustedError):
        await collect(provider, REQUEST)


async def test_pause_waits_for_an_event_between_steps():
    gate = asyncio.Event()
    provider = ScriptedProvider([[*text(["a"], index=0)[:2], Pause(event=gate), *text(["a"], index=0)[2:]]])
    seen = []

    async def consume():
        async for event in provider.stream(REQUEST):
            seen.append(event.kind)

    task = asyncio.create_task(consume())
    while len(seen) < 2:
        await asyncio.sleep(0)
    assert seen == ["part_start", "part_delta"] and not task.done()
    gate.set()
    await asyncio.wait_for(task, timeout=5)
    assert seen[-1] == "part_end"


async def test_scripted_error_is_raised_mid_stream():
    provider = ScriptedProvider([[*text("partial", index=0)[:2], RateLimitError("slow down", retry_after=2)]])
    seen = []
    with pytest.raises(RateLimitError) as caught:
        async for event in provider.stream(REQUEST):
            seen.append(event)
    assert caught.value.retry_after == 2 and summarize(seen) == [("start", 0, "text", None, None), ("delta", 0, "partial")]


async def test_respond_function_sees_the_request():
    provider = ScriptedProvider(respond=lambda request: reply(f"you said {request.messages[-1].text}"))
    _, message = await collect(provider, REQUEST)
    assert message.text == "you said hi"
