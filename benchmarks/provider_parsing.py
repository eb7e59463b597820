"""What each SDK costs per streamed chunk, against decoding the same chunk as a plain dict.

    .venv/bin/python benchmarks/provider_parsing.py [--chunks 20000] [--repeat 3]

For one typical text-delta event of each API (OpenAI Chat Completions, OpenAI Responses, Anthropic
Messages) it times what the SDK does with an SSE ``data`` line: ``json.loads`` then the SDK's own
``construct_type`` into its typed model (what ``AsyncStream`` does per event), against
``orjson.loads`` alone (what ``providers._sse`` does). Microseconds per chunk, median of
``--repeat``; the ratio says how much of a token's cost parsing is.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import orjson  # noqa: E402

from benchmarks._runs import machine_note, median  # noqa: E402

CHAT = json.dumps({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1",
                   "system_fingerprint": "fp", "choices": [{"index": 0, "delta": {"content": " token"}, "logprobs": None,
                                                           "finish_reason": None}]})
RESPONSES = json.dumps({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
                        "delta": " token", "sequence_number": 7, "logprobs": []})
ANTHROPIC = json.dumps({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " token"}})


def _time(parse, line: str, chunks: int) -> float:
    started = time.perf_counter()
    for _ in range(chunks):
        parse(line)
    return (time.perf_counter() - started) / chunks * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    import anthropic.types
    import openai.types.chat
    import openai.types.responses
    from anthropic._models import construct_type as anthropic_construct
    from openai._models import construct_type as openai_construct

    cases = [
        ("OpenAI Chat Completions", CHAT,
         lambda line: openai_construct(type_=openai.types.chat.ChatCompletionChunk, value=json.loads(line))),
        ("OpenAI Responses", RESPONSES,
         lambda line: openai_construct(type_=openai.types.responses.ResponseStreamEvent, value=json.loads(line))),
        ("Anthropic Messages", ANTHROPIC,
         lambda line: anthropic_construct(type_=anthropic.types.RawMessageStreamEvent, value=json.loads(line))),
    ]
    print(f"per streamed chunk, {args.chunks} chunks, median of {args.repeat}; {machine_note()}")
    print(f"{'API':<26}{'SDK model (us)':>15}{'orjson dict (us)':>18}{'ratio':>8}")
    for name, line, sdk in cases:
        sdk_runs, lean_runs = [], []
        for _ in range(args.repeat):
            sdk_runs.append(_time(sdk, line, args.chunks))
            lean_runs.append(_time(orjson.loads, line, args.chunks))
        s, lean = median(sdk_runs), median(lean_runs)
        print(f"{name:<26}{s:>15.1f}{lean:>18.2f}{s / lean:>8.0f}")


if __name__ == "__main__":
    main()
