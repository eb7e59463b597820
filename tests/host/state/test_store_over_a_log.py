"""The store written against the ordered-log port alone: given another implementation of
``host.state.log.OrderedLog`` than the embedded one, its numbers are the store's ``serverSeq``,
its serialisation is what subscribers get, and the store recovers from what it gives back."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from ahp.jsonrpc import action_frame
from host.state.embedded_log import at_once
from host.state.journal import Journal
from host.state.log import LogRecord, NotOwner, Recovery, SnapshotSource
from host.state.store import ROOT, Store

CHAT = "ahp-chat:/s/c"


class ListLog:
    """The port in a list: numbers from wherever it is, every frame it built noted."""

    def __init__(self, seq: int = 0, recovery: Recovery | None = None) -> None:
        self.seq = seq
        self.snapshotting = False
        self.entries: list[tuple[str, Any]] = []
        self.frames: list[str] = []
        self._recovery = recovery

    def bind(self, source: SnapshotSource) -> None:
        self.source = source

    def owner(self, channel: str) -> str | None:
        return None

    def append(self, channel: str, now: int, envelope: dict[str, Any]) -> str:
        self.seq += 1
        envelope["serverSeq"] = self.seq
        frame = action_frame(envelope)[1]
        self.entries.append(("action", envelope))
        self.frames.append(frame)
        return frame

    def created(self, channel: str, kind: str, state: dict[str, Any]) -> None:
        self.entries.append(("created", channel))

    def removed(self, channel: str) -> None:
        self.entries.append(("removed", channel))

    def flush(self) -> None:
        return None

    def when_durable(self, callback: Callable[[], None]) -> None:
        callback()

    def replay(self, since: int, channels: Iterable[str]) -> list[dict[str, Any]] | None:
        wanted = set(channels)
        return [e for kind, e in self.entries if kind == "action" and e["serverSeq"] > since and e["channel"] in wanted]

    async def recover(self) -> Recovery | None:
        return self._recovery

    async def snapshot_now(self) -> None:
        return None

    def snapshot_soon(self) -> None:
        return None

    async def close(self) -> None:
        return None


class Sink:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def send(self, text: str) -> None:
        self.texts.append(text)


def test_the_stores_serverseq_is_the_logs_number_and_subscribers_get_the_logs_frame() -> None:
    log = ListLog(seq=41)  # a shared log other processes have written to already
    store = Store({"agents": []}, clock=lambda: 5, log=log)
    sink = Sink()
    assert store.subscribe(ROOT, sink)["fromSeq"] == 41
    envelope = store.dispatch(ROOT, {"type": "root/activeSessionsChanged", "activeSessions": 3})
    assert envelope["serverSeq"] == 42 == store.seq
    assert sink.texts == log.frames and sink.texts[0] is log.frames[0]  # the log's one serialisation
    assert store.replay(41, [ROOT]) == [envelope]
    assert store.state(ROOT)["activeSessions"] == 3  # type: ignore[index]


def test_the_store_recovers_from_what_the_log_gives_back() -> None:
    chat = {"turns": [], "summary": {}}
    records = [
        LogRecord("created", CHAT, None, None, {"kind": "chat", "state": chat}),
        LogRecord("action", ROOT, 7, 1, {"channel": ROOT, "action": {"type": "root/activeSessionsChanged", "activeSessions": 9}, "serverSeq": 7}),
    ]
    log = ListLog(seq=7, recovery=Recovery(seq=7, channels={}, from_snapshot=False, records=records))
    store = Store({"agents": []}, clock=lambda: 5, log=log)
    at_once(store.recover())
    assert store.state(ROOT)["activeSessions"] == 9  # type: ignore[index]
    assert store.kind(CHAT) == "chat" and store.state(CHAT) == chat
    assert store.dispatch(ROOT, {"type": "root/activeSessionsChanged", "activeSessions": 1})["serverSeq"] == 8


def test_a_store_takes_a_journal_or_a_log_not_both(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="a journal .* or a log, not both"):
        Store({"agents": []}, clock=lambda: 5, journal=Journal(tmp_path / "j.sqlite3"), log=ListLog())


def test_a_client_dispatch_keeps_its_origin_in_the_logged_envelope() -> None:
    log = ListLog()
    store = Store({"agents": []}, clock=lambda: 5, log=log)
    store.dispatch(ROOT, {"type": "root/activeSessionsChanged", "activeSessions": 2}, origin={"clientId": "c", "clientSeq": 4})
    assert json.loads(log.frames[0])["params"]["origin"] == {"clientId": "c", "clientSeq": 4}


class LaterLog(ListLog):
    """The port answering later, as a networked log does: each append an ``asyncio`` future the
    test resolves (numbers given in whatever order the test says) or fails."""

    answers_later = True

    def __init__(self, seq: int = 0) -> None:
        super().__init__(seq)
        self.waiting: list[tuple[dict[str, Any], asyncio.Future[str]]] = []

    def append(self, channel: str, now: int, envelope: dict[str, Any]) -> asyncio.Future[str]:  # type: ignore[override]
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.waiting.append((envelope, future))
        return future

    def number(self, index: int, seq: int) -> None:
        envelope, future = self.waiting[index]
        envelope["serverSeq"] = seq
        self.seq = max(self.seq, seq)
        frame = action_frame(envelope)[1]
        self.frames.append(frame)
        future.set_result(frame)

    def refuse(self, index: int, error: Exception) -> None:
        self.waiting[index][1].set_exception(error)


def count(n: int) -> dict[str, Any]:
    return {"type": "root/activeSessionsChanged", "activeSessions": n}


async def settle() -> None:
    for _ in range(3):
        await asyncio.sleep(0)


async def test_over_a_log_that_answers_later_nothing_is_sent_before_its_number_and_frames_leave_in_serverseq_order() -> None:
    log = LaterLog(seq=10)
    store = Store({"agents": []}, clock=lambda: 5, log=log)
    sink = Sink()
    store.subscribe(ROOT, sink)
    seen: list[int] = []
    store.change_observers.append(lambda channel, before, after, envelope: seen.append(envelope["serverSeq"]))
    store.create("ahp-session:/s", "session", {"title": "old"})
    store.dispatch(ROOT, count(1))
    store.dispatch("ahp-session:/s", {"type": "session/titleChanged", "title": "t"})
    store.dispatch(ROOT, count(2))
    assert store.state(ROOT)["activeSessions"] == 2  # type: ignore[index]  # reduced at once
    log.number(2, 13)
    log.number(1, 11)  # the second owner group's batch came back first, numbered before the first's
    await settle()
    assert sink.texts == [] and seen == []  # the first action has no number yet: nothing leaves
    log.number(0, 12)
    await settle()
    assert seen == [11, 12, 13]  # in serverSeq order, not dispatch order
    assert [json.loads(text)["params"]["serverSeq"] for text in sink.texts] == [12, 13]  # the root's subscriber


async def test_an_append_the_log_refuses_is_undone_with_what_followed_it_on_its_channel_and_its_client_told() -> None:
    log = LaterLog()
    store = Store({"agents": []}, clock=lambda: 5, log=log)
    sink = Sink()
    store.subscribe(ROOT, sink)
    told: list[str] = []
    rejections: list[tuple[str, str]] = []
    store.rejection_observers.append(lambda channel, action, client: rejections.append((action["type"], client)))
    store.dispatch(ROOT, count(1))
    store.dispatch(ROOT, count(2), {"clientId": "c", "clientSeq": 1}, told.append)
    store.dispatch(ROOT, count(3))
    log.number(0, 1)
    log.refuse(1, NotOwner(ROOT, "host-b"))
    log.number(2, 2)  # stored anyway (a lease taken back in between): this process's state lacks it
    await settle()
    assert told == [f"{ROOT} is run by host-b: this process may not write to it"]
    assert rejections == [("root/activeSessionsChanged", "c")]
    assert store.state(ROOT)["activeSessions"] == 1  # type: ignore[index]  # back to before the refused action
    assert [json.loads(text)["params"]["action"]["activeSessions"] for text in sink.texts] == [1]  # nobody saw 2 or 3


class ElsewhereLog(LaterLog):
    """A log that last saw another process run every session."""

    def owner(self, channel: str) -> str | None:
        return "host-b" if channel != ROOT else None


async def test_an_action_on_a_session_run_elsewhere_is_reduced_only_once_the_log_takes_it() -> None:
    log = ElsewhereLog()
    store = Store({"agents": []}, clock=lambda: 5, log=log)
    store.create("ahp-session:/s", "session", {"title": "old"})
    sink = Sink()
    store.subscribe("ahp-session:/s", sink)
    told: list[str] = []
    store.dispatch("ahp-session:/s", {"type": "session/titleChanged", "title": "refused"}, {"clientId": "c", "clientSeq": 1},
                   told.append)
    assert store.state("ahp-session:/s")["title"] == "old"  # type: ignore[index]  # not reduced before the log answers
    log.refuse(0, NotOwner("ahp-session:/s", "host-b"))
    await settle()
    assert told and "host-b" in told[0] and sink.texts == []
    assert store.state("ahp-session:/s")["title"] == "old"  # type: ignore[index]
    store.dispatch("ahp-session:/s", {"type": "session/titleChanged", "title": "taken over"})  # its lease lapsed
    log.number(1, 1)
    await settle()
    assert store.state("ahp-session:/s")["title"] == "taken over"  # type: ignore[index]  # reduced once numbered
    assert [json.loads(text)["params"]["action"]["title"] for text in sink.texts] == ["taken over"]


class SharedRootLog(LaterLog):
    """A shared log whose root another process writes: root changes are forwarded to it."""

    def __init__(self, answer: str | None) -> None:
        super().__init__()
        self.answer = answer
        self.forwarded: list[tuple[str, str, dict[str, Any], dict[str, Any] | None]] = []

    def owner(self, channel: str) -> str | None:
        return "host-a" if channel == ROOT else None

    def shared(self, channel: str) -> bool:
        return channel == ROOT

    async def forward(self, owner: str, channel: str, action: dict[str, Any], origin: dict[str, Any] | None) -> str | None:
        self.forwarded.append((owner, channel, action, origin))
        return self.answer


async def test_a_root_change_is_forwarded_to_the_process_that_writes_the_root_and_reduced_when_it_comes_back() -> None:
    log = SharedRootLog(answer=None)
    store = Store({"agents": [], "activeSessions": 0}, clock=lambda: 5, log=log)
    store.dispatch(ROOT, count(2))
    await settle()
    assert log.forwarded == [("host-a", ROOT, count(2), None)] and log.waiting == []  # not appended here
    assert store.state(ROOT)["activeSessions"] == 0  # type: ignore[index]  # not reduced before the log has it
    store.take_in(LogRecord("action", ROOT, 7, 5, {"channel": ROOT, "action": count(2), "serverSeq": 7}))
    assert store.state(ROOT)["activeSessions"] == 2  # type: ignore[index]  # reduced in the log's order, as elsewhere


async def test_a_root_change_its_writer_refuses_is_told_to_whoever_dispatched_it() -> None:
    log = SharedRootLog(answer="host-a, which runs this session, did not answer: no responders")
    store = Store({"agents": [], "activeSessions": 0}, clock=lambda: 5, log=log)
    told: list[str] = []
    store.dispatch(ROOT, count(3), {"clientId": "c", "clientSeq": 1}, told.append)
    await settle()
    assert told == ["host-a, which runs this session, did not answer: no responders"]
    assert store.state(ROOT)["activeSessions"] == 0  # type: ignore[index]  # nothing to undo


@pytest.mark.parametrize("later", [False, True], ids=["numbered-at-once", "numbered-later"])
async def test_an_observer_that_fails_is_logged_and_the_observers_after_it_still_hear_of_the_action(
        later: bool, caplog: pytest.LogCaptureFixture) -> None:
    log = LaterLog() if later else ListLog()
    store = Store({"agents": []}, clock=lambda: 5, log=log)
    store.create(CHAT, "chat", {"resource": CHAT, "title": "", "status": 1, "modifiedAt": "2026-01-01T00:00:00.000Z", "turns": []})
    heard: list[tuple[str, str]] = []

    def failing(*arguments: Any) -> None:
        raise RuntimeError("an observer's bug")

    store.observers += [failing, lambda channel, before, after, envelope: heard.append(("observer", envelope["action"]["type"]))]
    store.change_observers.append(lambda channel, before, after, envelope: heard.append(("change", envelope["action"]["type"])))
    store.token_observers += [failing, lambda channel, envelope: heard.append(("token", envelope["action"]["type"]))]
    for action in ({"type": "chat/turnStarted", "turnId": "t", "startedAt": "2026-01-01T00:00:01.000Z",
                    "message": {"text": "go", "origin": {"kind": "user"}}},
                   {"type": "chat/responsePart", "turnId": "t", "part": {"kind": "markdown", "id": "m", "content": ""}},
                   {"type": "chat/delta", "turnId": "t", "partId": "m", "content": "hi"}):
        store.dispatch(CHAT, action)
    if isinstance(log, LaterLog):
        assert heard == []  # nothing is observed before the log numbered it
        for index in range(3):
            log.number(index, index + 1)
        await settle()
    assert heard == [("observer", "chat/turnStarted"), ("change", "chat/turnStarted"),
                     ("observer", "chat/responsePart"), ("change", "chat/responsePart"),
                     ("observer", "chat/delta"), ("token", "chat/delta")]
    failures = [record.getMessage() for record in caplog.records if "failed" in record.getMessage()]
    assert failures == ["store observer failed on chat/turnStarted", "store observer failed on chat/responsePart",
                        "store observer failed on chat/delta", "store token observer failed on chat/delta"]


class FollowingLog(LaterLog):
    """A shared log whose follower is behind: ``ELSEWHERE``'s session runs on another process, and
    ``caught_up`` (asked before this process's frames leave to a connection that also follows
    it) is done only when the test says."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[int] = []
        self.behind: asyncio.Future[None] | None = None
        self.taken_in_to = 0
        self.owners_changed = 0

    def owner(self, channel: str) -> str | None:
        return "host-b" if channel == ELSEWHERE else None

    def caught_up(self, seq: int, channels: Iterable[str]) -> asyncio.Future[None] | None:
        assert set(channels) == {ELSEWHERE}  # only the records of what its connections follow matter
        if seq <= self.taken_in_to:
            return None
        self.asked.append(seq)
        self.behind = asyncio.get_running_loop().create_future()
        return self.behind

    def catch_up(self) -> None:
        """The follower took in everything below what was asked last."""
        assert self.behind is not None
        self.taken_in_to = self.asked[-1]
        self.behind.set_result(None)


