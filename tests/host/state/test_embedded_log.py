"""The embedded log against the contract of the ordered-log port (``host.state.log``), on its own:
numbers come from the log, each envelope is serialised once, nothing is durable-reported before
its commit, recovery gives back what was logged in order, the replay window and its gaps."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ahp.jsonrpc import action_frame
from host.state.embedded_log import EmbeddedLog
from host.state.journal import Journal
from host.state.log import OrderedLog

CHAT = "ahp-chat:/s/c"
TERM = "ahp-terminal:/t"


def envelope(channel: str, activity: str) -> dict[str, Any]:
    """An envelope as the store builds it: ``serverSeq`` in place, to be set by the log."""
    return {"channel": channel, "action": {"type": "chat/activityChanged", "activity": activity}, "serverSeq": 0}


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
    log: OrderedLog = EmbeddedLog(Journal(tmp_path / "j.sqlite3"))
    first, second = envelope(CHAT, "a"), envelope(TERM, "b")
    first_json, first_frame = log.append(CHAT, 7, first, None)  # type: ignore[misc]  # the embedded log answers at once
    log.append(TERM, 7, second, None)
    assert (first["serverSeq"], second["serverSeq"], log.seq) == (1, 2, 2)
    assert (first_json, first_frame) == action_frame(first)
    assert json.loads(first_json) == {"channel": CHAT, "action": {"type": "chat/activityChanged", "activity": "a"}, "serverSeq": 1}
    assert log.owner(CHAT) is None and log.owner(TERM) is None  # one process owns every session


async def test_a_callback_waiting_for_durability_runs_only_once_its_entries_are_committed(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite3")
    log = EmbeddedLog(journal)
    seen: list[bool] = []
    for activity in ("a", "b"):  # the second comes right after a commit: it waits for the next
        log.append(CHAT, 1, envelope(CHAT, activity), None)
        log.when_durable(lambda: seen.append(journal.dirty))
    for _ in range(200):
        if len(seen) == 2:
            break
        await asyncio.sleep(0.005)
    assert seen == [False, False]  # nothing pending when either ran
    log.when_durable(lambda: seen.append(journal.dirty))  # nothing pending now: at once
    assert seen == [False, False, False]


def test_what_was_logged_is_recovered_in_order_with_its_numbers(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    log = EmbeddedLog(Journal(path))
    log.bind(Source({}))
    log.created(CHAT, "chat", {"x": 1})
    sent = [envelope(CHAT, str(index)) for index in range(3)]
    for item in sent:
        log.append(CHAT, 9, item, None)
    log.removed(TERM)
    log.flush()
    log.journal.close()  # type: ignore[union-attr]  # killed: no last snapshot

    again = EmbeddedLog(Journal(path))
    recovery = again.recover()
    assert recovery is not None and not recovery.from_snapshot and recovery.channels == {}
    records = list(recovery.records)
    assert [(r.kind, r.channel, r.seq) for r in records] == [
        ("created", CHAT, None), ("action", CHAT, 1), ("action", CHAT, 2), ("action", CHAT, 3), ("removed", TERM, None)]
    assert records[0].body == {"kind": "chat", "state": {"x": 1}}
    assert [r.now for r in records[1:4]] == [9, 9, 9]
    assert again.seq == 3  # numbering goes on after the last one logged
    assert again.replay(0, [CHAT]) == sent
    assert again.append(CHAT, 1, envelope(CHAT, "next"), None)[0].endswith('"serverSeq":4}')


def test_a_snapshot_holds_what_its_source_gives_and_later_entries_follow_it(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite3"
    log = EmbeddedLog(Journal(path))
    source = Source({TERM: ("terminal", {"content": "old"})})
    log.bind(source)
    log.append(TERM, 1, envelope(TERM, "before"), None)
    log.snapshot_now()
    log.append(TERM, 1, envelope(TERM, "after"), None)
    log.flush()
    log.journal.close()  # type: ignore[union-attr]

    recovery = EmbeddedLog(Journal(path)).recover()
    assert recovery is not None and recovery.from_snapshot and recovery.seq == 1
    assert recovery.channels == {TERM: {"kind": "terminal", "state": {"content": "old"}}}
    assert [r.seq for r in recovery.records] == [2]  # only what came after the snapshot


def test_replay_covers_only_a_contiguous_window_and_says_so_when_it_cannot() -> None:
    log = EmbeddedLog(None, replay_capacity=3)
    sent = [envelope(CHAT if index % 2 else TERM, str(index)) for index in range(5)]
    for item in sent:
        log.append(item["channel"], 1, item, None)
    assert log.replay(2, [CHAT, TERM]) == sent[2:]
    assert log.replay(2, [CHAT]) == [sent[3]]
    assert log.replay(1, [CHAT, TERM]) is None  # serverSeq 2 left the window
    assert log.replay(5, [CHAT]) == []
    assert log.replay(6, [CHAT]) is None  # from the future: not this log's


def test_the_replay_window_is_bounded_by_characters_keeping_the_newest() -> None:
    log = EmbeddedLog(None, replay_chars=200)
    sent = [envelope(CHAT, "x" * 80) for _ in range(4)]
    for item in sent:
        log.append(CHAT, 1, item, None)
    assert log.replay(3, [CHAT]) == [sent[3]]
    assert log.replay(2, [CHAT]) is None
    big = envelope(CHAT, "y" * 1_000)
    log.append(CHAT, 1, big, None)
    assert log.replay(4, [CHAT]) == [big]  # the newest always stays
