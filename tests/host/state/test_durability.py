"""Durability: the host runs as its own process, is killed with SIGKILL mid-turn, and a new
process on the same data directory brings every session, turn and pending message back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ahp.state import default_chat_uri
from cli.serve_process import ServeProcess
from client import PROTOCOL_VERSIONS, AhpClient
from tests.conftest import TOKEN

ROOT = "ahp-root://"


def host_process(data_dir: Path, config: Path, prefix: tuple[str, ...] = ()) -> ServeProcess:
    """``agent-host serve`` on ``data_dir`` as its own process (``prefix``: a command it is started
    through, e.g. ``unshare`` with lower limits)."""
    return ServeProcess(["--data-dir", str(data_dir), "--config", str(config)], token=TOKEN, prefix=prefix)


def host_in(tmp_path: Path, sessions: str) -> ServeProcess:
    """A host process (not started) on ``tmp_path/data``, its ``[sessions]`` table holding ``sessions``
    and the default directory ``tmp_path``."""
    config = tmp_path / "host.toml"
    config.write_text(f'[sessions]\n{sessions}default_directory = "{tmp_path}"\n')
    return host_process(tmp_path / "data", config)


async def root_client(host: ServeProcess, protocol_versions: tuple[str, ...] = PROTOCOL_VERSIONS) -> AhpClient:
    """An initialized client of the running ``host``, subscribed to the root channel."""
    client = await AhpClient.connect(host.url)
    await client.initialize(subscriptions=[ROOT], protocol_versions=protocol_versions)
    return client


async def test_everything_is_back_after_kill_9(tmp_path: Path) -> None:
    config = tmp_path / "host.toml"
    # Slow words, so that a turn is certainly still streaming when the host is killed.
    config.write_text(f'[sessions]\ndefault_agent = "offline"\noffline_delay = 0.2\ndefault_directory = "{tmp_path}"\n')
    host = host_process(tmp_path / "data", config)
    try:
        await host.start()
        client = await AhpClient.connect(host.url)
        await client.initialize(subscriptions=[ROOT])
        done = await client.create_session()
        client.dispatch(done, {"type": "session/titleChanged", "title": "Finished work"})
        turn = client.send_message(done, "a")
        busy = await client.create_session()
        chat = default_chat_uri(busy)
        running_turn = client.send_message(busy, "this one will be interrupted")
        client.dispatch(chat, {"type": "chat/pendingMessageSet", "kind": "steering", "id": "s1", "message": said("steer me")})
        client.dispatch(chat, {"type": "chat/pendingMessageSet", "kind": "queued", "id": "q1", "message": said("queued for later")})
        await client.wait_for(lambda m, e: "queuedMessages" in (client.state(chat) or {}) and len(client.state(chat)["activeTurn"]["responseParts"]) == 1)
        await client.wait_for(lambda m, e: len(client.state(chat)["activeTurn"]["responseParts"][0]["content"]) > 10, timeout=20)
        seq_before = client.server_seq
        partial = client.state(chat)["activeTurn"]["responseParts"][0]["content"]
        await client.ping()
        host.kill()
        await client.close()

        await host.start()
        again = await AhpClient.connect(host.url)
        result = await again.initialize(subscriptions=[ROOT, done, busy, default_chat_uri(done), chat])
        assert result["serverSeq"] > seq_before
        summaries = {s["resource"]: s for s in await again.list_sessions()}
        assert set(summaries) == {done, busy}
        assert summaries[done]["title"] == "Finished work"

        # The other session kept its turn (ended as complete or, if it was still streaming, as an error).
        assert [t["id"] for t in again.state(default_chat_uri(done))["turns"]] == [turn]

        # The interrupted turn is finalised as an error that says what happened...
        interrupted = again.state(chat)["turns"][0]
        assert interrupted["id"] == running_turn
        assert interrupted["state"] == "error"
        error = interrupted["responseParts"][-1]
        assert error["kind"] == "error" and error["error"]["errorType"] == "hostRestarted"
        assert "stopped while this turn was running" in error["error"]["message"]
        assert interrupted["responseParts"][0]["content"].startswith(partial)
        # ...the steering message the interrupted turn never took in runs next, then the queued one.
        await again.wait_for(
            lambda m, e: [t["message"]["text"] for t in again.state(chat)["turns"][1:3]] == ["steer me", "queued for later"],
            timeout=30,
        )
        assert "steeringMessage" not in again.state(chat) and "queuedMessages" not in again.state(chat)

        # serverSeq keeps increasing after the restart and the host works normally.
        seq = again.server_seq
        fresh = await again.create_session()
        again.dispatch(fresh, {"type": "session/isReadChanged", "isRead": True})
        assert (await again.outcome(again.dispatch(fresh, {"type": "session/isArchivedChanged", "isArchived": True}))).accepted
        assert again.server_seq > seq
        await again.close()
    finally:
        host.stop()


def said(text: str) -> dict[str, Any]:
    """A user's message, as the model writes one."""
    return {"text": text, "origin": {"kind": "user"}}


