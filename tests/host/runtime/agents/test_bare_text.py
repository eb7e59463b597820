"""A turn reads its stream bare (``providers.ModelStream.bare``: a streamed chunk of text, reasoning
or tool arguments as a ``str``) and a client sees exactly what it would see had the turn read
every chunk as a ``PartDelta`` and emitted each action the plain way.

Each recorded stream of the three APIs (Anthropic Messages, OpenAI Chat Completions and Responses:
thinking / reasoning summaries, tool calls with their arguments, usage, text before and after
them) is replayed through the real SDK into a real host twice: once as the host runs (bare), once
with ``ModelStream.bare`` giving what iterating the stream gives every other consumer (the
``PartDelta`` path) and every streamed append emitted through ``TurnContext.emit`` (the store's
full dispatch, as reasoning and tool-argument deltas went before they came bare). Both through a
provider agent and through the replay agent (``kind = "replay"``, whose provider relays the
stream). Every action the client receives, in order, and the state it converges to are the same,
for a 0.2.0 client and one speaking the model's versions; and the bare run did take the bare way
for every kind of part the recording streams. A session cassette (``[recording]``) of a turn
streaming reasoning, text and tool arguments replays the same way, bare or not."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from client import LEGACY_VERSIONS, PROTOCOL_VERSIONS
from host.runtime.agents import ModelSpec, ProviderAgent, StaticSource, TurnSettings
from host.runtime.agents.base import TurnContext
from host.runtime.agents.titles import first_words
from providers import AnthropicProvider, ModelStream, OpenAIChatProvider, OpenAIResponsesProvider, replay_client
from tests.conftest import FrameChecker
from tests.providers.fake_server import FakeProviderServer, Reply, chat_sse, sse

from .harness import CASSETTES, Recorder, config_for, idle, ready_session, run_chat_turn, run_turn, serving

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

PASSWORDS = "Please retrieve the secrets associated with each of these passwords: mellon,radiance"
PRIMES = "How many primes below 400 contain 79 as a substring?"
REMEMBER = "If you remember what the primes were, then share them, or say 'I don't remember.'"

CASES = {
    "anthropic-thinking": (AnthropicProvider, "anthropic/messages-stream-thinking-multiturn.yaml", "claude-sonnet-4-20250514", [PRIMES, REMEMBER]),
    "anthropic-tool-use": (AnthropicProvider, "anthropic/messages-stream-parallel-tool-use-multiturn.yaml", "claude-sonnet-4-20250514", [PASSWORDS]),
    "anthropic-text": (AnthropicProvider, "anthropic/messages-stream-text.yaml", "claude-3-haiku-20240307", ["Tell me a joke about OpenTelemetry"]),
    "anthropic-max-tokens": (AnthropicProvider, "anthropic/messages-stream-text-max-tokens.yaml", "claude-3-haiku-20240307", ["List all U.S. states."]),
    "responses-reasoning": (OpenAIResponsesProvider, "openai/responses-stream-reasoning-summary-multiturn.yaml", "gpt-5", [PRIMES, REMEMBER]),
    "responses-function-calls": (OpenAIResponsesProvider, "openai/responses-stream-parallel-function-calls-multiturn.yaml", "gpt-5", [PASSWORDS]),
    "chat-text": (OpenAIChatProvider, "openai/chat-completions-stream-text-usage.yaml", "gpt-4o", ["What is 4200 + 42?"]),
    "chat-tool-calls": (OpenAIChatProvider, "openai/chat-completions-stream-parallel-tool-calls-multiturn.yaml", "gpt-4o", [PASSWORDS]),
    "chat-tool-calls-2024": (OpenAIChatProvider, "openai/chat-completions-stream-parallel-tool-calls-2024.yaml", "gpt-4o-mini",
                             ["What's the weather like in Seattle and San Francisco?"]),
}

ENDS_UNANSWERED = {"chat-tool-calls-2024"}
"""Recordings with no answer to their tool calls: the turn's next call finds the cassette used up,
which only the replay agent turns into the turn's error (replayed through a bare provider, the
cassette's error would end the turn's task)."""

_KIND_OF = {"delta": "text", "reasoning": "reasoning", "toolCallDelta": "tool_call"}
"""A streamed append's action (its type's last segment, in either dialect) → the kind of part it streams."""

_VARYING = ("startedAt", "completedAt", "createdAt", "modifiedAt", "timestamp", "duration", "lastActivity")
"""Keys whose values are the clock's (they differ between any two runs)."""


