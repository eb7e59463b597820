"""AhpClient on the current model against a real host on port 0: it offers ``PROTOCOL_VERSIONS``,
the host picks the newest (1.0.0; 0.9.0 from a host without it), and the mirror folds sessions and
chats with the model's own reducers (``ahp.state``) into exactly the state a fresh subscriber is
sent. Every frame it receives fits the schema (1.0.0's, which serves the 0.9.0 model unchanged). A host that serves none of the offered versions is a clear error."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from ahp.state import channel_kind, default_chat_uri, parse_chat_uri
from client import (
    PROTOCOL_VERSIONS,
    AhpClient,
    AhpClientError,
    AhpError,
    ConnectionClosedError,
    HostProtocolError,
    UnsupportedVersionError,
    subagent_chats,
)
from host.service import AgentHost
from host.transport.server import RunningHost, start_host
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import NEVER, TOKEN, host_config
from tests.host.runtime.agents.harness import serving
from tests.host.runtime.tools._support import scripted, tools_config
from tests.host.transport.dialects._schemas import FrameSchema

from ._fake_host import FakeHost, RpcError

ROOT = "ahp-root://"


class SchemaHook:
    """A frame hook that records every frame that does not fit the 1.0.0 (= 0.9.0 model) schema."""

    def __init__(self) -> None:
        self.schema = FrameSchema.for_version("1.0.0")
        self.frames = 0
        self.failures: list[str] = []

    def __call__(self, frame: dict[str, Any], answered: str | None) -> None:
        self.frames += 1
        self.failures += self.schema.errors(frame, answered, channel_kind)


@pytest.fixture
def schema_hook() -> SchemaHook:
    return SchemaHook()


async def _client(host: RunningHost, hook: SchemaHook, versions: tuple[str, ...] = PROTOCOL_VERSIONS) -> AhpClient:
    client = await AhpClient.connect(host.url.split("?")[0], token=TOKEN, frame_hook=hook)
    await client.initialize([ROOT], protocol_versions=versions)
    return client


@pytest.fixture
async def slow_host(tmp_path: Path) -> AsyncIterator[RunningHost]:
    """The offline agent, answering only after NEVER: a turn stays running until cancelled."""
    host = AgentHost(host_config(tmp_path / "data", default_directory=str(tmp_path), default_agent="offline",
                                 offline_delay=NEVER))
    running = await start_host(host, token=TOKEN)
    yield running
    await running.stop()


@pytest.fixture
async def connect(schema_hook: SchemaHook) -> AsyncIterator[Callable[..., Awaitable[AhpClient]]]:
    """``await connect(host[, versions])`` → a client initialized offering ``PROTOCOL_VERSIONS``;
    at the end each is closed and every frame they received must have fitted the schema."""
    opened: list[AhpClient] = []

    async def open_client(host: RunningHost, versions: tuple[str, ...] = PROTOCOL_VERSIONS) -> AhpClient:
        opened.append(await _client(host, schema_hook, versions))
        return opened[-1]

    yield open_client
    for client in opened:
        await client.close()
    assert schema_hook.failures == []


def _turn(state: dict[str, Any] | None, turn_id: str) -> dict[str, Any] | None:
    return next((t for t in (state or {}).get("turns") or [] if t.get("id") == turn_id), None)


async def _ended(client: AhpClient, chat: str, turn_id: str, state: str = "complete") -> dict[str, Any]:
    await client.wait_for(lambda mirror, _e: (_turn(mirror.state(chat), turn_id) or {}).get("state") == state)
    turn = _turn(client.state(chat), turn_id)
    assert turn is not None
    return turn


async def test_the_client_offers_the_model_versions_and_the_host_picks_the_newest(running_host, connect):
    assert PROTOCOL_VERSIONS == ("1.0.0", "0.9.0")
    client = await connect(running_host)
    assert client.protocol_version == "1.0.0" and client.speaks_model
    root = client.state(ROOT)
    assert root is not None and any(agent.get("provider") == "offline" for agent in root["agents"])


@pytest.mark.parametrize("versions", [PROTOCOL_VERSIONS, ("0.9.0",)], ids=["newest", "a host without 1.0.0"])
async def test_a_turn_in_the_default_chat_mirrors_exactly_what_a_fresh_subscriber_gets(running_host, connect, schema_hook, versions):
    client = await connect(running_host, versions)
    other = await connect(running_host, versions)
    assert client.protocol_version == versions[0] and client.speaks_model
    session = await client.create_session(provider="offline")
    chat = default_chat_uri(session)
    assert session.startswith("offline:/") and client.state(session) is not None
    assert client.subscriptions[-2:] == [session, chat]

    turn_id = client.send_message(session, "hello model")
    # Optimistic at once: the running turn carries our message before the host answers.
    assert client.state(chat)["activeTurn"]["message"]["text"] == "hello model"
    answer = await _ended(client, chat, turn_id)
    assert answer["message"]["text"] == "hello model"
    assert "hello model" in json.dumps(answer["responseParts"])
    # Folded by the model's reducers from the stream of envelopes, the mirror equals the
    # snapshot the host sends a client that subscribes afterwards.
    await other.subscribe(session)
    await other.subscribe(chat)
    assert client.mirror.pending() == []
    assert client.state(chat) == other.state(chat)
    assert client.state(session) == other.state(session)
    assert schema_hook.frames > 10


async def test_a_session_created_without_a_provider_is_found_on_the_hosts_default_agent(running_host, connect):
    client = await connect(running_host)
    session = await client.create_session()
    assert session.startswith("offline:/")
    assert default_chat_uri(session) in client.subscriptions


async def test_cancel_turn_ends_the_running_turn_as_cancelled(slow_host, connect):
    client = await connect(slow_host)
    session = await client.create_session(provider="offline")
    chat = default_chat_uri(session)
    turn_id = client.send_message(chat, "never answered")
    await client.wait_for(lambda mirror, _e: mirror.pending() == [])
    outcome = await client.outcome(client.cancel_turn(session, turn_id))
    assert outcome.accepted, outcome.reason
    await _ended(client, chat, turn_id, "cancelled")
    assert "activeTurn" not in client.state(chat)


async def test_resume_after_a_lost_connection_keeps_the_chat_in_step(running_host, connect):
    client = await connect(running_host)
    session = await client.create_session(provider="offline")
    chat = default_chat_uri(session)
    first = client.send_message(chat, "one")
    await _ended(client, chat, first)
    result = await client.resume()
    assert result.kind == "replay" and result.dropped == [] and client.protocol_version == PROTOCOL_VERSIONS[0]
    second = client.send_message(chat, "two")
    await _ended(client, chat, second)
    assert [t["message"]["text"] for t in client.state(chat)["turns"]] == ["one", "two"]


async def test_a_host_serving_none_of_the_offered_versions_is_a_clear_error():
    async with FakeHost() as fake:
        async def refuse(conn: Any, message: dict[str, Any]) -> None:
            raise RpcError(-32005, "This host serves AHP 0.2.0; none of ['1.0.0', '0.9.0'] is compatible.",
                           {"supportedVersions": ["0.2.0"]})

        fake.handlers["initialize"] = refuse
        client = await AhpClient.connect(fake.url, client_id="me")
        try:
            with pytest.raises(UnsupportedVersionError) as raised:
                await client.initialize([ROOT], protocol_versions=PROTOCOL_VERSIONS)
        finally:
            await client.close()
    message = str(raised.value)
    assert "serves AHP 0.2.0" in message and "speaks AHP 1.0.0, 0.9.0" in message and "Update the host" in message
    assert raised.value.code == -32005 and raised.value.data == {"supportedVersions": ["0.2.0"]}


async def test_a_side_chat_is_a_second_conversation_in_the_sessions_catalogue(running_host, connect):
    client = await connect(running_host)
    session = await client.create_session(provider="offline")
    main = default_chat_uri(session)
    side = await client.create_chat(session)
    # Named as the model and VS Code name a chat: ahp-chat://<name>/<its session, base64url>.
    name, of_session = parse_chat_uri(side) or ("", "")
    assert of_session == session and name.startswith("side-")
    await client.wait_for(lambda _m, _e: [c["resource"] for c in client.chats(session)] == [main, side])
    # A client connecting afterwards finds it under its session in the catalogue.
    other = await connect(running_host)
    await other.subscribe(session)
    assert [c["resource"] for c in other.chats(session)] == [main, side]

    in_side = client.send_message(side, "aside")
    answered = await _ended(client, side, in_side)  # the session's agent answers there
    assert any('"aside"' in str(part.get("content")) for part in answered["responseParts"])
    assert (client.state(main) or {}).get("turns") in (None, [])  # the default chat saw none of it

    await client.dispose_chat(side)
    await client.wait_for(lambda _m, _e: [c["resource"] for c in client.chats(session)] == [main])
    assert client.state(side) is None and side not in client.subscriptions


async def test_a_fork_starts_with_the_turns_up_to_the_chosen_one(running_host, connect):
    client = await connect(running_host)
    session = await client.create_session(provider="offline")
    main = default_chat_uri(session)
    ids = []
    for text in ("first", "second", "third"):
        ids.append(client.send_message(main, text))
        await _ended(client, main, ids[-1])

    fork = await client.create_chat(session, fork=(main, ids[1]))
    name, of_session = parse_chat_uri(fork) or ("", "")
    assert of_session == session and name.startswith("fork-")
    await client.wait_for(lambda _m, _e: [c["resource"] for c in client.chats(session)] == [main, fork])
    assert [t["message"]["text"] for t in client.state(fork)["turns"]] == ["first", "second"]
    more = client.send_message(fork, "fourth, in the fork")
    await _ended(client, fork, more)
    assert [t["message"]["text"] for t in client.state(main)["turns"]] == ["first", "second", "third"]
    assert [t["message"]["text"] for t in client.state(fork)["turns"]] == ["first", "second", "fourth, in the fork"]


async def test_chats_need_a_connection_on_the_model():
    async with FakeHost() as fake:
        client = await AhpClient.connect(fake.url, client_id="me")
        try:
            await client.initialize([ROOT], protocol_versions=("0.2.0",))  # the fake host answers in 0.2.0
            assert not client.speaks_model and client.chats("ahp-session:/x") == []
            with pytest.raises(AhpClientError, match="initialize with PROTOCOL_VERSIONS"):
                await client.create_chat("ahp-session:/x")
        finally:
            await client.close()


async def test_a_sub_agent_chat_is_opened_from_the_tool_call_that_spawned_it(tmp_path, schema_hook, frame_checker):
    provider = ScriptedProvider([
        call_tools(("task", {"description": "Look around", "prompt": "Say hello."})),
        reply("hello from the sub-agent"),
        reply("The sub-agent said hello."),
    ])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, _):
        client = await _client(running, schema_hook)
        try:
            session = await client.create_session(provider="scripted")
            main = default_chat_uri(session)
            turn_id = client.send_message(main, "ask a sub-agent to say hello")
            await _ended(client, main, turn_id)

            [worker] = subagent_chats(client.state(main))
            assert worker.turn_id == turn_id and worker.title
            assert worker.resource in [c["resource"] for c in client.chats(session)]
            await client.subscribe(worker.resource)
            [job] = client.state(worker.resource)["turns"]
            assert job["message"]["text"] == "Say hello."
            assert "hello from the sub-agent" in json.dumps(job["responseParts"])
        finally:
            await client.close()
    assert schema_hook.failures == []


async def test_by_default_the_client_offers_the_model_versions_and_takes_0_9_0_from_a_host_without_1_0_0():
    async with FakeHost() as fake:
        async def older_host(conn: Any, message: dict[str, Any]) -> dict[str, Any]:
            return {"protocolVersion": "0.9.0", "serverSeq": 0, "snapshots": []}

        fake.handlers["initialize"] = older_host
        client = await AhpClient.connect(fake.url, client_id="me")
        try:
            await client.initialize([ROOT])
            _conn, message = await fake.next_message("initialize")
            assert message["params"]["protocolVersions"] == ["1.0.0", "0.9.0"]
            assert client.protocol_version == "0.9.0" and client.speaks_model
        finally:
            await client.close()


async def test_an_answer_in_a_version_the_client_did_not_offer_is_refused():
    async with FakeHost() as fake:
        fake.version = "0.2.0"  # whatever is offered
        client = await AhpClient.connect(fake.url, client_id="me")
        try:
            with pytest.raises(HostProtocolError, match="answered in AHP 0.2.0, which this client did not offer"):
                await client.initialize([ROOT])
            assert client.protocol_version is None
        finally:
            await client.close()


async def test_a_real_host_speaks_1_0_0_with_a_client_that_offers_nothing_by_name(running_host):
    client = await AhpClient.connect(running_host.url.split("?")[0], token=TOKEN)
    try:
        await client.initialize([ROOT])
        assert client.protocol_version == "1.0.0" and client.speaks_model
        session = await client.create_session(provider="offline")
        chat = default_chat_uri(session)
        turn_id = client.send_message(session, "hello by default")
        answer = await _ended(client, chat, turn_id)
        assert "hello by default" in json.dumps(answer["responseParts"])
    finally:
        await client.close()


async def test_after_the_host_was_started_again_elsewhere_resume_handshakes_afresh_and_the_chat_goes_on(tmp_path):
    def start() -> AgentHost:
        return AgentHost(host_config(tmp_path / "data", default_directory=str(tmp_path), default_agent="offline"))

    first = await start_host(start(), token=TOKEN)
    client = await AhpClient.connect(first.url.split("?")[0], token=TOKEN)
    await client.initialize([ROOT])
    session = await client.create_session(provider="offline")
    chat = default_chat_uri(session)
    await _ended(client, chat, client.send_message(chat, "before"))
    await first.stop()
    with pytest.raises(ConnectionClosedError):
        await client.wait_for(lambda _m, _e: False, timeout=10)
    second = await start_host(start(), token=TOKEN)
    try:
        client.move_to(second.url.split("?")[0], TOKEN)
        result = await client.resume()
        # A host process that never saw this client learns its version from the reconnect
        # (``_meta.protocolVersion``): the frames it sends are 1.0.0's, the mirror stays whole.
        assert result.kind in ("replay", "snapshot") and result.dropped == [] and client.protocol_version == "1.0.0"
        assert [t["message"]["text"] for t in client.state(chat)["turns"]] == ["before"]
        await _ended(client, chat, client.send_message(chat, "after"))
        assert [t["message"]["text"] for t in client.state(chat)["turns"]] == ["before", "after"]
    finally:
        await client.close()
        await second.stop()


async def test_a_1_0_0_client_pages_a_long_chat_back_to_its_first_turn_with_cursors(tmp_path, schema_hook):
    """``fetch_turns`` in the negotiated version's shape (``{channel, cursor}``, answered after the
    host's ``chat/turnsLoaded``): a chat longer than the host keeps in state (3 turns, after a
    restart) pages back to its first turn, and the mirror ends as the host holds the chat."""
    def start() -> AgentHost:
        return AgentHost(host_config(tmp_path / "data", default_directory=str(tmp_path), default_agent="offline", recent_turns=3))

    first = await start_host(start(), token=TOKEN)
    try:
        maker = await _client(first, schema_hook)
        session = await maker.create_session(provider="offline")
        chat = default_chat_uri(session)
        for index in range(8):
            await _ended(maker, chat, maker.send_message(chat, f"message {index}"))
        await maker.close()
    finally:
        await first.stop()
    running = await start_host(start(), token=TOKEN)  # the recovered chat holds its 3 newest turns
    client = await _client(running, schema_hook)
    try:
        assert client.protocol_version == "1.0.0"
        with pytest.raises(AhpClientError, match="subscribe to"):
            await client.fetch_turns(session)  # the page goes to the chat's subscribers
        await client.subscribe(session)
        await client.subscribe(chat)
        texts = lambda turns: [t["message"]["text"] for t in turns]  # noqa: E731
        assert texts(client.state(chat)["turns"]) == [f"message {i}" for i in range(5, 8)]
        assert client.state(chat).get("turnsNextCursor")
        with pytest.raises(AhpClientError, match="takes a cursor in AHP 1.0.0"):
            await client.fetch_turns(session, before=client.state(chat)["turns"][0]["id"], limit=2)

        page = await client.fetch_turns(session)  # a session's URI means its default chat
        assert texts(page["turns"]) == ["message 2", "message 3", "message 4"] and page["hasMore"] is True
        page = await client.fetch_turns(chat)
        assert texts(page["turns"]) == ["message 0", "message 1"] and page["hasMore"] is False
        assert texts(client.state(chat)["turns"]) == [f"message {i}" for i in range(8)]
        assert "turnsNextCursor" not in client.state(chat)
        assert client.state(chat) == running.host.store.state(chat)
        assert await client.fetch_turns(chat) == {"turns": [], "hasMore": False}  # nothing older
        with pytest.raises(AhpError) as bad:
            await client.fetch_turns(chat, cursor="made-up")
        assert bad.value.code == -32602
    finally:
        await client.close()
        await running.stop()
    assert schema_hook.failures == []
