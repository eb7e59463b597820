"""host.runtime.agents.session_source through a real host: ``[recording]`` writes one cassette per
session (continued sessions append, the title request included), a ``kind = "replay"`` agent replays
it strictly, a recorded retry-after is not waited for again, a cancelled turn replays as a
cancellation, and an older vcrpy cassette in a strict agent gets a warning that it no longer matches."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
import yaml

from tests.conftest import FrameChecker
from tests.providers.fake_server import FakeProviderServer, Reply, chat_sse

from .harness import CASSETTES, config_for, idle, ready_session, run_turn, serving


def live_toml(base_url: str, extra: str = "") -> str:
    return (f'[agents.fake]\nkind = "openai-chat"\nbase_url = "{base_url}"\nretry_base_delay = 0.01\n'
            f'models = [{{id = "fake-model"}}]\n{extra}')


def replay_toml(cassette: Path, extra: str = "") -> str:
    return f'[agents.again]\nkind = "replay"\n{extra}models = [{{id = "fake-model", cassette = "{cassette}"}}]\n'


async def test_a_session_continued_in_a_later_host_run_appends_to_its_cassette_and_replays_whole(
    tmp_path: Path, frame_checker: FrameChecker
) -> None:
    recordings = tmp_path / "recorded"
    work = tmp_path / "work"
    work.mkdir()
    replies = [Reply(200, chat_sse("First", " answer")), Reply(200, chat_sse("A title")), Reply(200, chat_sse("Second answer"))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        config = config_for(tmp_path, toml=live_toml(server.base_url), recording={"enabled": True, "directory": str(recordings)},
                            sessions={"default_directory": str(work)})
        async with serving(config, frame_checker) as (_, client):
            session = await ready_session(client, provider="fake")
            await run_turn(client, session, "one")
            await client.wait_for(lambda m, e: client.state(session)["summary"]["title"] == "A title")
        async with serving(config, frame_checker) as (_, client):  # the same data directory: the session goes on
            await client.subscribe(session)
            await run_turn(client, session, "two")
    [cassette] = list(recordings.rglob("*.yaml"))
    document = yaml.safe_load(cassette.read_text())
    assert [t["turn"] for t in document["turns"]] == [1, 2]
    assert [t["calls"][0]["request"]["body"]["messages"][-1]["content"] for t in document["turns"]] == ["one", "two"]
    assert document["title"]["request"]["body"]["messages"][-1]["content"] == "one"

    async with serving(config_for(tmp_path / "replay", toml=replay_toml(cassette),
                                  sessions={"default_directory": str(tmp_path / "replay")}), frame_checker) as (_, client):
        session = await ready_session(client, provider="again")
        first = await run_turn(client, session, "one")
        await client.wait_for(lambda m, e: client.state(session)["summary"]["title"] == "A title")  # the recorded title request
        second = await run_turn(client, session, "two")
        third = await run_turn(client, session, "three")
    assert [first["state"], second["state"]] == ["complete", "complete"]
    assert first["responseParts"][0]["content"] == "First answer" and second["responseParts"][0]["content"] == "Second answer"
    assert third["state"] == "error" and third["error"]["errorType"] == "recording_ended"
    assert "is used up: it recorded 2 turns and this is turn 3 of the session" in third["error"]["message"]


async def test_a_diverging_request_ends_the_turn_with_a_diff_the_client_sees(tmp_path: Path, frame_checker: FrameChecker) -> None:
    recordings = tmp_path / "recorded"
    async with FakeProviderServer([Reply(200, chat_sse("Recorded"))], base_path="/v1") as server:
        config = config_for(tmp_path, toml=live_toml(server.base_url, 'title = "first-words"\n'),
                            recording={"enabled": True, "directory": str(recordings)})
        async with serving(config, frame_checker) as (_, client):
            await run_turn(client, await ready_session(client, provider="fake"), "the recorded words")
    [cassette] = list(recordings.rglob("*.yaml"))
    async with serving(config_for(tmp_path / "replay", toml=replay_toml(cassette, 'title = "first-words"\n')), frame_checker) as (_, client):
        turn = await run_turn(client, await ready_session(client, provider="again"), "other words")
    assert turn["state"] == "error" and turn["error"]["errorType"] == "replay_diverged"
    message = turn["error"]["message"]
    assert message.startswith(f"The replay of {cassette.name} diverged at turn 1, model call 1: the request differs")
    assert "-    content: the recorded words" in message and "+    content: other words" in message


async def test_a_recorded_retry_after_is_not_waited_for_on_replay(tmp_path: Path, frame_checker: FrameChecker) -> None:
    recordings = tmp_path / "recorded"
    limited = Reply(429, b'{"error": {"message": "Rate limit reached", "type": "requests"}}', {"retry-after": "0"})
    async with FakeProviderServer([limited, Reply(200, chat_sse("After the wait"))], base_path="/v1") as server:
        config = config_for(tmp_path, toml=live_toml(server.base_url, 'title = "first-words"\n'),
                            recording={"enabled": True, "directory": str(recordings)})
        async with serving(config, frame_checker) as (_, client):
            live = await run_turn(client, await ready_session(client, provider="fake"), "hello")
    assert live["state"] == "complete"
    [cassette] = list(recordings.rglob("*.yaml"))
    text = cassette.read_text()
    assert "retry-after: '0'" in text
    # An hour: a replay that waited as asked would not end within the test's timeout.
    cassette.write_text(text.replace("retry-after: '0'", "retry-after: '3600'"))
    toml = replay_toml(cassette, 'title = "first-words"\nretry_max_delay = 7200\n')
    async with serving(config_for(tmp_path / "replay", toml=toml), frame_checker) as (_, client):
        replayed = await run_turn(client, await ready_session(client, provider="again"), "hello")
    assert replayed["state"] == "complete" and replayed["responseParts"][0]["content"] == "After the wait"


async def test_a_cancelled_turn_is_recorded_as_cancelled_and_replays_as_a_cancellation(tmp_path: Path, frame_checker: FrameChecker) -> None:
    recordings = tmp_path / "recorded"
    stall = asyncio.Event()
    body = chat_sse("Partial", " answer", finish="stop", usage=None)
    partial = body[: body.index(b"answer") + 20]
    async with FakeProviderServer([Reply(200, partial, stall=stall)], base_path="/v1") as server:
        config = config_for(tmp_path, toml=live_toml(server.base_url, 'title = "first-words"\n'),
                            recording={"enabled": True, "directory": str(recordings)})
        async with serving(config, frame_checker) as (_, client):
            session = await ready_session(client, provider="fake")
            turn_id = client.send_message(session, "write slowly")
            await client.wait_for(lambda m, e: ((client.state(session) or {}).get("activeTurn") or {}).get("responseParts"))
            client.cancel_turn(session, turn_id)
            await idle(client, session)
            live = next(t for t in client.state(session)["turns"] if t["id"] == turn_id)
    assert live["state"] == "cancelled"
    [cassette] = list(recordings.rglob("*.yaml"))
    [turn] = yaml.safe_load(cassette.read_text())["turns"]
    assert turn["cancelled"] is True and turn["calls"][0]["cancelled"] is True

    async with serving(config_for(tmp_path / "replay", toml=replay_toml(cassette, 'title = "first-words"\n')), frame_checker) as (_, client):
        session = await ready_session(client, provider="again")
        replayed = await run_turn(client, session, "write slowly")
    assert replayed["state"] == "cancelled"
    assert replayed["responseParts"][0]["content"] == live["responseParts"][0]["content"] == "Partial answer"


async def test_an_older_cassette_that_no_longer_matches_is_served_with_a_warning(
    tmp_path: Path, frame_checker: FrameChecker, caplog: pytest.LogCaptureFixture
) -> None:
    cassette = CASSETTES / "openai" / "chat-completions-stream-text-usage.yaml"
    caplog.set_level(logging.WARNING, "host.runtime.agents.replay")
    async with serving(config_for(tmp_path, toml=replay_toml(cassette)), frame_checker) as (_, client):
        turn = await run_turn(client, await ready_session(client, provider="again"), "What is 4200 + 42?")
    assert turn["state"] == "complete"
    [warning] = [r.getMessage() for r in caplog.records if "older (version 1, vcrpy) cassette" in r.getMessage()]
    assert "chat-completions-stream-text-usage.yaml" in warning and "Record the session again" in warning


async def test_a_compaction_request_is_recorded_in_its_turn_and_replayed(tmp_path: Path, frame_checker: FrameChecker) -> None:
    recordings = tmp_path / "recorded"
    replies = [Reply(200, chat_sse("Hello there")), Reply(200, chat_sse("Summary: they said hello."))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        config = config_for(tmp_path, toml=live_toml(server.base_url, 'title = "first-words"\n'),
                            recording={"enabled": True, "directory": str(recordings)})
        async with serving(config, frame_checker) as (_, client):
            session = await ready_session(client, provider="fake")
            await run_turn(client, session, "hello")
            live = await run_turn(client, session, "/compact")
    assert live["state"] == "complete"
    [cassette] = list(recordings.rglob("*.yaml"))
    [first, second] = yaml.safe_load(cassette.read_text())["turns"]
    assert len(first["calls"]) == len(second["calls"]) == 1
    assert "hello" in str(second["calls"][0]["request"]["body"]["messages"])

    async with serving(config_for(tmp_path / "replay", toml=replay_toml(cassette, 'title = "first-words"\n')), frame_checker) as (_, client):
        session = await ready_session(client, provider="again")
        await run_turn(client, session, "hello")
        replayed = await run_turn(client, session, "/compact")
    assert replayed["state"] == "complete"
    assert replayed["responseParts"] == [{**p, "id": replayed["responseParts"][i].get("id")} if "id" in p else p
                                         for i, p in enumerate(live["responseParts"])]


async def test_a_sub_agents_turn_is_recorded_in_the_session_cassette_and_replays(tmp_path: Path, frame_checker: FrameChecker) -> None:
    recordings = tmp_path / "recorded"
    task = ("call_task_1", "task", '{"description": "Greet", "prompt": "Say hello to the user"}')
    replies = [Reply(200, chat_sse(tool_calls=[task])), Reply(200, chat_sse("Hello from the sub-agent")),
               Reply(200, chat_sse("The sub-agent said hello"))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        config = config_for(tmp_path, toml=live_toml(server.base_url, 'title = "first-words"\n'),
                            recording={"enabled": True, "directory": str(recordings)}, tools={"auto_approve": True})
        async with serving(config, frame_checker) as (_, client):
            live = await run_turn(client, await ready_session(client, provider="fake"), "delegate a greeting")
    assert live["state"] == "complete" and live["responseParts"][-1]["content"] == "The sub-agent said hello"
    [cassette] = list(recordings.rglob("*.yaml"))
    turns = yaml.safe_load(cassette.read_text())["turns"]
    assert [len(t["calls"]) for t in turns] == [2, 1]  # the parent's turn, then the sub-agent's chat turn
    assert turns[1]["calls"][0]["request"]["body"]["messages"][-1]["content"] == "Say hello to the user"

    toml = replay_toml(cassette, 'title = "first-words"\n')
    async with serving(config_for(tmp_path / "replay", toml=toml, tools={"auto_approve": True}), frame_checker) as (_, client):
        replayed = await run_turn(client, await ready_session(client, provider="again"), "delegate a greeting")
    assert replayed["state"] == "complete", replayed.get("error")
    assert replayed["responseParts"][-1]["content"] == "The sub-agent said hello"