def _normal(value: Any, names: dict[str, str], own: dict[str, str]) -> Any:
    """``value`` with clock values blanked, the run's ``own`` strings (its folder, its chat's URI)
    named, and the host's own identifiers (session URIs, turn and tool-call ids made up by the
    host) numbered in the order they first appear."""
    if isinstance(value, dict):
        return {k: "<clock>" if k in _VARYING else _normal(v, names, own) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v, names, own) for v in value]
    if isinstance(value, str):
        for text, name in own.items():
            value = value.replace(text, name)
        return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
                      lambda m: names.setdefault(m.group(0), f"<id{len(names)}>"), value)
    return value


async def _run(tmp_path: Path, checker: FrameChecker, case: str, versions: tuple[str, ...], source: str) -> tuple[list[Any], Any, set[str]]:
    """One host replaying ``case`` (``source``: through a provider agent, or the replay agent): the
    actions its client received on the turn's channel, the state that channel converged to (both
    normalised), and the kinds of part whose chunks the turn's stream gave bare."""
    vendor, path, model, messages = CASES[case]
    sessions = {"offline_agent": False, "preamble": False}
    if source == "replay":
        agents = None
        config = config_for(tmp_path, toml=f'[agents.rec]\nkind = "replay"\nmodels = [{{id = "{model}", cassette = "{CASSETTES / path}"}}]\n',
                            sessions=sessions)
    else:
        client_, _ = replay_client(CASSETTES / path)
        agents = [ProviderAgent("rec", StaticSource(vendor(api_key="test-key", http_client=client_)),
                                display_name="Recorded", models=[ModelSpec(model)],
                                settings=TurnSettings(title="first-words"))]  # no model call for a title: the recording is the turns'
        config = config_for(tmp_path, sessions=sessions)
    async with serving(config, checker, agents, versions=versions) as (_, client):
        session = await ready_session(client, provider="rec", model=model)
        model_versions = versions is PROTOCOL_VERSIONS
        channel = client.chat_of(session) if model_versions else session
        recorder = Recorder(client, channel)
        states = []
        for text in messages:
            turn = await (run_chat_turn if model_versions else run_turn)(client, session, text)
            assert turn["state"] in ("complete", "error"), turn
            states.append(turn["state"])
            await idle(client, channel)
        if states[0] == "complete":
            # The title is set after a first turn that completed, in the background: wait for it (0.2.0: in the summary).
            title = first_words(messages[0])
            await client.wait_for(lambda m, e: ((client.state(session) or {}).get("summary") or client.state(session) or {}).get("title") == title)
        names: dict[str, str] = {}
        own = {channel: "<channel>", str(tmp_path): "<folder>"}
        actions = _normal(recorder.drain(), names, own)
        state = _normal(json.loads(json.dumps(client.state(channel))), names, own)
    return actions, state, _BARE_SEEN.pop(case, set())


_BARE_SEEN: dict[str, set[str]] = {}


def _watching(case: str) -> Any:
    """``ModelStream.bare`` as it is, noting the kinds of the parts its bare deltas are for (the part
    started last) for ``case``."""
    original = ModelStream.bare

    def bare(self: ModelStream) -> Any:
        async def events() -> Any:
            last = None
            async for event in original(self):
                if type(event) is str:
                    assert last is not None
                    _BARE_SEEN.setdefault(case, set()).add(last)
                elif event.kind == "part_start":
                    last = event.part_kind
                yield event
        return events()

    return bare


def _emitted(self: TurnContext, action_type: str, target_field: str, target: str) -> Any:
    """``TurnContext.appender`` the plain way: every append an action through ``emit``."""
    return lambda content: self.emit({"type": action_type, "turnId": self.turn_id, target_field: target, "content": content})


