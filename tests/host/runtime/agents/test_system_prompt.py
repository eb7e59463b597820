"""The built-in system prompt through a real host against a fake provider server: the tool-use
guidance reaches the model in the OpenAI (Chat Completions, Responses) and Anthropic request
shapes, stays byte-identical from one model call to the next (a cacheable prefix, with the
<environment> block after it), and an agent's ``system_prompt`` or ``system_prompt_file`` replaces it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS
from host.errors import ConfigError
from host.runtime.agents.system_prompt import BUILTIN_SYSTEM_PROMPT
from tests.conftest import FrameChecker
from tests.providers.fake_server import FakeProviderServer, Reply, SeenRequest, chat_sse, sse
from tests.providers.openai.test_responses import CREATED, MESSAGE_ADDED, TEXT_DELTA

from .harness import config_for, idle, ready_session, serving
from .harness import run_chat_turn as run_turn
from .test_faults import fake_agent_toml

GUIDANCE = ("Read before you edit", "edit_file", "run the project's tests", "destructive", "When the user denies a call",
            "Keep answers short")


def anthropic_sse(text: str) -> bytes:
    start = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "fake-model",
                                                  "content": [], "stop_reason": None, "usage": {"input_tokens": 3, "output_tokens": 1}}}
    return sse(
        ("message_start", start),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}}),
        ("message_stop", {"type": "message_stop"}),
    )


def responses_sse() -> bytes:
    done_item = {**MESSAGE_ADDED["item"], "status": "completed", "content": [{"type": "output_text", "text": "Hel", "annotations": []}]}
    completed = {"type": "response.completed", "sequence_number": 4, "response": {**CREATED["response"], "status": "completed", "output": [done_item]}}
    return sse(("response.created", CREATED), ("response.output_item.added", MESSAGE_ADDED), ("response.output_text.delta", TEXT_DELTA),
               ("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": done_item}),
               ("response.completed", completed))


def system_of(kind: str, request: SeenRequest) -> str:
    """The system prompt as the provider's API received it."""
    body = request.json()
    if kind == "anthropic":
        return "".join(block["text"] for block in body["system"])
    if kind == "openai":
        return next(item["content"] for item in body["input"] if item.get("role") == "developer")
    return next(message["content"] for message in body["messages"] if message["role"] == "system")


async def two_turns(tmp_path: Path, checker: FrameChecker, kind: str, reply: bytes, extra: str = "") -> list[str]:
    base = "" if kind == "anthropic" else "/v1"
    async with FakeProviderServer([Reply(200, reply), Reply(200, reply)], base_path=base) as server:
        config = config_for(tmp_path, toml=fake_agent_toml(server.base_url, kind=kind, extra=extra))
        async with serving(config, checker, versions=PROTOCOL_VERSIONS) as (_, client):
            session = await ready_session(client, provider="fake")
            for text in ("hello", "and again"):
                turn = await run_turn(client, session, text)
                assert turn["state"] == "complete", turn.get("error")
            await idle(client, default_chat_uri(session))
    assert len(server.requests) == 2
    return [system_of(kind, request) for request in server.requests]


@pytest.mark.parametrize("kind, reply", [
    ("openai-chat", chat_sse("Hi")),
    ("openai", responses_sse()),
    ("anthropic", anthropic_sse("Hi")),
])
async def test_the_tool_use_guidance_reaches_the_model_first_and_stays_the_same(
        tmp_path: Path, frame_checker: FrameChecker, kind: str, reply: bytes) -> None:
    first, second = await two_turns(tmp_path, frame_checker, kind, reply)
    assert first.startswith(BUILTIN_SYSTEM_PROMPT)
    for words in GUIDANCE:
        assert words in first, words
    # The per-session facts come after the constant text, and nothing changes between calls.
    assert first.index("<environment>") > len(BUILTIN_SYSTEM_PROMPT)
    assert f"Working directory: {tmp_path}" in first
    assert second == first


async def test_the_prompt_holds_nothing_that_changes_from_turn_to_turn() -> None:
    # No date, time, path, model or session in the constant: the environment block carries those.
    assert not any(ch.isdigit() for ch in BUILTIN_SYSTEM_PROMPT)
    assert "<environment>" not in BUILTIN_SYSTEM_PROMPT and "Working directory:" not in BUILTIN_SYSTEM_PROMPT


@pytest.mark.parametrize("kind, reply", [("openai-chat", chat_sse("Hi")), ("anthropic", anthropic_sse("Hi"))])
async def test_an_agents_system_prompt_replaces_the_built_in_one(tmp_path: Path, frame_checker: FrameChecker, kind: str, reply: bytes) -> None:
    first, _ = await two_turns(tmp_path, frame_checker, kind, reply, extra='system_prompt = "You only ever answer in haiku."\n')
    assert first.startswith("You only ever answer in haiku.")
    assert "Read before you edit" not in first
    assert "<environment>" in first  # the session's own facts still follow


async def test_a_system_prompt_file_replaces_it_too_read_relative_to_the_config(tmp_path: Path, frame_checker: FrameChecker) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "team.md").write_text("Team rules: tabs, never spaces.\n", encoding="utf-8")
    first, _ = await two_turns(tmp_path, frame_checker, "openai-chat", chat_sse("Hi"), extra='system_prompt_file = "prompts/team.md"\n')
    assert first.startswith("Team rules: tabs, never spaces.")
    assert "Read before you edit" not in first


async def test_an_empty_system_prompt_sends_only_the_sessions_own_text(tmp_path: Path, frame_checker: FrameChecker) -> None:
    first, _ = await two_turns(tmp_path, frame_checker, "openai-chat", chat_sse("Hi"), extra='system_prompt = ""\n')
    assert first.startswith("<environment>")


def _load(tmp_path: Path, extra: str) -> Any:
    from host.runtime.agents.catalog import build_agents

    return build_agents(config_for(tmp_path, toml=fake_agent_toml("http://127.0.0.1:9/v1", extra=extra)))


def test_both_keys_or_an_unreadable_file_are_config_errors_that_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as both:
        _load(tmp_path, 'system_prompt = "x"\nsystem_prompt_file = "p.md"\n')
    assert "agents.fake" in str(both.value) and "not both" in str(both.value)
    with pytest.raises(ConfigError) as missing:
        _load(tmp_path, 'system_prompt_file = "missing.md"\n')
    message = str(missing.value)
    assert "agents.fake.system_prompt_file = 'missing.md'" in message and str(tmp_path / "missing.md") in message
    assert json.dumps(message)  # one plain sentence, no traceback


def test_the_default_agents_send_it_and_a_replay_agent_keeps_its_recorded_requests(tmp_path: Path) -> None:
    from host.runtime.agents.catalog import build_agents

    agents = {agent.provider: agent for agent in build_agents(config_for(tmp_path)) if hasattr(agent, "settings")}
    assert agents["openai"].settings.system_prompt == BUILTIN_SYSTEM_PROMPT
    assert agents["anthropic"].settings.system_prompt == BUILTIN_SYSTEM_PROMPT
    assert agents["replay"].settings.system_prompt is None
