"""Provider faults through a real host against a local fake provider HTTP server: retries with
backoff only before anything streamed, typed errors, slow first byte, a stalled stream cancelled,
missing keys, and a record-then-replay round trip with no key material in the cassette."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.conftest import FrameChecker
from tests.providers.fake_server import FakeProviderServer, Reply, chat_sse

from .harness import Recorder, config_for, idle, ready_session, run_turn, serving

SECRET = "sk-test-SECRET-0123456789"


def fake_agent_toml(base_url: str, *, kind: str = "openai-chat", retries: int = 3, extra: str = "") -> str:
    return (
        f'[agents.fake]\nkind = "{kind}"\nbase_url = "{base_url}"\napi_key = "{SECRET}"\n'
        f'retries = {retries}\nretry_base_delay = 0.01\ntitle = "first-words"\n'
        'models = [{id = "fake-model", name = "Fake", context_window = 8000}]\n' + extra
    )


def error_body(message: str, kind: str = "server_error") -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "code": None}}).encode()


async def one_turn(tmp_path: Path, checker: FrameChecker, replies: list[Reply], **toml: object):
    async with FakeProviderServer(replies, base_path="/v1") as server:
        config = config_for(tmp_path, toml=fake_agent_toml(server.base_url, **toml))
        async with serving(config, checker) as (_, client):
            session = await ready_session(client, provider="fake")
            recorder = Recorder(client, session)
            turn = await run_turn(client, session, "hello there")
            await idle(client, session)
            return turn, recorder, server


async def test_429_with_retry_after_is_retried_then_succeeds(tmp_path: Path, frame_checker: FrameChecker) -> None:
    replies = [Reply(429, error_body("Rate limit reached", "requests"), {"retry-after": "0"}), Reply(200, chat_sse("Hi", " there"))]
    turn, recorder, server = await one_turn(tmp_path, frame_checker, replies)
    assert turn["state"] == "complete"
    assert turn["responseParts"][0]["content"] == "Hi there"
    assert turn["usage"] == {"inputTokens": 5, "outputTokens": 7, "model": "fake-model"}
    assert len(server.requests) == 2
    activities = [a.get("activity") for a in recorder.drain() if a["type"] == "session/activityChanged"]
    assert any(a and a.startswith("Retrying in 0.0 s") for a in activities)
    assert activities[-1] is None  # cleared at the end


async def test_500_is_retried_until_the_retries_run_out(tmp_path: Path, frame_checker: FrameChecker) -> None:
    replies = [Reply(500, error_body("The server had an error")) for _ in range(3)]
    turn, _, server = await one_turn(tmp_path, frame_checker, replies, retries=2)
    assert len(server.requests) == 3
    assert turn["state"] == "error"
    assert turn["error"]["errorType"] == "provider_unavailable"
    assert "tried 3 times" in turn["error"]["message"]


async def test_529_overloaded_from_anthropic_is_retried(tmp_path: Path, frame_checker: FrameChecker) -> None:
    overloaded = json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).encode()
    events = [
        ("message_start", {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "content": [], "stop_reason": None, "usage": {"input_tokens": 3, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Back again"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    body = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()
    async with FakeProviderServer([Reply(529, overloaded), Reply(200, body)], base_path="/v1") as server:
        config = config_for(tmp_path, toml=fake_agent_toml(server.base_url.removesuffix("/v1"), kind="anthropic"))
        async with serving(config, frame_checker) as (_, client):
            session = await ready_session(client, provider="fake")
            turn = await run_turn(client, session, "hello")
    assert turn["state"] == "complete" and turn["responseParts"][0]["content"] == "Back again"
    assert [s.path for s in server.requests] == ["/v1/messages", "/v1/messages"]
    sent = server.requests[0].headers
    assert SECRET in sent.get("x-api-key", "") + sent.get("authorization", "")


async def test_a_stream_cut_after_text_streamed_is_an_error_not_a_retry(tmp_path: Path, frame_checker: FrameChecker) -> None:
    body = chat_sse("Partial", " answer", " never arrives")
    cut = body.index(b"never") - 20
    turn, _, server = await one_turn(tmp_path, frame_checker, [Reply(200, body, cut_after=cut), Reply(200, chat_sse("retried"))])
    assert len(server.requests) == 1
    assert turn["state"] == "error"
    assert turn["error"]["errorType"] == "provider_unavailable"
    assert "did not retry" in turn["error"]["message"]
    assert turn["responseParts"][0]["content"] == "Partial answer"


async def test_a_slow_first_byte_shows_the_wait_and_then_streams(tmp_path: Path, frame_checker: FrameChecker) -> None:
    hold = asyncio.Event()
    async with FakeProviderServer([Reply(200, chat_sse("late"), hold=hold)], base_path="/v1") as server:
        async with serving(config_for(tmp_path, toml=fake_agent_toml(server.base_url)), frame_checker) as (_, client):
            session = await ready_session(client, provider="fake")
            client.send_message(session, "hi")
            await client.wait_for(lambda m, e: client.state(session)["summary"].get("activity") == "Waiting for fake-model")
            assert client.state(session)["activeTurn"]["responseParts"] == []
            hold.set()
            await client.wait_for(lambda m, e: len(client.state(session).get("turns") or []) == 1)
            await idle(client, session)
            assert client.state(session)["turns"][0]["responseParts"][0]["content"] == "late"


async def test_cancel_in_the_middle_of_a_stream_closes_the_provider_connection(tmp_path: Path, frame_checker: FrameChecker) -> None:
    stall = asyncio.Event()
    body = chat_sse("First words", finish="stop", usage=None).split(b"data: {\"id\": \"chatcmpl-fake\", \"object\": \"chat.completion.chunk\", \"created\": 1, \"model\": \"fake-model\", \"choices\": [{\"index\": 0, \"delta\": {}")[0]
    reply = Reply(200, body, stall=stall)
    async with FakeProviderServer([reply], base_path="/v1") as server:
        async with serving(config_for(tmp_path, toml=fake_agent_toml(server.base_url)), frame_checker) as (_, client):
            session = await ready_session(client, provider="fake")
            turn_id = client.send_message(session, "talk")
            await client.wait_for(
                lambda m, e: ((client.state(session).get("activeTurn") or {}).get("responseParts") or [{}])[0].get("content") == "First words"
            )
            client.cancel_turn(session, turn_id)
            await asyncio.wait_for(reply.closed.wait(), 10)  # the host hung up on the provider
            await idle(client, session)
            turn = client.state(session)["turns"][0]
    assert turn["state"] == "cancelled"
    assert turn["responseParts"][0]["content"] == "First words"


async def test_a_provider_without_its_key_is_listed_but_sessions_fail_naming_the_variable(tmp_path: Path, frame_checker: FrameChecker) -> None:
    toml = '[agents.claude]\nkind = "anthropic"\nmodels = [{id = "claude-sonnet-4-5", reasoning = "thinking", vision = true}]\n'
    async with serving(config_for(tmp_path, toml=toml, environ={}), frame_checker) as (_, client):
        agents = {a["provider"]: a for a in client.state("ahp-root://")["agents"]}
        model = agents["claude"]["models"][0]
        assert model["supportsVision"] is True
        assert model["configSchema"]["properties"]["thinking"]["enum"] == ["off", "low", "medium", "high"]
        session = await ready_session(client, provider="claude")
        state = client.state(session)
    assert state["lifecycle"] == "creationFailed"
    assert "ANTHROPIC_API_KEY" in state["creationError"]["message"]


async def test_a_key_from_the_environment_makes_the_provider_usable(tmp_path: Path, frame_checker: FrameChecker) -> None:
    async with FakeProviderServer([Reply(200, chat_sse("ok"))], base_path="/v1") as server:
        toml = f'[agents.local]\nkind = "openai"\nbase_url = "{server.base_url}"\napi_key_env = "MY_KEY"\ntitle = "first-words"\nmodels = [{{id = "m"}}]\n'
        async with serving(config_for(tmp_path, toml=toml, environ={"MY_KEY": SECRET}), frame_checker) as (_, client):
            session = await ready_session(client, provider="local")
            assert client.state(session)["lifecycle"] == "ready"
            turn = await run_turn(client, session, "hi")
    assert turn["state"] == "error"  # the fake speaks Chat Completions, not Responses
    assert server.requests[0].path == "/v1/responses"
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"


async def test_record_then_replay_round_trip_keeps_no_key_material(tmp_path: Path, frame_checker: FrameChecker) -> None:
    recordings = tmp_path / "recorded"
    async with FakeProviderServer([Reply(200, chat_sse("Recorded", " answer"), headers={"set-cookie": "session=abc123"})], base_path="/v1") as server:
        config = config_for(tmp_path, toml=fake_agent_toml(server.base_url), recording={"enabled": True, "directory": str(recordings)})
        async with serving(config, frame_checker) as (_, client):
            session = await ready_session(client, provider="fake")
            live = await run_turn(client, session, "record me")
    [cassette] = list(recordings.rglob("*.yaml"))
    assert cassette.relative_to(recordings).parts == ("fake", f"{session.split(':/')[1]}.yaml")  # one cassette per session
    text = cassette.read_text()
    assert SECRET not in text and "abc123" not in text and "set-cookie" not in text and "authorization" not in text

    replay_toml = f'[agents.again]\nkind = "replay"\ntitle = "first-words"\nmodels = [{{id = "fake-model", cassette = "{cassette}"}}]\n'
    async with serving(config_for(tmp_path / "second", toml=replay_toml), frame_checker) as (_, client):
        session = await ready_session(client, provider="again")
        replayed = await run_turn(client, session, "record me")
    assert replayed["responseParts"] == [{**live["responseParts"][0], "id": replayed["responseParts"][0]["id"]}]
    assert replayed["usage"] == live["usage"]


async def test_a_retry_after_longer_than_the_host_waits_fails_the_turn_with_advice(tmp_path: Path, frame_checker: FrameChecker) -> None:
    replies = [Reply(429, error_body("Rate limit reached", "requests"), {"retry-after": "3600"})]
    turn, _, server = await one_turn(tmp_path, frame_checker, replies)
    assert len(server.requests) == 1
    assert turn["error"]["errorType"] == "rate_limit"
    assert "3600 s" in turn["error"]["message"] and "send your message again later" in turn["error"]["message"]


async def test_text_streamed_before_a_cut_stream_is_what_the_model_sees_next_turn(tmp_path: Path, frame_checker: FrameChecker) -> None:
    body = chat_sse("Partial", " answer", " never arrives")
    cut = body.index(b"never") - 20
    async with FakeProviderServer([Reply(200, body, cut_after=cut), Reply(200, chat_sse("Sorry, again"))], base_path="/v1") as server:
        async with serving(config_for(tmp_path, toml=fake_agent_toml(server.base_url)), frame_checker) as (_, client):
            session = await ready_session(client, provider="fake")
            failed = await run_turn(client, session, "hello there")
            await idle(client, session)
            await run_turn(client, session, "try again")
            sent = server.requests[1].json()
    assert failed["state"] == "error"
    assert [(m["role"], m["content"]) for m in sent["messages"] if m["role"] != "system"] == [
        ("user", "hello there"),
        ("assistant", "Partial answer"),
        ("user", "try again"),
    ]


async def test_a_litellm_agent_is_recorded_and_its_cassette_replays(tmp_path: Path, frame_checker: FrameChecker) -> None:
    recordings = tmp_path / "recorded"
    toml = (
        f'[agents.lite]\nkind = "litellm"\napi_key = "{SECRET}"\ntitle = "first-words"\n'
        f'models = [{{id = "openai/fake-model", name = "Fake via LiteLLM"}}]\n'
    )
    async with FakeProviderServer([Reply(200, chat_sse("Through", " LiteLLM"))], base_path="/v1") as server:
        toml = toml.replace('kind = "litellm"\n', f'kind = "litellm"\nbase_url = "{server.base_url}/v1"\n')
        config = config_for(tmp_path, toml=toml, recording={"enabled": True, "directory": str(recordings)})
        async with serving(config, frame_checker) as (_, client):
            session = await ready_session(client, provider="lite")
            live = await run_turn(client, session, "record me")
    assert live["state"] == "complete", live.get("error")
    assert live["responseParts"][0]["content"] == "Through LiteLLM"
    [cassette] = list(recordings.rglob("*.yaml"))
    assert cassette.parts[-2:] == ("lite", f"{session.split(':/')[1]}.yaml")
    text = cassette.read_text()
    assert SECRET not in text and "authorization" not in text

    replay_toml = (f'[agents.again]\nkind = "replay"\ntitle = "first-words"\n'
                   f'models = [{{id = "openai/fake-model", cassette = "{cassette}"}}]\n')
    async with serving(config_for(tmp_path / "second", toml=replay_toml), frame_checker) as (_, client):
        session = await ready_session(client, provider="again")
        replayed = await run_turn(client, session, "record me")
    assert replayed["state"] == "complete"
    assert replayed["responseParts"][0]["content"] == "Through LiteLLM"
    assert replayed["usage"]["inputTokens"] == live["usage"]["inputTokens"] == 5


async def test_a_stream_that_stalls_after_text_ends_the_turn_with_the_stall_error(tmp_path: Path, frame_checker: FrameChecker) -> None:
    stall = asyncio.Event()
    body = chat_sse("Half an answer", finish="stop", usage=None).split(b"data: {\"id\": \"chatcmpl-fake\", \"object\": \"chat.completion.chunk\", \"created\": 1, \"model\": \"fake-model\", \"choices\": [{\"index\": 0, \"delta\": {}")[0]
    reply = Reply(200, body, stall=stall)
    turn, _recorder, server = await one_turn(tmp_path, frame_checker, [reply], extra="stall_timeout = 0.5\n")
    assert turn["state"] == "error"
    assert turn["error"]["errorType"] == "provider_stalled"
    assert "sent nothing for 0.5 s" in turn["error"]["message"]
    assert "stall_timeout" in turn["error"]["message"]
    assert turn["responseParts"][0]["content"] == "Half an answer"
    assert len(server.requests) == 1  # text had streamed: not retried
    await asyncio.wait_for(reply.closed.wait(), 10)  # and the host hung up on the provider


async def test_a_provider_silent_before_answering_is_retried_after_the_stall_timeout(tmp_path: Path, frame_checker: FrameChecker) -> None:
    never = asyncio.Event()
    try:
        turn, _recorder, server = await one_turn(
            tmp_path, frame_checker, [Reply(200, chat_sse("late"), hold=never), Reply(200, chat_sse("Second try"))],
            extra="stall_timeout = 0.5\n",
        )
    finally:
        never.set()
    assert turn["state"] == "complete"
    assert [p["content"] for p in turn["responseParts"] if p["kind"] == "markdown"] == ["Second try"]
    assert len(server.requests) == 2


async def test_a_chunk_that_is_not_json_is_explained_in_user_words(tmp_path: Path, frame_checker: FrameChecker) -> None:
    body = b'data: {"id": "chatcmpl-fake", "choices": [{"index": 0, "delta": {"content": "Hi"}}]}\n\ndata: {not json at all\n\n'
    turn, _recorder, _server = await one_turn(tmp_path, frame_checker, [Reply(200, body)])
    assert turn["state"] == "error"
    message = turn["error"]["message"]
    assert message.startswith("The model server at http://127.0.0.1:") and "/v1 sent a stream chunk" in message
    assert "not valid JSON" in message and "JSONDecodeError" not in message


async def test_a_local_server_that_is_not_running_is_named_with_its_url(tmp_path: Path, frame_checker: FrameChecker) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    base_url = f"http://127.0.0.1:{port}/v1"
    config = config_for(tmp_path, toml=fake_agent_toml(base_url, retries=0))
    async with serving(config, frame_checker) as (_, client):
        session = await ready_session(client, provider="fake")
        turn = await run_turn(client, session, "hello")
    assert turn["state"] == "error"
    assert f"The connection to the model server at {base_url} failed" in turn["error"]["message"]
    assert "OpenAI" not in turn["error"]["message"]