@pytest.mark.parametrize("versions", [LEGACY_VERSIONS, PROTOCOL_VERSIONS], ids=["0.2.0", "model"])
@pytest.mark.parametrize(("case", "source"), [(case, source) for case in CASES for source in ("provider", "replay")
                                              if source == "replay" or case not in ENDS_UNANSWERED])
async def test_a_client_sees_the_same_actions_and_state_whether_the_turn_reads_chunks_bare_or_as_part_deltas(
    tmp_path: Path, frame_checker: FrameChecker, monkeypatch: pytest.MonkeyPatch, case: str, versions: tuple[str, ...], source: str,
) -> None:
    monkeypatch.setattr(ModelStream, "bare", _watching(case))
    bare_actions, bare_state, bare_kinds = await _run(tmp_path / "bare", frame_checker, case, versions, source)
    monkeypatch.setattr(ModelStream, "bare", ModelStream.__aiter__)  # every chunk a PartDelta, as any other consumer reads it
    monkeypatch.setattr(TurnContext, "appender", _emitted)  # and every append through emit, the full dispatch
    delta_actions, delta_state, delta_kinds = await _run(tmp_path / "deltas", frame_checker, case, versions, source)

    kinds = {action["type"].split("/")[-1] for action in bare_actions}
    assert "usage" in kinds and ("turnComplete" in kinds or case in ENDS_UNANSWERED)  # usage and the turn's end reached the client
    streamed = {_KIND_OF[kind] for kind in kinds if kind in _KIND_OF}
    assert bare_kinds == streamed and not delta_kinds  # the bare run took the bare way for every kind it streams, the other never
    assert bare_actions == delta_actions
    assert bare_state == delta_state


