"""Every vendored cassette replayed through the real SDK into a real host, as a client sees it:
the exact AHP action sequence, the final turn state, and (turn two) what was sent back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import FrameChecker

from .harness import CASSETTES, Recorder, config_for, idle, ready_session, run_turn, serving

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MODELS = {
    "chat-text": "openai/chat-completions-stream-text-usage.yaml",
    "chat-2024": "openai/chat-completions-stream-parallel-tool-calls-2024.yaml",
    "chat-multi": "openai/chat-completions-stream-parallel-tool-calls-multiturn.yaml",
    "resp-reasoning": "openai/responses-stream-reasoning-summary-multiturn.yaml",
    "resp-tools": "openai/responses-stream-parallel-function-calls-multiturn.yaml",
    "openai-404": "openai/error-404-model-not-found-gzip-body.yaml",
    "claude-text": "anthropic/messages-stream-text.yaml",
    "claude-max": "anthropic/messages-stream-text-max-tokens.yaml",
    "claude-thinking": "anthropic/messages-stream-thinking-multiturn.yaml",
    "claude-tools": "anthropic/messages-stream-parallel-tool-use-multiturn.yaml",
    "claude-401": "anthropic/error-401-authentication-error-stream-request.yaml",
}
TOML = "[agents.rec]\nkind = \"replay\"\nmodels = [\n" + "".join(
    f'  {{id = "{model}", cassette = "{CASSETTES / path}"}},\n' for model, path in MODELS.items()
) + "]\n"

TOOL_ROUND = [
    "session/usage",
    "session/toolCallReady",
    "session/toolCallReady",
    "session/toolCallComplete",
    "session/toolCallComplete",
]


def recorded_body(path: str, index: int) -> dict:
    data = yaml.safe_load((CASSETTES / path).read_text())
    return json.loads(data["interactions"][index]["request"]["body"])


def shape(recorder: Recorder) -> list:
    """The compact sequence without activity changes; part ids replaced by their kind."""
    out = []
    for item in recorder.compact():
        if item == "session/activityChanged" or item == "session/titleChanged":
            continue
        if isinstance(item, tuple):
            out.append((item[0], item[2]))
        else:
            out.append(item)
    return out


@pytest.fixture
async def replay(tmp_path: Path, frame_checker: FrameChecker):
    # The recorded requests had no <environment> preamble; the tests compare sent bodies to them.
    async with serving(config_for(tmp_path, toml=TOML, sessions={"offline_agent": False, "preamble": False}), frame_checker) as pair:
        yield pair


async def start(client, model: str):
    session = await ready_session(client, provider="rec", model=model)
    return session, Recorder(client, session)


async def test_chat_completions_text_streams_deltas_then_usage(replay) -> None:
    _, client = replay
    session, recorder = await start(client, "chat-text")
    turn = await run_turn(client, session, "What is 4200 + 42?")
    await idle(client, session)
    assert shape(recorder) == [
        "session/turnStarted",
        "session/responsePart",
        ("session/delta", "4200 + 42 equals 4242."),
        "session/usage",
        "session/turnComplete",
    ]
    assert turn["state"] == "complete"
    assert [(p["kind"], p["content"]) for p in turn["responseParts"]] == [("markdown", "4200 + 42 equals 4242.")]
    assert turn["usage"] == {"inputTokens": 16, "outputTokens": 10, "model": "gpt-4o-2024-08-06"}
    assert "activity" not in client.state(session)["summary"]


@pytest.mark.parametrize(
    ("model", "calls", "answer_start", "usage"),
    [
        ("chat-multi", [("call_M26z19sncd7b4LBgzKRRbaUE", '{"password": "mellon"}'), ("call_KPXe5NX7IcKkaBUhc6dto2QV", '{"password": "radiance"}')],
         "The secrets associated with the passwords are:", (224, 81)),
        ("resp-tools", [("call_sKC7OABqf2A2PTLCm0CLeRWV", '{"password":"mellon"}'), ("call_OdR3s3xop0vtgkDyWRMLafuH", '{"password":"radiance"}')],
         "Here are the secrets associated with each password:", (172, 86)),
    ],
)
async def test_openai_parallel_tool_calls_run_and_the_answer_follows(replay, model, calls, answer_start, usage) -> None:
    _, client = replay
    session, recorder = await start(client, model)
    turn = await run_turn(client, session, "Please retrieve the secrets associated with each of these passwords: mellon,radiance")
    await idle(client, session)
    sequence = shape(recorder)
    assert sequence[:5] == [
        "session/turnStarted",
        "session/toolCallStart",
        ("session/toolCallDelta", calls[0][1]),
        "session/toolCallStart",
        ("session/toolCallDelta", calls[1][1]),
    ]
    assert sequence[5:10] == TOOL_ROUND
    assert sequence[10] == "session/responsePart"
    assert sequence[11][0] == "session/delta" and sequence[11][1].startswith(answer_start)
    assert sequence[12:] == ["session/usage", "session/turnComplete"]
    tool_parts = [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]
    assert [(c["toolCallId"], c["toolInput"], c["status"]) for c in tool_parts] == [(i, a, "completed") for i, a in calls]
    assert [c["content"][0]["text"] for c in tool_parts] == ["Welcome to Moria!", "Life before Death"]
    assert (turn["usage"]["inputTokens"], turn["usage"]["outputTokens"]) == usage  # summed over both calls


async def test_chat_completions_2024_tool_calls_then_the_recording_ends_with_a_clear_error(replay) -> None:
    _, client = replay
    session, recorder = await start(client, "chat-2024")
    turn = await run_turn(client, session, "What's the weather in Seattle and San Francisco today?")
    assert shape(recorder)[:10] == [
        "session/turnStarted",
        "session/toolCallStart",
        ("session/toolCallDelta", '{"location": "Seattle, WA"}'),
        "session/toolCallStart",
        ("session/toolCallDelta", '{"location": "San Francisco, CA"}'),
        *TOOL_ROUND,
    ]
    assert turn["state"] == "error"
    assert turn["error"]["errorType"] == "recording_ended"
    assert "Send another message" in turn["error"]["message"]


async def test_responses_reasoning_summary_streams_as_a_reasoning_part_and_turn_two_sends_the_item_back(replay) -> None:
    running, client = replay
    session, recorder = await start(client, "resp-reasoning")
    turn = await run_turn(client, session, "How many primes below 400 contain 79 as a substring?")
    sequence = shape(recorder)
    assert [s if isinstance(s, str) else s[0] for s in sequence] == [
        "session/turnStarted",
        "session/responsePart",
        "session/reasoning",
        "session/responsePart",
        "session/delta",
        "session/usage",
        "session/turnComplete",
    ]
    summaries = [s["text"] for s in recorded_body(MODELS["resp-reasoning"], 1)["input"][1]["summary"]]
    reasoning, text = turn["responseParts"]
    assert (reasoning["kind"], reasoning["content"]) == ("reasoning", "\n\n".join(summaries))
    assert (text["kind"], text["content"]) == ("markdown", "3")
    assert reasoning["id"] != text["id"]
    assert turn["usage"] == {"inputTokens": 32, "outputTokens": 839, "model": "gpt-5-2025-08-07", "_meta": {"reasoningTokens": 832}}

    await run_turn(client, session, "If you remember what the primes were, then share them, or say 'I don't remember.'")
    transport = running.host.agents["rec"].source.transport_for(running.host.session_uri(session), "resp-reasoning")
    sent = json.loads(transport.requests[1].content)
    assert sent["input"][1:3] == recorded_body(MODELS["resp-reasoning"], 1)["input"][1:3]  # reasoning + message items verbatim


async def test_anthropic_thinking_signature_is_sent_back_unchanged_on_turn_two(replay) -> None:
    running, client = replay
    session, recorder = await start(client, "claude-thinking")
    first = await run_turn(client, session, "How many primes below 400 contain 79 as a substring?")
    assert [s if isinstance(s, str) else s[0] for s in shape(recorder)] == [
        "session/turnStarted",
        "session/responsePart",
        "session/reasoning",
        "session/responsePart",
        "session/delta",
        "session/usage",
        "session/turnComplete",
    ]
    assert [p["kind"] for p in first["responseParts"]] == ["reasoning", "markdown"]
    assert first["responseParts"][0]["content"].startswith('I need to find all prime numbers below 400 that contain "79"')
    assert first["usage"] == {"inputTokens": 67, "outputTokens": 1193, "model": "claude-sonnet-4-20250514"}

    second = await run_turn(client, session, "If you remember what the primes were, then share them, or say 'I don't remember.'")
    transport = running.host.agents["rec"].source.transport_for(running.host.session_uri(session), "claude-thinking")
    sent = json.loads(transport.requests[1].content)
    recorded_assistant = recorded_body(MODELS["claude-thinking"], 1)["messages"][1]
    assert sent["messages"][1] == recorded_assistant  # thinking block with its 3312-char signature, unchanged
    assert len(sent["messages"][1]["content"][0]["signature"]) == 3312
    assert second["state"] == "complete"
    assert second["responseParts"][1]["content"] == "The primes were: 79, 179, and 379."


async def test_anthropic_text_and_max_tokens(replay) -> None:
    _, client = replay
    session, recorder = await start(client, "claude-text")
    turn = await run_turn(client, session, "Tell me a joke about OpenTelemetry")
    assert [s if isinstance(s, str) else s[0] for s in shape(recorder)] == [
        "session/turnStarted", "session/responsePart", "session/delta", "session/usage", "session/turnComplete",
    ]
    assert turn["responseParts"][0]["content"].startswith("Here's an OpenTelemetry-themed joke for you:")
    assert turn["usage"] == {"inputTokens": 17, "outputTokens": 171, "model": "claude-3-haiku-20240307"}

    session, recorder = await start(client, "claude-max")
    turn = await run_turn(client, session, "List all U.S. states.")
    assert [s if isinstance(s, str) else s[0] for s in shape(recorder)] == [
        "session/turnStarted", "session/responsePart", "session/delta", "session/usage", "session/responsePart", "session/turnComplete",
    ]
    assert turn["state"] == "complete" and turn["usage"]["outputTokens"] == 50
    note = turn["responseParts"][-1]
    assert note["kind"] == "systemNotification" and "output limit" in note["content"]


async def test_anthropic_parallel_tool_use_then_answer_and_the_results_go_back_as_tool_results(replay) -> None:
    running, client = replay
    session, recorder = await start(client, "claude-tools")
    turn = await run_turn(client, session, "Please retrieve the secrets associated with each of these passwords: mellon,radiance")
    assert shape(recorder)[:11] == [
        "session/turnStarted",
        "session/responsePart",
        ("session/delta", "I'll retrieve the secrets for both passwords you provided."),
        "session/toolCallStart",
        ("session/toolCallDelta", '{"password": "mellon"}'),
        "session/toolCallStart",
        ("session/toolCallDelta", '{"password": "radiance"}'),
        *TOOL_ROUND[:4],
    ]
    assert turn["state"] == "complete"
    assert [p["kind"] for p in turn["responseParts"]] == ["markdown", "toolCall", "toolCall", "markdown"]
    assert turn["usage"] == {"inputTokens": 1018, "outputTokens": 161, "model": "claude-sonnet-4-20250514"}
    transport = running.host.agents["rec"].source.transport_for(running.host.session_uri(session), "claude-tools")
    sent = json.loads(transport.requests[1].content)
    recorded = recorded_body(MODELS["claude-tools"], 1)["messages"]
    assert sent["messages"][1] == recorded[1]
    assert [(b["tool_use_id"], b["content"]) for b in sent["messages"][2]["content"]] == [
        (b["tool_use_id"], b["content"]) for b in recorded[2]["content"]
    ]


@pytest.mark.parametrize(
    ("model", "error_type", "words"),
    [("openai-404", "model_not_found", "this-model-does-not-exist-12345"), ("claude-401", "authentication", "invalid x-api-key")],
)
async def test_recorded_http_errors_end_the_turn_with_a_typed_error(replay, model, error_type, words) -> None:
    _, client = replay
    session, recorder = await start(client, model)
    turn = await run_turn(client, session, "hello")
    await idle(client, session)
    assert shape(recorder) == ["session/turnStarted", "session/error"]
    assert turn["state"] == "error"
    assert turn["error"]["errorType"] == error_type
    assert words in turn["error"]["message"]
    assert "Traceback" not in turn["error"]["message"]


async def test_a_message_for_a_model_the_agent_does_not_list_ends_its_turn_saying_which_models_there_are(replay) -> None:
    """A 0.9.0 client may name any model in ``message.model``: one the agent does not list ends the
    turn with ``model_not_found`` and the agent's models, never an internal error."""
    import uuid

    from ahp.state import default_chat_uri
    from tests.host.test_vscode import Peer

    running, _ = replay
    session = f"rec:/{uuid.uuid4()}"
    chat = default_chat_uri(session)
    peer = await Peer.open(running)
    await peer.initialize("client-09", ["0.9.0"])
    assert (await peer.request("createSession", {"channel": session})).get("error") is None
    await peer.request("subscribe", {"channel": chat})
    await peer.until(lambda: running.host.store.state(session)["lifecycle"] == "ready" or None)
    await peer.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {"channel": chat, "clientSeq": 1, "action": {
        "type": "chat/turnStarted", "turnId": "t1", "startedAt": "2026-12-06T00:00:00.000Z",
        "message": {"text": "hi", "origin": {"kind": "user"}, "model": {"id": "no-such-model"}}}}})
    end = await peer.until(lambda: next((a["action"] for a in peer.actions()
                                         if a["action"]["type"] in ("chat/turnComplete", "chat/error")), None), timeout=30)
    assert end["type"] == "chat/error"
    assert end["part"]["error"]["errorType"] == "model_not_found"
    assert end["part"]["error"]["message"] == ("This replay agent has no recording for the model 'no-such-model'; pick one "
                                               "of its models: " + ", ".join(sorted(MODELS)) + ".")
    await peer.close()
