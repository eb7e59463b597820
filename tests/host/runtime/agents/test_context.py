"""Long sessions stay inside the model's context window: compaction, /compact, cut tool output.

A local OpenAI-compatible fake provider records every request, so these tests assert what the
model was sent, and the client's view of the turns (a client of AHP 1.0.0: a session's turns are
its default chat's)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS
from host.runtime.agents.context import SUMMARY_HEADER, cut_tool_output, elide_old_tool_results
from providers import ToolResult, ToolResultsMessage, UserMessage
from tests.conftest import FrameChecker
from tests.host.runtime.agents.test_faults import fake_agent_toml
from tests.providers.fake_server import FakeProviderServer, Reply, SeenRequest, chat_sse

from .harness import config_for, idle, ready_session, serving
from .harness import run_chat_turn as run_turn

ALPHA = "alpha " * 800  # about 1,200 tokens each by the host's estimate
BRAVO = "bravo " * 800


def _texts(request: SeenRequest) -> list[str]:
    out = []
    for message in request.json()["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
        out.append(f"{message['role']}: {content or ''}")
    return out


def _notes(turn: dict) -> list[str]:
    return [p["content"] for p in turn["responseParts"] if p["kind"] == "systemNotification"]


def _toml(base_url: str, extra: str = "") -> str:
    # A 7,000-token window compacted at half (3,500 tokens): the tool definitions, the preamble
    # and one long answer fit; two long answers do not. Without the built-in system prompt, whose
    # length would move these numbers whenever its wording changes.
    return fake_agent_toml(base_url, extra='compact_at = 0.5\nkeep_recent_turns = 1\nsystem_prompt = ""\n' + extra).replace(
        "context_window = 8000", "context_window = 7000"
    )


async def test_a_session_that_passes_the_window_compacts_and_keeps_working_after_a_restart_and_a_fork(
    tmp_path: Path, frame_checker: FrameChecker
) -> None:
    replies = [
        Reply(200, chat_sse(ALPHA)),
        Reply(200, chat_sse(BRAVO)),
        Reply(200, chat_sse("SUMMARY: the user asked two warm-up questions; answers were alpha and bravo.")),
        Reply(200, chat_sse("third answer")),
        Reply(200, chat_sse("after restart")),
        Reply(200, chat_sse("in the fork")),
    ]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        config = config_for(tmp_path, toml=_toml(server.base_url))
        async with serving(config, frame_checker, versions=PROTOCOL_VERSIONS) as (_, client):
            session = await ready_session(client, provider="fake")
            await run_turn(client, session, "first question")
            await run_turn(client, session, "second question")
            third = await run_turn(client, session, "third question")
            await idle(client, default_chat_uri(session))
        assert third["state"] == "complete"
        compaction, sent = server.requests[2], server.requests[3]
        # The summary call saw the oldest turn; the newest finished turn is kept word for word.
        assert any("alpha alpha" in t for t in _texts(compaction)) and not any("bravo" in t for t in _texts(compaction))
        assert "Summarise the conversation above" in _texts(compaction)[-1]
        assert SUMMARY_HEADER in _texts(sent)[1] and "SUMMARY: the user asked" in _texts(sent)[1]
        assert not any("alpha alpha" in t for t in _texts(sent))
        assert any("bravo bravo" in t for t in _texts(sent))
        note, = [n for n in _notes(third) if n.startswith("Compacted")]
        assert "to stay within the model's context window: 1 earlier turn" in note
        assert "the latest turn is kept word for word" in note

        # A restarted host sends the same summary in place of the compacted turn.
        async with serving(config, frame_checker, versions=PROTOCOL_VERSIONS) as (_, client):
            await client.subscribe(session)
            await client.subscribe(default_chat_uri(session))
            fourth = await run_turn(client, session, "fourth question")
            turns = client.state(default_chat_uri(session))["turns"]
            assert turns[2]["message"]["text"] == "third question"  # the fork is made at the third question
            fork = await client.create_session(fork={"session": session, "turnId": turns[2]["id"]})
            await client.wait_for(lambda m, e: client.state(fork)["lifecycle"] == "ready")
            forked = await run_turn(client, fork, "question in the fork")
            await idle(client, default_chat_uri(fork))
        assert fourth["state"] == forked["state"] == "complete"
        for request in server.requests[4:6]:
            texts = _texts(request)
            assert "SUMMARY: the user asked" in texts[1] and not any("alpha alpha" in t for t in texts)
        assert len(server.requests) == 6  # no further compaction was needed


async def test_compact_command_summarises_on_demand_with_a_focus(tmp_path: Path, frame_checker: FrameChecker) -> None:
    replies = [
        Reply(200, chat_sse("one")),
        Reply(200, chat_sse("two")),
        Reply(200, chat_sse("SUMMARY focused on the API")),
        Reply(200, chat_sse("three")),
    ]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        async with serving(config_for(tmp_path, toml=fake_agent_toml(server.base_url)), frame_checker,
                           versions=PROTOCOL_VERSIONS) as (_, client):
            session = await ready_session(client, provider="fake")
            await run_turn(client, session, "design the API")
            await run_turn(client, session, "and the storage")
            compacted = await run_turn(client, session, "/compact the API design")
            after = await run_turn(client, session, "go on")
            await idle(client, default_chat_uri(session))
    assert compacted["state"] == "complete"
    assert _notes(compacted) == [
        "Compacted the conversation as asked (focus: the API design): 2 earlier turns (about "
        + _notes(compacted)[0].split("(about ", 1)[1]
    ]
    assert "focus on: the API design" in _texts(server.requests[2])[-1]
    texts = _texts(server.requests[3])
    assert "SUMMARY focused on the API" in texts[1]
    assert not any("design the API" in t for t in texts)
    assert not any("/compact" in t for t in texts)
    assert texts[-1].endswith("\ngo on")  # the summary and the new message are separate text parts
    assert after["state"] == "complete"


async def test_tool_output_over_the_limit_is_cut_and_readable_in_full(tmp_path: Path, frame_checker: FrameChecker) -> None:
    (tmp_path / "big.txt").write_text("".join(f"line number {i} of the big file\n" for i in range(1, 2001)))

    def read_the_rest(requests: list[SeenRequest]) -> bytes:
        tool_message = requests[-1].json()["messages"][-1]
        uri = re.search(r'read_file\(path="([^"]+)"', tool_message["content"]).group(1)
        return chat_sse(tool_calls=[("call-2", "read_file", json.dumps({"path": uri, "offset": 1500, "limit": 2}))])

    replies = [
        Reply(200, chat_sse(tool_calls=[("call-1", "read_file", json.dumps({"path": "big.txt"}))])),
        Reply(200, respond=read_the_rest),
        Reply(200, chat_sse("done")),
    ]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        config = config_for(tmp_path, toml=fake_agent_toml(server.base_url, extra="tool_output_limit = 5000\n"))
        async with serving(config, frame_checker, versions=PROTOCOL_VERSIONS) as (_, client):
            session = await ready_session(client, provider="fake")
            turn = await run_turn(client, session, "read big.txt")
            await idle(client, default_chat_uri(session))
    assert turn["state"] == "complete"
    first = server.requests[1].json()["messages"][-1]["content"]
    assert len(first) < 6000
    assert "[This output was cut for you:" in first
    assert "line number 1500 of" not in first
    second = server.requests[2].json()["messages"][-1]["content"]
    assert "1500\tline number 1500 of the big file" in second
    assert "1501\tline number 1501 of the big file" in second


def test_cut_tool_output_keeps_head_and_tail() -> None:
    text, left_out = cut_tool_output("a" * 600 + "b" * 400 + "c" * 1000, 1000)
    assert left_out == 1000
    assert text.startswith("a" * 600) and text.endswith("c" * 400) and "[… 1000 characters left out …]" in text
    assert cut_tool_output("short", 1000) == ("short", 0)


def test_eliding_keeps_the_calls_and_the_latest_rounds() -> None:
    rounds = [ToolResultsMessage(results=(ToolResult.of(f"c{i}", "shell", f"output {i}"),)) for i in range(3)]
    messages, elided = elide_old_tool_results([UserMessage.of("go"), *rounds], 1)
    assert elided == 2
    assert [m.results[0].text.startswith("[Output elided") for m in messages[1:]] == [True, True, False]
    assert messages[3].results[0].text == "output 2"


async def test_the_model_still_gets_turns_the_chat_state_no_longer_holds(tmp_path: Path, frame_checker: FrameChecker) -> None:
    replies = [Reply(200, chat_sse(f"answer {i}")) for i in range(5)]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        # One turn per chat state: after a restart the first two turns live only on disk.
        config = config_for(tmp_path, toml=fake_agent_toml(server.base_url), sessions={"recent_turns": 1})
        async with serving(config, frame_checker, versions=PROTOCOL_VERSIONS) as (_, client):
            session = await ready_session(client, provider="fake")
            for index in range(3):
                await run_turn(client, session, f"question {index}")
            await idle(client, default_chat_uri(session))
        async with serving(config, frame_checker, versions=PROTOCOL_VERSIONS) as (running, client):
            chat = running.host.store.state(running.host.session_uri(session))["defaultChat"]
            assert running.host.store.older_turn_count(chat) == 2
            await client.subscribe(session)
            await client.subscribe(chat)
            await run_turn(client, session, "question 3")
            page = await client.fetch_turns(chat)  # paged back to the first turn, which only the disk holds
            while page["hasMore"]:
                page = await client.fetch_turns(chat)
            [first] = [turn["id"] for turn in client.state(chat)["turns"] if turn["message"]["text"] == "question 0"]
            fork = await client.create_session(fork={"session": session, "turnId": first})
            await client.wait_for(lambda m, e: client.state(fork)["lifecycle"] == "ready")
            await run_turn(client, fork, "question in the fork")
            await idle(client, default_chat_uri(fork))
        sent = _texts(server.requests[3])
        assert [t for t in sent if t.startswith("user:")] == [f"user: question {i}" for i in range(4)]
        assert [t for t in sent if t.startswith("assistant:")] == [f"assistant: answer {i}" for i in range(3)]
        in_fork = _texts(server.requests[4])
        assert [t for t in in_fork if t.startswith("user:")] == ["user: question 0", "user: question in the fork"]