def _thinking_then_a_tool_call() -> bytes:
    """A Chat Completions stream of reasoning (``reasoning_content``), text, and one tool call whose
    arguments come in pieces: every kind of part, each streamed in several chunks."""
    envelope = {"id": "chatcmpl-think", "object": "chat.completion.chunk", "created": 1, "model": "fake-model"}
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": None, "reasoning_content": "The user"}]
    deltas += [{"reasoning_content": piece} for piece in (" wants", " a lookup", " of x.")]
    deltas += [{"content": piece} for piece in ("Let me", " look", " it up.")]
    deltas.append({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": ""}}]})
    deltas += [{"tool_calls": [{"index": 0, "function": {"arguments": piece}}]} for piece in ('{"q', '": "', 'x"}')]
    chunks = [{"choices": [{"index": 0, "delta": delta, "finish_reason": None}]} for delta in deltas]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    chunks.append({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 20, "total_tokens": 29}})
    return sse(*((None, {**envelope, **chunk}) for chunk in chunks), (None, "[DONE]"))


async def _replayed(tmp_path: Path, checker: FrameChecker, cassette: Path, versions: tuple[str, ...]) -> tuple[list[Any], Any]:
    """A host whose replay agent replays the session ``cassette``: the actions its client received
    on the session's channel and the state it converged to (normalised as ``_run``'s)."""
    config = config_for(tmp_path, toml=f'[agents.again]\nkind = "replay"\nmodels = [{{id = "fake-model", cassette = "{cassette}"}}]\n',
                        sessions={"default_directory": str(tmp_path)})
    async with serving(config, checker, versions=versions) as (_, client):
        session = await ready_session(client, provider="again")
        model_versions = versions is PROTOCOL_VERSIONS
        channel = client.chat_of(session) if model_versions else session
        recorder = Recorder(client, channel)
        turn = await (run_chat_turn if model_versions else run_turn)(client, session, "look x up")
        assert turn["state"] == "complete", turn
        await idle(client, channel)
        await client.wait_for(lambda m, e: ((client.state(session) or {}).get("summary") or client.state(session) or {}).get("title") == "Looked up")
        names: dict[str, str] = {}
        own = {channel: "<channel>", str(tmp_path): "<folder>"}
        return _normal(recorder.drain(), names, own), _normal(json.loads(json.dumps(client.state(channel))), names, own)


@pytest.mark.parametrize("versions", [LEGACY_VERSIONS, PROTOCOL_VERSIONS], ids=["0.2.0", "model"])
async def test_a_recorded_session_with_reasoning_and_a_tool_call_replays_the_same_actions_bare_or_as_part_deltas(
    tmp_path: Path, frame_checker: FrameChecker, monkeypatch: pytest.MonkeyPatch, versions: tuple[str, ...],
) -> None:
    """A session recorded by ``[recording]`` (a session cassette) whose turn streams reasoning, text
    and a tool call's arguments in pieces, replayed by a ``kind = "replay"`` agent (the session
    source's provider relays the stream): the client sees the same actions and state whether the
    turn reads the replayed chunks bare or as ``PartDelta`` events emitted the plain way."""
    recordings = tmp_path / "recorded"
    work = tmp_path / "work"
    work.mkdir()
    replies = [Reply(200, _thinking_then_a_tool_call()), Reply(200, chat_sse("Not", " found.")), Reply(200, chat_sse("Looked up"))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        toml = (f'[agents.fake]\nkind = "openai-chat"\nbase_url = "{server.base_url}"\n'
                'models = [{id = "fake-model"}]\n')
        config = config_for(tmp_path, toml=toml, recording={"enabled": True, "directory": str(recordings)},
                            sessions={"default_directory": str(work)})
        async with serving(config, frame_checker) as (_, client):
            session = await ready_session(client, provider="fake")
            turn = await run_turn(client, session, "look x up")
            assert turn["state"] == "complete", turn
            await client.wait_for(lambda m, e: client.state(session)["summary"]["title"] == "Looked up")
    [cassette] = list(recordings.rglob("*.yaml"))

    monkeypatch.setattr(ModelStream, "bare", _watching("session"))
    bare_actions, bare_state = await _replayed(tmp_path / "bare", frame_checker, cassette, versions)
    bare_kinds = _BARE_SEEN.pop("session", set())
    monkeypatch.setattr(ModelStream, "bare", ModelStream.__aiter__)
    monkeypatch.setattr(TurnContext, "appender", _emitted)
    delta_actions, delta_state = await _replayed(tmp_path / "deltas", frame_checker, cassette, versions)

    assert bare_kinds == {"text", "reasoning", "tool_call"} and not _BARE_SEEN.pop("session", set())
    streamed = [(a["type"].split("/")[-1], a.get("content")) for a in bare_actions if a["type"].split("/")[-1] in _KIND_OF]
    assert ("reasoning", " a lookup") in streamed and ("toolCallDelta", '": "') in streamed  # chunk by chunk, as recorded
    assert bare_actions == delta_actions
    assert bare_state == delta_state


@pytest.mark.parametrize("versions", [LEGACY_VERSIONS, PROTOCOL_VERSIONS], ids=["0.2.0", "model"])
@pytest.mark.parametrize("case", [case for case in CASES if case.startswith("anthropic-")])
async def test_a_client_sees_the_same_actions_whether_anthropic_pieces_are_picked_out_of_the_bytes_or_each_event_parsed_whole(
    tmp_path: Path, frame_checker: FrameChecker, monkeypatch: pytest.MonkeyPatch, case: str, versions: tuple[str, ...],
) -> None:
    """The Anthropic provider reads a streamed piece straight out of its event's bytes
    (``providers._sse.RawEventStream`` with the translator as its ``bare`` reader); with the plain
    way instead (``anthropic.PICK_PIECES`` off: every event parsed whole) the client sees the same
    actions and state."""
    from providers import anthropic

    picked: list[str] = []
    feed_bare = anthropic._Translator.feed_bare

    def noting(self: Any, raw: Any) -> Any:
        if type(raw) is str:
            picked.append(raw)
        return feed_bare(self, raw)

    monkeypatch.setattr(anthropic._Translator, "feed_bare", noting)
    short_actions, short_state, _ = await _run(tmp_path / "short", frame_checker, case, versions, "provider")
    assert picked  # the recording's pieces did take the short way
    picked.clear()
    monkeypatch.setattr(anthropic, "PICK_PIECES", False)
    plain_actions, plain_state, _ = await _run(tmp_path / "plain", frame_checker, case, versions, "provider")
    assert not picked
    assert short_actions == plain_actions
    assert short_state == plain_state
