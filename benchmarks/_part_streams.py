"""The streamed bodies the provider benchmarks serve: one part of one kind, streamed in ``chunks``
deltas, in each API's own server-sent events.

``body(api, kind, chunks)``: ``api`` is ``chat`` (OpenAI Chat Completions), ``anthropic``
(Messages) or ``responses`` (OpenAI Responses); ``kind`` is

* ``text``: the answer's text (``benchmarks/provider_parsing.py``'s streams, a ``" token"`` a chunk);
* ``reasoning``: the model's reasoning, as each API streams it (Chat Completions'
  ``reasoning_content`` as DeepSeek, vLLM and LiteLLM send it; an Anthropic ``thinking`` block with
  its signature; a Responses ``reasoning`` item's summary text), a ``" token"`` a chunk;
* ``tool-arguments``: one tool call's JSON arguments, a few characters a chunk (``{"path": "``,
  then ``"ab"``s, then ``"}``: valid JSON once joined).

Each body opens and finishes a response as the API does, so a provider reads it as a real stream.
"""

from __future__ import annotations

from benchmarks.provider_parsing import _anthropic_stream, _chat_stream, _responses_stream, _sse

KINDS = ("text", "reasoning", "tool-arguments")
APIS = ("chat", "anthropic", "responses")

_TOKEN = " token"


def _arguments(chunks: int) -> list[str]:
    """``chunks`` pieces of one tool call's JSON arguments."""
    return ['{"path": "', *["ab"] * max(chunks - 2, 0), '"}'][:chunks]


def body(api: str, kind: str, chunks: int) -> list[bytes]:
    """The SSE body (one piece per network read) of ``kind`` streamed in ``chunks`` deltas by ``api``."""
    if kind == "text":
        return {"chat": _chat_stream, "anthropic": _anthropic_stream, "responses": _responses_stream}[api](chunks)
    if kind not in KINDS:
        raise SystemExit(f"no stream of kind {kind!r}: pick of {', '.join(KINDS)}")
    return {"chat": _chat, "anthropic": _anthropic, "responses": _responses}[api](kind, chunks)


def _chat(kind: str, chunks: int) -> list[bytes]:
    envelope = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1", "system_fingerprint": "fp"}

    def chunk(delta: dict, finish: str | None = None) -> tuple[None, dict]:
        return None, {**envelope, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    if kind == "reasoning":
        deltas = [chunk({"role": "assistant", "content": None, "reasoning_content": _TOKEN})]
        deltas += [chunk({"reasoning_content": _TOKEN})] * (chunks - 1)
        finish = "stop"
    else:
        pieces = _arguments(chunks)
        deltas = [chunk({"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": "call_1", "type": "function", "function": {"name": "read", "arguments": pieces[0]}}]})]
        deltas += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}) for piece in pieces[1:]]
        finish = "tool_calls"
    events: list[tuple[str | None, dict | str]] = [*deltas, chunk({}, finish), (None, "[DONE]")]
    return _sse(events)


def _anthropic(kind: str, chunks: int) -> list[bytes]:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 1}}
    if kind == "reasoning":
        block: dict = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": _TOKEN}] * chunks + [{"type": "signature_delta", "signature": "c2ln"}]
        stop = "end_turn"
    else:
        block = {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in _arguments(chunks)]
        stop = "tool_use"
    events: list[tuple[str | None, dict | str]] = [
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
        *(("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}) for delta in deltas),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": chunks}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return _sse(events)


def _responses(kind: str, chunks: int) -> list[bytes]:
    response = {"id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-5", "output": [], "status": "in_progress",
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}
    usage = {"input_tokens": 5, "output_tokens": chunks, "total_tokens": chunks + 5,
             "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}
    if kind == "reasoning":
        item: dict = {"id": "rs_1", "type": "reasoning", "summary": []}
        done = {**item, "summary": [{"type": "summary_text", "text": _TOKEN * chunks}]}
        opening = [("response.reasoning_summary_part.added", {
            "type": "response.reasoning_summary_part.added", "item_id": "rs_1", "output_index": 0, "summary_index": 0,
            "part": {"type": "summary_text", "text": ""}, "sequence_number": 2})]
        delta = {"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 0,
                 "delta": _TOKEN, "sequence_number": 7}
        deltas = [(delta["type"], delta)] * chunks
    else:
        item = {"id": "fc_1", "type": "function_call", "status": "in_progress", "call_id": "call_1", "name": "read", "arguments": ""}
        pieces = _arguments(chunks)
        done = {**item, "status": "completed", "arguments": "".join(pieces)}
        opening = []
        deltas = [("response.function_call_arguments.delta", {
            "type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 0, "delta": piece,
            "sequence_number": 7}) for piece in pieces]
    events: list[tuple[str | None, dict | str]] = [
        ("response.created", {"type": "response.created", "sequence_number": 0, "response": response}),
        ("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item}),
        *opening,
        *deltas,
        ("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 8, "output_index": 0, "item": done}),
        ("response.completed", {"type": "response.completed", "sequence_number": 9,
                                "response": {**response, "status": "completed", "output": [done], "usage": usage}}),
    ]
    return _sse(events)
