"""The embedded log against the contract of the ordered-log port (``host.state.log``), on its own:
numbers come from the log, each envelope is serialised once, nothing is durable-reported before
its commit, recovery gives back what was logged in order, the replay window and its gaps."""

from __future__ import annotations

import asyncio
import gc
import json
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ahp.jsonrpc import action_frame
from host.state.embedded_log import EmbeddedLog, at_once
from host.state.journal import Journal
from host.state.log import OrderedLog

CHAT = "ahp-chat:/s/c"
TERM = "ahp-terminal:/t"


def activity(text: str) -> dict[str, Any]:
    return {"type": "chat/activityChanged", "activity": text}


def append(log: EmbeddedLog, channel: str, now: int, action: dict[str, Any],
           origin: dict[str, Any] | None = None) -> dict[str, Any]:
    """Append as the store does (``serverSeq`` a placeholder the log sets); the envelope."""
    envelope: dict[str, Any] = {"channel": channel, "action": action, "serverSeq": 0}
    if origin is not None:
        envelope["origin"] = origin
    log.append(channel, now, envelope)
    return envelope


class Source:
    """A snapshot source holding plain states, as the store does."""

    def __init__(self, states: dict[str, tuple[str, dict[str, Any]]]) -> None:
        self.states = states
        self.changed = set(states)
        self.written: list[str] = []

    def take_changes(self, full: bool) -> tuple[dict[str, tuple[str, dict[str, Any], list[list[int]]]], set[str]]:
        uris = set(self.states) if full else self.changed
        changes = {uri: (*self.states[uri], []) for uri in uris}
        self.changed = set()
        return changes, set()  # type: ignore[return-value]  # (kind, state, rows)

    def restore_changes(self, channels: Iterable[str], removed: Iterable[str]) -> None:
        self.changed.update(channels)

    def snapshot_written(self, chats: Iterable[str]) -> None:
        self.written.extend(chats)


def test_the_log_numbers_each_envelope_and_serialises_it_once(tmp_path: Path) -> None:
    log = EmbeddedLog(Journal(tmp_path / "j.sqlite3"))
    port: OrderedLog = log  # the embedded log is an implementation of the port
    first: dict[str, Any] = {"channel": CHAT, "action": activity("a"), "serverSeq": 0}
    first_frame = port.append(CHAT, 7, first)
    second = append(log, TERM, 7, activity("b"), {"clientId": "c", "clientSeq": 1})
    assert (first["serverSeq"], second["serverSeq"], log.seq) == (1, 2, 2)
    assert first_frame == action_frame(first)[1]
    assert json.loads(first_frame)["params"] == {"channel": CHAT, "action": activity("a"), "serverSeq": 1}
    assert second == {"channel": TERM, "action": activity("b"), "serverSeq": 2, "origin": {"clientId": "c", "clientSeq": 1}}
    assert port.owner(CHAT) is None and port.owner(TERM) is None  # one process owns every session


