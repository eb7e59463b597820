"""Every recorded stream cassette read call by call through its vendor's provider, as plain JSON.

``read_calls(name, bare=...)`` replays cassette ``name`` (``cassettes/<name>.yaml``) on one client,
each recorded interaction one model call, and gives per call what a consumer saw: the events as
iterating the ``ModelStream`` gives them (``bare=False``) or as ``ModelStream.bare()`` gives them
(``bare=True``: bare deltas as the ``str`` itself), and the message the stream answered with.

``expected_calls.json`` beside this module holds what iterating gave on main 6b5c102, before
reasoning and tool-argument deltas came bare (written by running this module as a script in a
checkout of that commit): the tests compare today's streams, read either way, with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from providers import (
    AnthropicProvider,
    ModelRequest,
    OpenAIChatProvider,
    OpenAIResponsesProvider,
    StreamEventAdapter,
    UserMessage,
    replay_client,
)

CASSETTES = Path(__file__).resolve().parents[2] / "cassettes"
EXPECTED = Path(__file__).with_name("expected_calls.json")

STREAMS = {
    "anthropic/messages-stream-thinking-multiturn": AnthropicProvider,
    "anthropic/messages-stream-parallel-tool-use-multiturn": AnthropicProvider,
    "anthropic/messages-stream-text": AnthropicProvider,
    "anthropic/messages-stream-text-max-tokens": AnthropicProvider,
    "openai/chat-completions-stream-text-usage": OpenAIChatProvider,
    "openai/chat-completions-stream-parallel-tool-calls-2024": OpenAIChatProvider,
    "openai/chat-completions-stream-parallel-tool-calls-multiturn": OpenAIChatProvider,
    "openai/responses-stream-reasoning-summary-multiturn": OpenAIResponsesProvider,
    "openai/responses-stream-parallel-function-calls-multiturn": OpenAIResponsesProvider,
}
"""Every recorded stream cassette (the two others record an error status, which streams nothing) and its provider."""


async def read_calls(name: str, *, bare: bool) -> list[dict[str, Any]]:
    """Each recorded call of cassette ``name``: ``{"events": [...], "message": {...}}`` (events as
    JSON, a bare delta as ``{"bare": content}``)."""
    client, transport = replay_client(CASSETTES / f"{name}.yaml")
    provider = STREAMS[name](api_key="test-key", http_client=client)
    calls = []
    for _ in transport.interactions:
        stream = provider.stream(ModelRequest(model="recorded", messages=(UserMessage.of("hi"),)))
        async with contextlib.aclosing(stream):
            events = [event async for event in (stream.bare() if bare else stream)]
        calls.append({
            "events": [{"bare": e} if type(e) is str else StreamEventAdapter.dump_python(e, mode="json") for e in events],
            "message": stream.message().model_dump(mode="json"),
        })
    return calls


async def _all() -> dict[str, list[dict[str, Any]]]:
    return {name: await read_calls(name, bare=False) for name in STREAMS}


def _dumped(calls: dict[str, list[dict[str, Any]]]) -> str:
    """``calls`` as JSON with one event a line (a diff shows which event changed)."""
    def one(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    return "{\n" + ",\n".join(
        f"{one(name)}: [\n" + ",\n".join(
            '{"message": ' + one(call["message"]) + ',\n "events": [\n  ' + ",\n  ".join(map(one, call["events"])) + "]}"
            for call in called) + "]"
        for name, called in calls.items()) + "\n}\n"


if __name__ == "__main__":  # in a checkout of the commit the expectations are to record
    EXPECTED.write_text(_dumped(asyncio.run(_all())))
    print(f"wrote {EXPECTED}", file=sys.stderr)
