"""Helpers shared by provider tests: cassette paths and stream collection."""

from __future__ import annotations

from pathlib import Path

from providers import StreamAccumulator

CASSETTES = Path(__file__).resolve().parents[2] / "cassettes"


def cassette(name: str) -> Path:
    return CASSETTES / name


async def collect(provider, request):
    """All events of one call and the message built from them."""
    acc = StreamAccumulator(api=provider.api)
    events = []
    async for event in provider.stream(request):
        acc.apply(event)
        events.append(event)
    return events, acc.message()


def summarize(events) -> list[tuple]:
    """Events with consecutive deltas of one part joined: easy to compare exactly."""
    out: list[tuple] = []
    for event in events:
        match event.kind:
            case "part_start":
                out.append(("start", event.index, event.part_kind, event.tool_call_id, event.tool_name))
            case "part_delta":
                if out and out[-1][0] == "delta" and out[-1][1] == event.index:
                    out[-1] = ("delta", event.index, out[-1][2] + event.content)
                else:
                    out.append(("delta", event.index, event.content))
            case "part_end":
                out.append(("end", event.index))
            case "usage":
                u = event.usage
                out.append(("usage", u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.reasoning_tokens))
            case "finish":
                out.append(("finish", event.reason, event.raw_reason, event.response_id, event.model))
    return out