ELSEWHERE = "ahp-session:/elsewhere"


def titled(text: str) -> dict[str, Any]:
    return {"type": "session/titleChanged", "title": text}


async def test_a_connection_that_follows_only_channels_run_here_is_not_held_while_the_follower_catches_up() -> None:
    log = FollowingLog()
    store = Store({"agents": []}, clock=lambda: 5, log=log)
    for session in ("ahp-session:/mine", "ahp-session:/also-mine", ELSEWHERE):
        store.create(session, "session", {"title": "old"})
    local_only, mixed = Sink(), Sink()
    store.subscribe("ahp-session:/mine", local_only)
    store.subscribe("ahp-session:/also-mine", mixed)
    store.subscribe(ELSEWHERE, mixed)

    store.dispatch("ahp-session:/mine", titled("one"))
    log.number(0, 1)
    await settle()
    assert [json.loads(text)["params"]["serverSeq"] for text in local_only.texts] == [1]  # not held
    assert log.asked == []  # nobody it goes to follows a channel another process runs: nothing asked

    store.dispatch("ahp-session:/also-mine", titled("two"))
    log.number(1, 3)  # #2 may be the other process's, not taken in yet
    await settle()
    assert log.asked == [3] and mixed.texts == []  # held: its connection follows the other process's session
    log.catch_up()
    await settle()
    assert [json.loads(text)["params"]["serverSeq"] for text in mixed.texts] == [3]