async def test_a_clean_restart_keeps_sessions_and_resumes_replay(tmp_path: Path) -> None:
    config = tmp_path / "host.toml"
    config.write_text('[sessions]\ndefault_agent = "offline"\noffline_delay = 0\n')
    host = host_process(tmp_path / "data", config)
    try:
        await host.start()
        client = await AhpClient.connect(host.url)
        await client.initialize(subscriptions=[ROOT])
        session = await client.create_session()
        chat = default_chat_uri(session)
        client.send_message(session, "persist me")
        await client.wait_for(lambda m, e: len(client.state(chat).get("turns") or []) == 1)
        host.stop()
        await host.start()
        # The same client resumes on the new process: the journal restored the replay window.
        client.url = host.url  # the port changed with the new process
        result = await client.resume()
        assert result.kind in ("replay", "snapshot")
        assert client.state(chat)["turns"][0]["message"]["text"] == "persist me"
        await client.close()
    finally:
        host.stop()


async def test_after_kill_9_every_session_has_at_least_the_text_its_subscribers_saw(tmp_path: Path) -> None:
    # Twenty sessions streaming at once: many deltas per commit (group commit, coalesced runs).
    config = tmp_path / "host.toml"
    config.write_text(f'[sessions]\ndefault_agent = "offline"\noffline_delay = 0.002\ndefault_directory = "{tmp_path}"\n')
    host = host_process(tmp_path / "data", config)
    try:
        await host.start()
        client = await AhpClient.connect(host.url)
        await client.initialize(subscriptions=[ROOT])
        sessions = [await client.create_session() for _ in range(20)]
        for session in sessions:
            client.send_message(session, "stream this back quickly")

        def streamed(session: str) -> str:
            state = client.state(default_chat_uri(session)) or {}
            turn = state.get("activeTurn") or ((state.get("turns") or [None])[0]) or {}
            parts = turn.get("responseParts") or [{}]
            return parts[0].get("content") or ""

        await client.wait_for(lambda m, e: sum(len(streamed(s)) > 40 for s in sessions) >= 10, timeout=30)
        host.kill()  # the client's mirror now holds exactly the frames that left the host
        seen = {session: streamed(session) for session in sessions}
        await client.close()

        await host.start()
        again = await AhpClient.connect(host.url)
        await again.initialize(subscriptions=[ROOT, *map(default_chat_uri, sessions)])
        for session in sessions:
            recovered = again.state(default_chat_uri(session))["turns"][0]["responseParts"][0]["content"] if seen[session] else ""
            assert recovered.startswith(seen[session]), session
        await again.close()
    finally:
        host.stop()


async def test_a_message_queued_as_the_turn_completes_runs_after_kill_9(tmp_path: Path) -> None:
    # The host is killed the moment the client sees the turn complete, with a message queued behind
    # it: the queued message must not wait for ever in the restarted host.
    host = host_in(tmp_path, 'default_agent = "offline"\noffline_delay = 0.05\n')
    try:
        await host.start()
        client = await root_client(host)
        session = await client.create_session()
        chat = default_chat_uri(session)
        first = client.send_message(session, "answer me first")
        await client.wait_for(lambda m, e: (client.state(chat) or {}).get("activeTurn") is not None)
        queued = client.dispatch(chat, {"type": "chat/pendingMessageSet", "kind": "queued", "id": "q1",
                                        "message": said("queued behind it")})
        assert (await client.outcome(queued)).accepted

        def completed_then_kill(message: Any, envelope: Any) -> bool:
            turns = (client.state(chat) or {}).get("turns") or []
            if turns and turns[0]["id"] == first:
                host.kill()
                return True
            return False

        await client.wait_for(completed_then_kill, timeout=30)
        await client.close()

        await host.start()
        again = await AhpClient.connect(host.url)
        await again.initialize(subscriptions=[ROOT, chat])

        def ran(m: Any, e: Any) -> bool:
            state = again.state(chat) or {}
            texts = [turn["message"]["text"] for turn in state.get("turns") or []]
            return texts[:2] == ["answer me first", "queued behind it"] and not state.get("queuedMessages")

        await again.wait_for(ran, timeout=30)
        await again.close()
    finally:
        host.stop()
