"""Token levels end to end: a real host on port 0, named tokens in its data directory, real
WebSocket clients (and AG-UI over HTTP). What a ``read`` token sees and is refused, what a ``full``
one may do, who answered a confirmation, revocation, and the three ways to present a token."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from ahp.state import default_chat_uri
from ahp.workspace_trust import CONFIG_KEY
from client import AhpClient
from client.errors import AhpError, ConnectionClosedError
from host.service import AgentHost
from host.transport.agui import session_uri_for
from host.transport.server import RunningHost, start_host
from host.transport.tokens import TokenFile
from providers import ScriptedProvider
from providers.scripted import Pause, Script, call_tools, finish, reply, text
from tests.conftest import TOKEN, FrameChecker
from tests.host.runtime.agents.harness import config_for, ready_session
from tests.host.runtime.tools._support import scripted, tools_config, wait_pending
from tests.host.transport.agui.agui_client import events_of, open_run, run, run_input, text_of, types, user

ROOT = "ahp-root://"


def held_reply(gate: asyncio.Event, first: str, rest: str) -> Script:
    """Streams ``first``, waits for ``gate``, then streams ``rest`` and finishes."""
    events = text([first, rest], index=0)
    return Script((events[0], events[1], Pause(event=gate), *events[2:], *finish("stop", input_tokens=3, output_tokens=2)))


@asynccontextmanager
async def hosting(tmp_path: Path, provider: ScriptedProvider) -> AsyncIterator[tuple[RunningHost, TokenFile]]:
    config = tools_config(tmp_path)
    running = await start_host(AgentHost(config, agents=[scripted(provider)]), token=TOKEN)
    try:
        yield running, TokenFile(config.data_path())
    finally:
        await running.stop()


async def client_of(running: RunningHost, checker: FrameChecker, token: str | None, *, url: str | None = None) -> AhpClient:
    client = await AhpClient.connect(url or running.url.split("?")[0], token=token, frame_hook=checker.client_hook())
    await client.initialize(subscriptions=[ROOT])
    return client


def confirm(client: AhpClient, chat: str, call: dict[str, Any], **fields: Any) -> int:
    return client.dispatch(chat, {"type": "chat/toolCallConfirmed", "turnId": call["turnId"],
                                     "toolCallId": call["toolCallId"], **fields})


def trusted(running: RunningHost) -> Any:
    """The host's ``trustedFolders`` (its root config value)."""
    return ((running.host.store.state(ROOT) or {}).get("config") or {}).get("values", {}).get(CONFIG_KEY)


def call_in(client: AhpClient, chat: str, call_id: str) -> dict[str, Any]:
    turn = (client.state(chat) or {}).get("activeTurn") or {}
    return next(p["toolCall"] for p in turn.get("responseParts") or () if p.get("kind") == "toolCall"
                and p["toolCall"]["toolCallId"] == call_id)