async def test_a_subscription_to_a_channel_run_elsewhere_holds_the_frames_of_that_connection_s_other_channels() -> None:
    log = FollowingLog()
    store = Store({"agents": []}, clock=lambda: 5, log=log)
    for session in ("ahp-session:/mine", ELSEWHERE):
        store.create(session, "session", {"title": "old"})
    connection = Sink()
    store.subscribe("ahp-session:/mine", connection)
    store.dispatch("ahp-session:/mine", titled("one"))
    log.number(0, 1)
    await settle()
    assert len(connection.texts) == 1 and log.asked == []
    store.subscribe(ELSEWHERE, connection)  # now it follows the other process's session too
    store.dispatch("ahp-session:/mine", titled("two"))
    log.number(1, 3)
    await settle()
    assert log.asked == [3] and len(connection.texts) == 1
    log.owners_changed += 1  # the other process's session is run here now (taken over)
    log.owner = lambda channel: None  # type: ignore[method-assign]
    log.catch_up()
    await settle()
    store.dispatch("ahp-session:/mine", titled("three"))
    log.number(2, 5)
    await settle()
    assert [json.loads(text)["params"]["serverSeq"] for text in connection.texts] == [1, 3, 5] and log.asked == [3]


class RoundTripLog(FollowingLog):
    """``FollowingLog`` whose every ``caught_up`` is a round trip of its own, ended by the test."""

    def __init__(self) -> None:
        super().__init__()
        self.rounds: dict[int, asyncio.Future[None]] = {}

    def caught_up(self, seq: int, channels: Iterable[str]) -> asyncio.Future[None] | None:
        assert set(channels) == {ELSEWHERE}
        if seq <= self.taken_in_to:
            return None
        self.asked.append(seq)
        self.rounds[seq] = asyncio.get_running_loop().create_future()
        return self.rounds[seq]

    def answer(self, seq: int) -> None:
        """The follower took in everything below ``seq``."""
        self.taken_in_to = max(self.taken_in_to, seq)
        self.rounds[seq].set_result(None)


