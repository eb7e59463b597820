"""The turn runner (``host.runtime.turns``) on a real host: what a turn's start, and a model call's end, make durable together."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from providers import ScriptedProvider
from providers.scripted import Pause, Script, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import Recorder, config_for, idle, ready_session, run_turn, serving
from tests.host.runtime.agents.test_turn_loop import agent


def _committed(journal: Any, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Each SQLite transaction the journal commits from now on, as the types of the actions it holds
    (``activityChanged`` with its text), in order."""
    transactions: list[list[str]] = []
    flush = journal.flush

    def recorded(settle: bool = False) -> bool:
        actions = []
        for row in journal.transaction_rows:
            if isinstance(row, tuple) and row[0] == "action":
                action = json.loads(row[4])["action"]
                actions.append(f"{action['type']} {action.get('activity')}" if "activity" in action["type"] else action["type"])
        committed = flush(settle)
        if committed:
            transactions.append(actions)
        return committed

    monkeypatch.setattr(journal, "flush", recorded)
    return transactions


async def test_a_turn_s_start_and_its_first_activity_are_one_transaction_and_reach_the_client_in_order(
    tmp_path: Path, frame_checker: FrameChecker, monkeypatch: pytest.MonkeyPatch,
) -> None:
    gate = asyncio.Event()
    provider = ScriptedProvider([reply("first"), Script((Pause(event=gate), *reply("second").steps))])
    async with serving(config_for(tmp_path), frame_checker, [agent(provider)]) as (running, client):
        session = await ready_session(client)
        # (A session's first turn waits for its MCP servers' first start before its first activity.)
        await run_turn(client, session, "first")
        recorder = Recorder(client, session)
        transactions = _committed(running.host.store._journal, monkeypatch)
        client.send_message(session, "second")
        await client.wait_for(lambda m, e: (client.state(session) or {}).get("summary", {}).get("activity") == "Waiting for m1")
        gate.set()
        await idle(client, session)
        turn = client.state(session)["turns"][-1]
    # A kill before this commit loses both (and no frame of either had left); after it, neither is lost.
    assert transactions[0] == ["chat/turnStarted", "session/chatUpdated",
                               "chat/activityChanged Waiting for m1", "session/activityChanged Waiting for m1"]
    seen = recorder.types()
    assert seen.index("session/turnStarted") < seen.index("session/activityChanged") < seen.index("session/responsePart")
    assert turn["state"] == "complete" and turn["responseParts"][0]["content"] == "second"


async def test_a_model_call_s_last_chunk_and_the_turn_s_end_read_at_once_are_one_transaction(
    tmp_path: Path, frame_checker: FrameChecker, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The provider's last chunk, its usage and the stream's end come in one read (as a provider's
    # last bytes do): the answer's end and the turn's end are made durable, and leave, together,
    # so a client never shows the whole answer while it still sees the turn running.
    gate = asyncio.Event()
    provider = ScriptedProvider([Script((Pause(event=gate), *reply("the answer").steps))])
    async with serving(config_for(tmp_path), frame_checker, [agent(provider)]) as (running, client):
        session = await ready_session(client)
        client.send_message(session, "hello")
        await client.wait_for(lambda m, e: (client.state(session) or {}).get("summary", {}).get("activity") == "Waiting for m1")
        transactions = _committed(running.host.store._journal, monkeypatch)
        gate.set()
        await idle(client, session)
        turn = client.state(session)["turns"][-1]
    # One commit, so one write to the client: the answer (its part and text) and the turn's end.
    # (With the call's stream read in a task of its own and nothing joining its end to the next
    # step, the turn's end was a commit of its own, after the answer's frames had left.)
    assert transactions[0] == ["chat/responsePart", "chat/activityChanged Writing", "session/activityChanged Writing",
                               "chat/activityChanged None", "session/activityChanged None", "chat/turnComplete", "session/chatUpdated"]
    assert turn["state"] == "complete" and turn["responseParts"][0]["content"] == "the answer"
