"""The transcript store keeps what it read between turns and still gives exactly what its rows
hold: after a save, a copy into the session, a forget, an unreadable row, across a restart of the
store, and when its memory budget is too small for more than one session."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from host.state.transcripts import TranscriptStore
from providers import AssistantMessage, TextPart, UserMessage


def _turn(question: str, answer: str) -> list:
    return [UserMessage.of(question), AssistantMessage(parts=(TextPart(text=answer),))]


def _texts(found: dict) -> dict[str, list[str]]:
    return {turn_id: [message.text for message in messages] for turn_id, messages in found.items()}


def test_a_turn_saved_again_after_it_was_read_is_read_as_saved_the_second_time(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path / "t.sqlite3")
    store.save("s", "t1", _turn("one?", "One."))
    assert _texts(store.load("s", ["t1", "t2"])) == {"t1": ["one?", "One."]}
    store.save("s", "t2", _turn("two?", "Two."))
    store.save("s", "t1", _turn("one again?", "Again."))
    assert _texts(store.load("s", ["t1", "t2"])) == {"t1": ["one again?", "Again."], "t2": ["two?", "Two."]}
    assert _texts(store.load("s", ["t2"])) == {"t2": ["two?", "Two."]}


def test_a_copy_into_a_session_and_a_forget_replace_what_it_had_read(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path / "t.sqlite3")
    store.save("source", "t1", _turn("from the source?", "Yes."))
    store.save("fork", "t1", _turn("the fork's own?", "No."))
    assert _texts(store.load("fork", ["t1"])) == {"t1": ["the fork's own?", "No."]}
    store.copy("source", "fork", ["t1"])
    assert _texts(store.load("fork", ["t1"])) == {"t1": ["from the source?", "Yes."]}
    store.forget("fork")
    assert store.load("fork", ["t1"]) == {}
    store.copy("source", "fork", ["t1"])
    assert _texts(store.load("fork", ["t1"])) == {"t1": ["from the source?", "Yes."]}


def test_a_turn_without_a_row_is_found_once_it_is_saved(tmp_path: Path) -> None:
    store = TranscriptStore(None)
    assert store.load("s", ["t1"]) == {}
    store.save("s", "t1", _turn("late?", "Saved now."))
    assert _texts(store.load("s", ["t1"])) == {"t1": ["late?", "Saved now."]}


def test_an_unreadable_row_is_missing_and_a_store_opened_again_reads_the_rows(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "t.sqlite3"
    store = TranscriptStore(path)
    store.save("s", "t1", _turn("kept?", "Kept."))
    store.save("s", "t2", _turn("broken?", "Broken."))
    store.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE transcripts SET messages = '[{\"role\": \"from-the-future\"}]' WHERE turn_id = 't2'")
    store = TranscriptStore(path)
    assert _texts(store.load("s", ["t1", "t2"])) == {"t1": ["kept?", "Kept."]}
    assert "unreadable" in caplog.text
    assert _texts(store.load("s", ["t1", "t2"])) == {"t1": ["kept?", "Kept."]}
    store.save("s", "t2", _turn("mended?", "Mended."))
    assert _texts(store.load("s", ["t2", "t1"])) == {"t2": ["mended?", "Mended."], "t1": ["kept?", "Kept."]}


def test_sessions_beyond_the_memory_budget_are_read_again_from_their_rows(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path / "t.sqlite3", held_chars=10)
    for session in ("a", "b", "c"):
        for index in range(3):
            store.save(session, f"t{index}", _turn(f"{session}{index}?", f"{session}{index}."))
    for _ in range(2):
        for session in ("a", "b", "c"):
            found = store.load(session, [f"t{index}" for index in range(3)])
            assert _texts(found) == {f"t{index}": [f"{session}{index}?", f"{session}{index}."] for index in range(3)}


def test_more_turns_than_one_query_takes_are_all_read(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path / "t.sqlite3")
    ids = [f"t{index}" for index in range(1_200)]
    for turn_id in ids:
        store.save("s", turn_id, _turn(f"{turn_id}?", f"{turn_id}."))
    assert list(store.load("s", ids)) == ids


def test_a_turn_saved_while_its_session_is_held_is_what_reading_its_row_gives(tmp_path: Path) -> None:
    """``save`` holds the messages it wrote instead of reading them back at the next turn: equal to
    what a store opened afresh reads from the row, for every kind of message and part."""
    from providers import ImageContent, ReasoningPart, TextContent, ToolCallPart, ToolResult, ToolResultsMessage

    path = tmp_path / "t.sqlite3"
    store = TranscriptStore(path)
    store.save("s", "t1", _turn("one?", "One."))
    store.load("s", ["t1"])  # the session is held from now on
    messages = [
        UserMessage(content=(TextContent(text="look"), ImageContent(media_type="image/jpeg", data="aGk="))),
        AssistantMessage(parts=(ReasoningPart(text="hm", native={"signature": "sig", "n": [1, 2.5, None]}),
                                ToolCallPart(tool_call_id="c1", tool_name="shell", arguments='{"command": "ls"}',
                                             native={"id": "fc_1"})),
                         api="anthropic", model="m", response_id="r1"),
        ToolResultsMessage(results=(ToolResult(tool_call_id="c1", tool_name="shell", content=(TextContent(text="a\nb"),),
                                               is_error=True),)),
        AssistantMessage(parts=(TextPart(text="Done.", native={"phase": "final"}),)),
    ]
    store.save("s", "t2", messages)
    held = store.load("s", ["t1", "t2"])
    assert held["t2"] == messages
    read = TranscriptStore(path).load("s", ["t1", "t2"])
    assert read == held


def test_a_native_payload_with_an_integer_past_64_bits_is_saved_and_read_back(tmp_path: Path) -> None:
    from providers import ReasoningPart

    path = tmp_path / "t.sqlite3"
    messages = [UserMessage.of("big?"),
                AssistantMessage(parts=(ReasoningPart(text="hm", native={"n": 2**70, "text": "é"}), TextPart(text="Big.")))]
    TranscriptStore(path).save("s", "t1", messages)
    assert TranscriptStore(path).load("s", ["t1"]) == {"t1": messages}


def test_a_compaction_saved_while_its_session_is_held_is_found(tmp_path: Path) -> None:
    store = TranscriptStore(tmp_path / "t.sqlite3")
    store.save("s", "t1", _turn("one?", "One."))
    store.load("s", ["t1"])
    assert store.compaction("s", ["t1", "t2"]) is None
    store.save_compaction("s", "t1", "The user counted to one.")
    assert store.compaction("s", ["t1", "t2"]) == (0, "The user counted to one.")
    store.save_compaction("source", "t1", "The source counted to one.")
    store.copy("source", "s", ["t1"])  # a copy into the session replaces its rows: nothing held is kept
    assert store.compaction("s", ["t1", "t2"]) == (0, "The source counted to one.")


def test_the_wal_is_checkpointed_by_a_worker_and_stays_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import host.state.transcripts as transcripts

    monkeypatch.setattr(transcripts, "CHECKPOINT_CHARS", 20_000)
    path = tmp_path / "t.sqlite3"
    store = TranscriptStore(path)
    assert store._db.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)  # never inside a save
    answer = "x" * 3_000
    largest = 0
    checkpoints = 0
    for index in range(400):  # about 1.3 MB of rows and 1.6 MB of counted pages: 140 checkpoints' worth
        store.save(f"s{index % 7}", f"t{index}", _turn(f"q{index}", answer))
        largest = max(largest, (tmp_path / "t.sqlite3-wal").stat().st_size)
        if store._checkpoints.running:
            checkpoints += 1
            while store._checkpoints.running:  # turns end apart: it has the time to finish
                time.sleep(0.001)
    assert checkpoints > 30
    assert store._checkpoints.thread is not None and store._checkpoints.thread.name == "transcripts-checkpoint"
    store.close()
    assert not store._checkpoints.thread.is_alive()
    # SQLite's own checkpoint is off: without the worker's, the WAL would hold every row written.
    assert largest < 400 * 3_000 / 3


def test_writes_that_outrun_the_worker_are_checkpointed_by_the_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import host.state.transcripts as transcripts

    monkeypatch.setattr(transcripts, "CHECKPOINT_CHARS", 20_000)
    monkeypatch.setattr(transcripts, "WAL_LIMIT_CHARS", 200_000)
    import host.state.wal as wal

    monkeypatch.setattr(wal, "checkpoint", lambda path, keep_bytes: False)  # a worker that never copies anything
    path = tmp_path / "t.sqlite3"
    store = TranscriptStore(path)
    answer = "x" * 3_000
    largest = 0
    for index in range(400):
        store.save(f"s{index % 7}", f"t{index}", _turn(f"q{index}", answer))
        largest = max(largest, (tmp_path / "t.sqlite3-wal").stat().st_size)
    store.close()
    # Without any checkpoint these 400 rows make a WAL of about 6.6 MB (measured); a checkpoint
    # every 200,000 characters keeps it to a fraction.
    assert largest < 2_000_000
    again = TranscriptStore(path)
    assert _texts(again.load("s3", ["t3", "t395"])) == {"t3": ["q3", answer], "t395": ["q395", answer]}
    again.close()