async def test_a_read_token_watches_a_streaming_turn_and_cannot_approve_dispatch_create_or_change_anything(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    gate = asyncio.Event()
    provider = ScriptedProvider([call_tools(("shell", {"command": "echo one"})), held_reply(gate, "Hel", "lo there")])
    async with hosting(tmp_path, provider) as (running, tokens):
        alice_secret = tokens.create("alice", "read")
        bob_secret = tokens.create("bob", "full")
        bob = await client_of(running, frame_checker, bob_secret)
        alice = await client_of(running, frame_checker, alice_secret)
        owner = await client_of(running, frame_checker, TOKEN)  # the host's own token: full
        try:
            session = await ready_session(bob)  # a full token creates sessions
            chat = default_chat_uri(session)
            watched = alice.subscribe_events()
            for client in (alice, owner):
                await client.subscribe(session)
                await client.subscribe(chat)
            bob.send_message(session, "run it")
            call = await wait_pending(alice, chat)  # alice sees the turn live, waiting for a person
            trusted_before = trusted(running)

            # Refused actions come back as rejections naming both levels; nothing changes.
            refused = [
                confirm(alice, chat, call, approved=True, confirmed="user-action", selectedOptionId="allow-once"),
                alice.dispatch(chat, {"type": "chat/turnCancelled", "turnId": call["turnId"]}),
                alice.dispatch(ROOT, {"type": "root/configChanged", "config": {CONFIG_KEY: [str(tmp_path)]}}),
            ]
            for seq in refused:
                outcome = await alice.outcome(seq)
                assert outcome.status == "rejected"
                assert "level full" in (outcome.reason or "") and "token 'alice' (level read)" in (outcome.reason or "")
            assert call_in(bob, chat, call["toolCallId"])["status"] == "pending-confirmation"
            assert trusted(running) == trusted_before

            # Refused requests are JSON-RPC errors naming both levels; the connection stays usable.
            for method, params in (
                ("createSession", {"channel": "scripted:/by-alice"}),
                ("disposeSession", {"channel": session}),
                ("resourceWrite", {"uri": (tmp_path / "x.txt").as_uri(), "data": "eA==", "encoding": "base64"}),
                ("createTerminal", {"channel": "ahp-terminal:/by-alice"}),
            ):
                with pytest.raises(AhpError) as refusal:
                    await alice.request(method, params)
                assert refusal.value.code == -32009
                assert refusal.value.data == {"tokenLevel": "read", "requiredLevel": "full", "token": "alice"}
                assert method in refusal.value.message and "level read" in refusal.value.message
            assert not (tmp_path / "x.txt").exists() and "scripted:/by-alice" not in running.host.store
            assert [item["resource"] for item in await alice.list_sessions()] == [session]

            # The full token answers; everyone sees who did, and a later answer is refused saying so.
            seq = confirm(bob, chat, call, approved=True, confirmed="user-action", selectedOptionId="allow-once")
            assert (await bob.outcome(seq)).status == "accepted"
            await alice.wait_for(lambda m, e: "Hel" in json.dumps((alice.state(chat) or {}).get("activeTurn")), timeout=20)
            answered = call_in(alice, chat, call["toolCallId"])
            assert answered["status"] == "completed"
            assert answered["_meta"]["answeredBy"] == {"clientId": bob.client_id, "tokenName": "bob"}
            late = await owner.outcome(confirm(owner, chat, call, approved=False, reason="denied", selectedOptionId="deny"))
            assert late.status == "rejected" and "already answered by token 'bob'" in (late.reason or "")
            gate.set()
            await alice.wait_for(lambda m, e: len((alice.state(chat) or {}).get("turns") or []) == 1, timeout=20)
            [turn] = alice.state(chat)["turns"]
            assert turn["responseParts"][-1]["content"] == "Hello there"
            origins = []
            while not watched.empty():
                note = watched.get_nowait()
                if (note is not None and note.method == "action" and note.params["action"]["type"] == "chat/toolCallConfirmed"
                        and "rejectionReason" not in note.params):
                    origins.append(note.params["origin"])
            assert origins == [{"clientId": bob.client_id, "clientSeq": seq, "tokenName": "bob"}]
        finally:
            for client in (alice, bob, owner):
                await client.close()


async def test_a_full_named_token_changes_trust_and_a_read_one_cannot(tmp_path: Path, frame_checker: FrameChecker) -> None:
    async with hosting(tmp_path, ScriptedProvider([])) as (running, tokens):
        full = await client_of(running, frame_checker, tokens.create("lead", "full"))
        read = await client_of(running, frame_checker, tokens.create("guest", "read"))
        try:
            refused = await read.outcome(read.dispatch(ROOT, {"type": "root/configChanged", "config": {CONFIG_KEY: [str(tmp_path)]}}))
            accepted = await full.outcome(full.dispatch(ROOT, {"type": "root/configChanged", "config": {CONFIG_KEY: [str(tmp_path)]}}))
            assert (refused.status, accepted.status) == ("rejected", "accepted")
            await read.wait_for(lambda m, e: str(tmp_path) in json.dumps((read.state(ROOT) or {}).get("config")))
        finally:
            await full.close()
            await read.close()


async def test_a_revoked_tokens_watching_connection_is_closed_and_it_cannot_connect_again(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    async with hosting(tmp_path, ScriptedProvider([])) as (running, tokens):
        secret = tokens.create("temp", "read")
        watcher = await client_of(running, frame_checker, secret)
        asker = await client_of(running, frame_checker, secret)
        kept = await client_of(running, frame_checker, tokens.create("kept", "read"))
        try:
            ended = watcher.subscribe_events()
            tokens.revoke("temp")
            # One that asks something is refused at once; one that only watches is closed soon after.
            with pytest.raises((ConnectionClosedError, AhpError)):
                await asker.list_sessions()
            assert await asyncio.wait_for(_end_of(ended), 10) is None
            assert not watcher.is_connected
            with pytest.raises(ConnectionClosedError):
                await AhpClient.connect(running.url.split("?")[0], token=secret)
            assert await kept.list_sessions() == []  # other tokens go on
        finally:
            for client in (watcher, asker, kept):
                await client.close()


async def _end_of(queue: Any) -> None:
    while (note := await queue.get()) is not None:
        pass
    return note


@pytest.mark.parametrize("how", ["bearer", "token", "tkn"])
async def test_a_named_token_is_accepted_as_bearer_header_token_or_tkn_query(
        tmp_path: Path, frame_checker: FrameChecker, how: str) -> None:
    async with hosting(tmp_path, ScriptedProvider([])) as (running, tokens):
        secret = tokens.create("reader", "read")
        base = running.url.split("?")[0]
        url = base if how == "bearer" else f"{base}?{how}={secret}"
        client = await client_of(running, frame_checker, secret if how == "bearer" else None, url=url)
        try:
            with pytest.raises(AhpError) as refusal:
                await client.request("createSession", {"channel": "scripted:/x"})
            assert refusal.value.data["token"] == "reader"  # the level of that token, however it came
        finally:
            await client.close()
        with pytest.raises(ConnectionClosedError):
            await AhpClient.connect(f"{base}?token=aht_not-a-token", token=None)


async def test_ag_ui_with_a_read_token_joins_a_thread_but_starts_nothing(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([reply("Hi from the model.")])
    config = config_for(tmp_path)
    running = await start_host(AgentHost(config, agents=[scripted(provider)]), token=TOKEN)
    tokens = TokenFile(config.data_path())
    try:
        reader, writer = tokens.create("reader", "read"), tokens.create("writer", "full")
        fresh = await run(running.http_url, run_input("t-new", "r0", [user("m0", "hello")]), token=reader)
        assert types(fresh) == ["RUN_STARTED", "RUN_ERROR"] and fresh[-1]["code"] == "permissionDenied"
        assert "level full" in fresh[-1]["message"] and "level read" in fresh[-1]["message"]
        assert session_uri_for("t-new", "scripted") not in running.host.store

        written = await run(running.http_url, run_input("t1", "r1", [user("m1", "hello")]), token=writer)
        assert text_of(written) == "Hi from the model." and written[-1]["type"] == "RUN_FINISHED"
        more = await run(running.http_url, run_input("t1", "r2", [user("m1", "hello"), user("m2", "more")]), token=reader)
        assert types(more) == ["RUN_STARTED", "RUN_ERROR"] and more[-1]["code"] == "permissionDenied"
        joined = await run(running.http_url, run_input("t1", "r4", []), token=reader)
        assert types(joined) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
        assert [m["content"] for m in joined[1]["messages"]] == ["hello", "Hi from the model."]
        assert len(provider.requests) == 1  # the read token's runs reached no model
        async with httpx.AsyncClient() as http:
            wrong = await http.post(f"{running.http_url}/agui", json=run_input("t1", "r5", []),
                                    headers={"Accept": "text/event-stream", "Authorization": "Bearer aht_wrong"})
            query = await http.post(f"{running.http_url}/agui", params={"tkn": reader}, json=run_input("t1", "r6", []),
                                    headers={"Accept": "text/event-stream"})
        assert wrong.status_code == 403 and query.status_code == 200
    finally:
        await running.stop()


async def test_a_read_client_borrowing_a_full_clients_id_serves_nothing_for_it(tmp_path: Path, frame_checker: FrameChecker) -> None:
    """A clientId is only what a client calls itself: a read token's connection under a full
    client's id is not asked for that client's resources (a plugin tree it publishes, say)."""
    async with hosting(tmp_path, ScriptedProvider([])) as (running, tokens):
        full = await AhpClient.connect(running.url.split("?")[0], token=tokens.create("owner", "full"), client_id="shared-id",
                                       frame_hook=frame_checker.client_hook())
        await full.initialize(subscriptions=[ROOT])
        read = await AhpClient.connect(running.url.split("?")[0], token=tokens.create("guest", "read"), client_id="shared-id",
                                       frame_hook=frame_checker.client_hook())
        await read.initialize(subscriptions=[ROOT])
        asked: list[str] = []

        def answering(who: str) -> Any:
            async def handler(params: Any) -> dict[str, Any]:
                asked.append(who)
                return {"data": "", "encoding": "utf-8"}
            return handler

        full.on_request("resourceRead", answering("full"))
        read.on_request("resourceRead", answering("read"))
        try:
            await running.host.client_resources.call("shared-id", "resourceRead", {"uri": "virtual://shared-id/plugin.json"})
            assert asked == ["full"]
            await full.close()
            with pytest.raises(Exception, match="not connected"):
                await running.host.client_resources.call("shared-id", "resourceRead", {"uri": "virtual://shared-id/plugin.json"})
            assert asked == ["full"]
        finally:
            await full.close()
            await read.close()


async def test_ag_ui_with_a_read_token_follows_a_running_turn_live_and_cannot_cancel_it(tmp_path: Path, frame_checker: FrameChecker) -> None:
    gate = asyncio.Event()
    provider = ScriptedProvider([held_reply(gate, "Partly", " done.")])
    config = config_for(tmp_path)
    running = await start_host(AgentHost(config, agents=[scripted(provider)]), token=TOKEN)
    tokens = TokenFile(config.data_path())
    watcher = await client_of(running, frame_checker, TOKEN)
    try:
        reader, writer = tokens.create("reader", "read"), tokens.create("writer", "full")
        session = session_uri_for("t2", "scripted")
        chat = default_chat_uri(session)
        await ready_session(watcher, channel=session)
        messages = [user("m1", "go")]
        started = asyncio.create_task(run(running.http_url, run_input("t2", "r1", messages), token=writer))
        await watcher.wait_for(lambda m, e: "Partly" in json.dumps((watcher.state(chat) or {}).get("activeTurn")), timeout=20)
        cancel = await run(running.http_url, run_input("t2", "r2", messages, forwardedProps={"cancel": True}), token=reader)
        assert types(cancel) == ["RUN_STARTED", "RUN_ERROR"] and cancel[-1]["code"] == "permissionDenied"
        followed: list[dict[str, Any]] = []
        joined = asyncio.Event()

        async def follow() -> None:
            async with open_run(running.http_url, run_input("t2", "r3", messages), token=reader) as response:
                async for event in events_of(response):
                    followed.append(event)
                    if event["type"] == "MESSAGES_SNAPSHOT":
                        joined.set()

        follower = asyncio.create_task(follow())
        await asyncio.wait_for(joined.wait(), 20)
        assert not follower.done()  # following the running turn
        gate.set()
        _, written = await asyncio.wait_for(asyncio.gather(follower, started), 20)
        assert text_of(written) == "Partly done." and written[-1]["type"] == "RUN_FINISHED"
        # It followed the turn to its end (an AG-UI join streams only parts started after it joined).
        assert types(followed) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
        await watcher.wait_for(lambda m, e: len((watcher.state(chat) or {}).get("turns") or []) == 1, timeout=20)
        assert watcher.state(chat)["turns"][0]["state"] == "complete"  # not cancelled
    finally:
        await watcher.close()
        await running.stop()
