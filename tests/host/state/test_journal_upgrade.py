"""A journal the previous build wrote (AHP 0.2.0 states and session/* actions) is converted to the
internal model once, when the host opens it; clients of every version then see its sessions."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from ahp.state import default_chat_uri
from host.service import AgentHost
from host.state.journal import MODEL, Journal
from host.state.journal_upgrade import upgrade_journal
from host.transport.dialects.ahp02 import v02_session_state
from tests.conftest import host_config

OLD = "ahp-session:/old-1"
INTERNAL = "offline:/old-1"
CHAT = default_chat_uri(INTERNAL)
T0 = 1_790_000_000_000


def old_session() -> dict[str, Any]:
    """A session as the previous build's store held it (0.2.0 shape), with one finished turn."""
    return {
        "summary": {"resource": OLD, "provider": "offline", "title": "Old work", "status": 1, "createdAt": T0,
                    "modifiedAt": T0 + 500, "model": {"id": "offline-echo"}, "workingDirectory": "file:///tmp"},
        "lifecycle": "ready",
        "turns": [{"id": "t1", "userMessage": {"text": "first"}, "responseParts": [
            {"kind": "markdown", "id": "p1", "content": "answer one"}], "usage": None, "state": "complete"}],
    }


def write_old_journal(path: Path) -> None:
    """What the previous build left on disk: created channels and 0.2.0 envelopes, no model."""
    journal = Journal(path)
    journal.append_created("ahp-root://", {"agents": [], "activeSessions": 1}, "root")
    journal.append_created(OLD, old_session(), "session")
    envelopes = [
        {"type": "session/turnStarted", "turnId": "t2", "userMessage": {"text": "second"}},
        {"type": "session/responsePart", "turnId": "t2", "part": {"kind": "markdown", "id": "p2", "content": ""}},
        {"type": "session/delta", "turnId": "t2", "partId": "p2", "content": "answer "},
        {"type": "session/delta", "turnId": "t2", "partId": "p2", "content": "two"},
        {"type": "session/turnComplete", "turnId": "t2"},
        {"type": "session/titleChanged", "title": "Renamed"},
    ]
    for seq, action in enumerate(envelopes, start=1):
        body = json.dumps({"channel": OLD, "action": action, "serverSeq": seq})
        journal.append_action(OLD, seq, T0 + 1000 * seq, body, action)
    journal.close()
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM meta WHERE key = 'model'")  # the previous build recorded none


def test_an_old_journal_is_lifted_into_the_internal_model_once(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    write_old_journal(path)
    journal = Journal(path)
    assert journal.model is None
    assert upgrade_journal(journal) is True
    assert journal.model == MODEL
    snapshot = journal.latest_snapshot()
    assert snapshot is not None and snapshot.seq == 6
    kinds = {uri: saved["kind"] for uri, saved in snapshot.channels.items()}
    assert kinds == {"ahp-root://": "root", INTERNAL: "session", CHAT: "chat"}
    session = snapshot.channels[INTERNAL]["state"]
    assert session["title"] == "Renamed" and session["defaultChat"] == CHAT
    assert session["workingDirectories"] == ["file:///tmp"]
    chat = snapshot.channels[CHAT]["state"]
    assert [turn["id"] for turn in chat["turns"]] == ["t1", "t2"]
    assert chat["turns"][1]["message"]["text"] == "second"
    assert chat["turns"][1]["responseParts"][0]["content"] == "answer two"
    assert list(journal.entries_after(0)) == []  # old-model entries are not kept
    assert upgrade_journal(journal) is False  # once
    journal.close()
    assert Journal(path).model == MODEL


def test_a_new_journal_records_its_model_and_is_never_upgraded(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite3")
    assert journal.model == MODEL
    assert upgrade_journal(journal) is False


async def test_the_host_opens_an_old_journal_and_shows_its_sessions_as_before(tmp_path: Path) -> None:
    config = host_config(tmp_path / "data", default_directory=str(tmp_path), default_agent="offline")
    (tmp_path / "data").mkdir(parents=True, exist_ok=True)
    write_old_journal(config.data_path() / "journal.sqlite3")
    host = AgentHost(config)
    await host.start()
    try:
        assert host.session_uri(OLD) == INTERNAL
        assert host.store.seq >= 6
        shown = v02_session_state(host, OLD)
        assert shown is not None
        assert shown["summary"]["title"] == "Renamed" and shown["summary"]["resource"] == OLD
        assert shown["summary"]["createdAt"] == T0
        assert [turn["id"] for turn in shown["turns"]] == ["t1", "t2"]
        assert shown["turns"][1]["userMessage"] == {"text": "second"}
        assert shown["turns"][1]["responseParts"][0]["content"] == "answer two"
        assert [s["resource"] for s in host.list_sessions()] == [INTERNAL]
    finally:
        await host.stop()