def numbers(sink: Sink) -> list[int]:
    return [json.loads(text)["params"]["serverSeq"] for text in sink.texts]


async def test_a_frame_numbered_past_the_round_under_way_is_asked_about_at_once_and_frames_leave_in_order() -> None:
    log = RoundTripLog()
    store = Store({"agents": []}, clock=lambda: 5, log=log)
    for session in ("ahp-session:/mine", ELSEWHERE):
        store.create(session, "session", {"title": "old"})
    connection = Sink()
    store.subscribe("ahp-session:/mine", connection)
    store.subscribe(ELSEWHERE, connection)

    store.dispatch("ahp-session:/mine", titled("one"))
    log.number(0, 3)
    await settle()
    store.dispatch("ahp-session:/mine", titled("two"))
    log.number(1, 5)
    await settle()
    # The second frame's question leaves while the first's is under way, not after its answer.
    assert log.asked == [3, 5] and connection.texts == []
    log.answer(5)  # the later answer first: it covers everything below #5, so both leave, in order
    await settle()
    assert numbers(connection) == [3, 5]
    log.answer(3)  # a late answer to a question already covered changes nothing
    await settle()
    assert numbers(connection) == [3, 5]

    for index, (seq, text) in enumerate([(7, "three"), (9, "four"), (11, "five")], start=2):
        store.dispatch("ahp-session:/mine", titled(text))
        log.number(index, seq)
        await settle()
    assert log.asked == [3, 5, 7, 9]  # at most CHECKS (2) under way: #11 waits for one of them to end
    log.answer(7)
    await settle()
    assert numbers(connection) == [3, 5, 7] and log.asked == [3, 5, 7, 9, 11]  # #9 and #11 wait for their answers
    idle = asyncio.ensure_future(store._awaiting.idle())  # type: ignore[union-attr]
    await settle()
    assert not idle.done()  # #9 and #11 are not sent yet
    log.answer(11)
    await settle()
    assert numbers(connection) == [3, 5, 7, 9, 11]
    await asyncio.wait_for(idle, 1)  # nothing of this process left unsent: whoever waits for that is woken


async def test_while_frames_are_held_for_the_follower_no_frame_after_them_overtakes_them() -> None:
    log = RoundTripLog()
    store = Store({"agents": []}, clock=lambda: 5, log=log)
    for session in ("ahp-session:/mine", "ahp-session:/local", ELSEWHERE):
        store.create(session, "session", {"title": "old"})
    mixed, local_only = Sink(), Sink()
    store.subscribe("ahp-session:/mine", mixed)
    store.subscribe(ELSEWHERE, mixed)
    store.subscribe("ahp-session:/local", local_only)
    store.subscribe("ahp-session:/mine", local_only)

    store.dispatch("ahp-session:/mine", titled("one"))
    log.number(0, 3)
    await settle()
    store.dispatch("ahp-session:/local", titled("two"))  # not gated, but after a held frame
    log.number(1, 4)
    await settle()
    assert mixed.texts == [] and local_only.texts == [] and log.asked == [3]
    log.answer(3)
    await settle()
    assert numbers(mixed) == [3] and numbers(local_only) == [3, 4]