async def test_a_callback_waiting_for_durability_runs_only_once_its_entries_are_committed(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite3")
    log = EmbeddedLog(journal)
    seen: list[bool] = []
    for text in ("a", "b"):  # the second comes right after a commit: it waits for the next
        append(log, CHAT, 1, activity(text))
        log.when_durable(lambda: seen.append(journal.dirty))
    for _ in range(200):
        if len(seen) == 2:
            break
        await asyncio.sleep(0.005)
    assert seen == [False, False]  # nothing pending when either ran
    log.when_durable(lambda: seen.append(journal.dirty))  # nothing pending now: at once
    assert seen == [False, False, False]


async def test_a_tick_s_appends_are_committed_at_its_end_and_its_writes_run_after_the_commit(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite3")
    log = EmbeddedLog(journal)
    seen: list[bool] = []
    append(log, CHAT, 1, activity("a"))
    log.at_end_of_tick(lambda: seen.append(journal.dirty))
    log.at_end_of_tick(lambda: seen.append(journal.dirty))
    assert journal.dirty and seen == []  # not before the tick ends
    await asyncio.sleep(0)
    assert seen == [False, False]  # both after the one commit at the end of the tick
    log.at_end_of_tick(lambda: seen.append(journal.dirty))  # nothing to commit: still at the end of the tick
    assert seen == [False, False]
    await asyncio.sleep(0)
    assert seen == [False, False, False]
    append(log, CHAT, 1, activity("b"))  # with no callback waiting, the tick's end commits all the same
    await asyncio.sleep(0.01)
    assert not journal.dirty


def test_what_was_logged_is_recovered_in_order_with_its_numbers(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    log = EmbeddedLog(Journal(path))
    log.bind(Source({}))
    log.created(CHAT, "chat", {"x": 1})
    sent = [append(log, CHAT, 9, activity(str(index))) for index in range(3)]
    log.removed(TERM)
    log.flush()
    log.journal.close()  # type: ignore[union-attr]  # killed: no last snapshot

    again = EmbeddedLog(Journal(path))
    recovery = at_once(again.recover())
    assert recovery is not None and not recovery.from_snapshot and recovery.channels == {}
    records = list(recovery.records)
    assert [(r.kind, r.channel, r.seq) for r in records] == [
        ("created", CHAT, None), ("action", CHAT, 1), ("action", CHAT, 2), ("action", CHAT, 3), ("removed", TERM, None)]
    assert records[0].body == {"kind": "chat", "state": {"x": 1}}
    assert [r.now for r in records[1:4]] == [9, 9, 9]
    assert again.seq == 3  # numbering goes on after the last one logged
    assert again.replay(0, [CHAT]) == sent
    assert append(again, CHAT, 1, activity("next"))["serverSeq"] == 4


def test_a_snapshot_holds_what_its_source_gives_and_later_entries_follow_it(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    log = EmbeddedLog(Journal(path))
    source = Source({TERM: ("terminal", {"content": "old"})})
    log.bind(source)
    append(log, TERM, 1, activity("before"))
    at_once(log.snapshot_now())
    append(log, TERM, 1, activity("after"))
    log.flush()
    log.journal.close()  # type: ignore[union-attr]

    recovery = at_once(EmbeddedLog(Journal(path)).recover())
    assert recovery is not None and recovery.from_snapshot and recovery.seq == 1
    assert recovery.channels == {TERM: {"kind": "terminal", "state": {"content": "old"}}}
    assert [r.seq for r in recovery.records] == [2]  # only what came after the snapshot


def test_replay_covers_only_a_contiguous_window_and_says_so_when_it_cannot() -> None:
    log = EmbeddedLog(None, replay_capacity=3)
    sent = [append(log, CHAT if index % 2 else TERM, 1, activity(str(index))) for index in range(5)]
    assert log.replay(2, [CHAT, TERM]) == sent[2:]
    assert log.replay(2, [CHAT]) == [sent[3]]
    assert log.replay(1, [CHAT, TERM]) is None  # serverSeq 2 left the window
    assert log.replay(5, [CHAT]) == []
    assert log.replay(6, [CHAT]) is None  # from the future: not this log's


def test_the_replay_window_keeps_the_frames_json_and_leaves_the_collector_nothing_to_walk() -> None:
    log = EmbeddedLog(None)
    sent = [append(log, CHAT, 1, {"type": "chat/delta", "turnId": "t", "partId": "p", "content": f"word {n}"},
                   origin={"clientId": "c", "clientSeq": n}) for n in range(50)]
    frames = [json.loads(action_frame(envelope)[1])["params"] for envelope in sent]
    sent[10]["action"]["content"] = "changed after it was sent"  # what a client got is what it is replayed
    envelopes = [{"channel": CHAT, "action": {"type": "chat/delta", "turnId": "t", "partId": "p", "content": f"more {n}"},
                  "serverSeq": 0, "origin": {"clientId": "c", "clientSeq": 50 + n}} for n in range(1_000)]
    gc.collect()
    gc.disable()  # (the count of containers allocated still grows; no collection resets it)
    try:
        before = gc.get_count()[0]
        for envelope in envelopes:
            log.append(CHAT, 1, envelope)
        kept = gc.get_count()[0] - before
    finally:
        gc.enable()
    assert kept < 10  # a thousand envelopes kept: no container of the window's per envelope for a collection to walk
    replayed = log.replay(0, [CHAT])
    assert replayed[:50] == frames and replayed[10]["action"]["content"] == "word 10"
    assert [envelope["serverSeq"] for envelope in replayed] == list(range(1, 1_051))
    assert replayed[0] is not log.replay(0, [CHAT])[0]  # each reconnect gets dicts of its own


def test_the_replay_window_is_bounded_by_characters_keeping_the_newest() -> None:
    log = EmbeddedLog(None, replay_chars=200)
    sent = [append(log, CHAT, 1, activity("x" * 80)) for _ in range(4)]
    assert log.replay(3, [CHAT]) == [sent[3]]
    assert log.replay(2, [CHAT]) is None
    big = append(log, CHAT, 1, activity("y" * 1_000))
    assert log.replay(4, [CHAT]) == [big]  # the newest always stays


def _recovered_copy(path: Path, into: Path) -> list[int]:
    """The numbers of the actions a host killed now would recover: the journal's files copied as
    they are on disk (``path`` and its WAL, shared memory and tail), recovered in the copy."""
    into.mkdir()
    for file in path.parent.glob(f"{path.name}*"):
        shutil.copy(file, into / file.name)
    copy = EmbeddedLog(Journal(into / path.name))
    recovery = at_once(copy.recover())
    numbers = [record.seq for record in (recovery.records if recovery is not None else ()) if record.kind == "action"]
    at_once(copy.close())
    return numbers


async def test_what_the_next_step_appends_joins_the_tick_s_commit_and_a_kill_keeps_both_or_neither(tmp_path: Path) -> None:
    # A turn's start and its task's first step: the step is queued after the tick's commit, and asks
    # to join it (``commit_with_next_step``).
    path = tmp_path / "j.sqlite3"
    journal = Journal(path)
    log = EmbeddedLog(journal)
    loop = asyncio.get_running_loop()
    on_disk: list[list[int]] = []
    written: list[tuple[bool, int]] = []
    append(log, CHAT, 1, activity("the turn starts"))
    log.at_end_of_tick(lambda: written.append((journal.dirty, log.seq)))  # a transport's write of this tick
    loop.call_soon(lambda: append(log, CHAT, 1, activity("its first step")))
    log.commit_with_next_step()
    for index in range(4):  # what a kill at each loop iteration would leave
        on_disk.append(_recovered_copy(path, tmp_path / f"kill{index}"))
        await asyncio.sleep(0)
    assert written == [(False, 2)]  # the tick's frames left once both were durable, not before
    assert on_disk[0] == [] and on_disk[-1] == [1, 2]
    assert all(numbers in ([], [1, 2]) for numbers in on_disk)  # never the start without the step
    # Asked for nothing, a tick commits at its end as before; and asking in a tick that logged
    # nothing changes nothing.
    log.commit_with_next_step()
    append(log, CHAT, 1, activity("later"))
    loop.call_soon(lambda: append(log, CHAT, 1, activity("a later step")))
    await asyncio.sleep(0)  # the tick's commit ran, then the step appended
    assert _recovered_copy(path, tmp_path / "later") == [1, 2, 3]
    await asyncio.sleep(0.01)
    assert not journal.dirty
    at_once(log.close())
