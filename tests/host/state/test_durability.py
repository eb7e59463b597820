"""Durability: the host runs as its own process, is killed with SIGKILL mid-turn, and a new
process on the same data directory brings every session, turn and pending message back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cli.serve_process import ServeProcess
from client import AhpClient
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


async def root_client(host: ServeProcess) -> AhpClient:
    """An initialized client of the running ``host``, subscribed to the root channel."""
    client = await AhpClient.connect(host.url)
    await client.initialize(subscriptions=[ROOT], protocol_versions=("0.2.0",))
    return client


async def test_everything_is_back_after_kill_9(tmp_path: Path) -> None:
    config = tmp_path / "host.toml"
    # Slow words, so that a turn is certainly still streaming when the host is killed.
    config.write_text(f'[sessions]\ndefault_agent = "offline"\noffline_delay = 0.2\ndefault_directory = "{tmp_path}"\n')
    host = host_process(tmp_path / "data", config)
    try:
        await host.start()
        client = await AhpClient.connect(host.url)
        await client.initialize(subscriptions=[ROOT], protocol_versions=("0.2.0",))
        done = await client.create_session()
        client.dispatch(done, {"type": "session/titleChanged", "title": "Finished work"})
        turn = client.send_message(done, "a")
        busy = await client.create_session()
        running_turn = client.send_message(busy, "this one will be interrupted")
        client.dispatch(busy, {"type": "session/pendingMessageSet", "kind": "steering", "id": "s1", "userMessage": {"text": "steer me"}})
        client.dispatch(busy, {"type": "session/pendingMessageSet", "kind": "queued", "id": "q1", "userMessage": {"text": "queued for later"}})
        await client.wait_for(lambda m, e: "queuedMessages" in (client.state(busy) or {}) and len(client.state(busy)["activeTurn"]["responseParts"]) == 1)
        await client.wait_for(lambda m, e: len(client.state(busy)["activeTurn"]["responseParts"][0]["content"]) > 10, timeout=20)
        seq_before = client.server_seq
        partial = client.state(busy)["activeTurn"]["responseParts"][0]["content"]
        await client.ping()
        host.kill()
        await client.close()

        await host.start()
        again = await AhpClient.connect(host.url)
        result = await again.initialize(subscriptions=[ROOT, done, busy], protocol_versions=("0.2.0",))
        assert result["serverSeq"] > seq_before
        summaries = {s["resource"]: s for s in await again.list_sessions()}
        assert set(summaries) == {done, busy}
        assert summaries[done]["title"] == "Finished work"

        # The other session kept its turn (ended as complete or, if it was still streaming, as an error).
        assert [t["id"] for t in again.state(done)["turns"]] == [turn]

        # The interrupted turn is finalised as an error that says what happened...
        interrupted = again.state(busy)["turns"][0]
        assert interrupted["id"] == running_turn
        assert interrupted["state"] == "error"
        assert interrupted["error"]["errorType"] == "hostRestarted"
        assert "stopped while this turn was running" in interrupted["error"]["message"]
        assert interrupted["responseParts"][0]["content"].startswith(partial)
        # ...the steering message the interrupted turn never took in runs next, then the queued one.
        await again.wait_for(
            lambda m, e: [t["userMessage"]["text"] for t in again.state(busy)["turns"][1:3]] == ["steer me", "queued for later"],
            timeout=30,
        )
        assert "steeringMessage" not in again.state(busy) and "queuedMessages" not in again.state(busy)

        # serverSeq keeps increasing after the restart and the host works normally.
        seq = again.server_seq
        fresh = await again.create_session()
        again.dispatch(fresh, {"type": "session/isReadChanged", "isRead": True})
        assert (await again.outcome(again.dispatch(fresh, {"type": "session/isArchivedChanged", "isArchived": True}))).accepted
        assert again.server_seq > seq
        await again.close()
    finally:
        host.stop()


async def test_a_clean_restart_keeps_sessions_and_resumes_replay(tmp_path: Path) -> None:
    config = tmp_path / "host.toml"
    config.write_text('[sessions]\ndefault_agent = "offline"\noffline_delay = 0\n')
    host = host_process(tmp_path / "data", config)
    try:
        await host.start()
        client = await AhpClient.connect(host.url)
        await client.initialize(subscriptions=[ROOT], protocol_versions=("0.2.0",))
        session = await client.create_session()
        client.send_message(session, "persist me")
        await client.wait_for(lambda m, e: len(client.state(session).get("turns") or []) == 1)
        host.stop()
        await host.start()
        # The same client resumes on the new process: the journal restored the replay window.
        client.url = host.url  # the port changed with the new process
        result = await client.resume()
        assert result.kind in ("replay", "snapshot")
        assert client.state(session)["turns"][0]["userMessage"]["text"] == "persist me"
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
        await client.initialize(subscriptions=[ROOT], protocol_versions=("0.2.0",))
        sessions = [await client.create_session() for _ in range(20)]
        for session in sessions:
            client.send_message(session, "stream this back quickly")

        def streamed(session: str) -> str:
            state = client.state(session) or {}
            turn = state.get("activeTurn") or ((state.get("turns") or [None])[0]) or {}
            parts = turn.get("responseParts") or [{}]
            return parts[0].get("content") or ""

        await client.wait_for(lambda m, e: sum(len(streamed(s)) > 40 for s in sessions) >= 10, timeout=30)
        host.kill()  # the client's mirror now holds exactly the frames that left the host
        seen = {session: streamed(session) for session in sessions}
        await client.close()

        await host.start()
        again = await AhpClient.connect(host.url)
        await again.initialize(subscriptions=[ROOT, *sessions], protocol_versions=("0.2.0",))
        for session in sessions:
            recovered = again.state(session)["turns"][0]["responseParts"][0]["content"] if seen[session] else ""
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
        first = client.send_message(session, "answer me first")
        await client.wait_for(lambda m, e: (client.state(session) or {}).get("activeTurn") is not None)
        queued = client.dispatch(session, {"type": "session/pendingMessageSet", "kind": "queued", "id": "q1",
                                           "userMessage": {"text": "queued behind it"}})
        assert (await client.outcome(queued)).accepted

        def completed_then_kill(message: Any, envelope: Any) -> bool:
            turns = (client.state(session) or {}).get("turns") or []
            if turns and turns[0]["id"] == first:
                host.kill()
                return True
            return False

        await client.wait_for(completed_then_kill, timeout=30)
        await client.close()

        await host.start()
        again = await AhpClient.connect(host.url)
        await again.initialize(subscriptions=[ROOT, session], protocol_versions=("0.2.0",))

        def ran(m: Any, e: Any) -> bool:
            state = again.state(session) or {}
            texts = [turn["userMessage"]["text"] for turn in state.get("turns") or []]
            return texts[:2] == ["answer me first", "queued behind it"] and not state.get("queuedMessages")

        await again.wait_for(ran, timeout=30)
        await again.close()
    finally:
        host.stop()
