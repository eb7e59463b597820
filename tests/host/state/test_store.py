"""The store on its own: serverSeq, fan-out, atomic subscribe, replay window, journal recovery."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from host.state.embedded_log import at_once
from host.state.journal import Journal
from host.state.store import ROOT, Store

SESSION = "ahp-session:/s"


class Sink:
    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []
        self.texts: list[str] = []

    def send(self, text: str) -> None:
        self.texts.append(text)
        self.frames.append(json.loads(text))


def session_state() -> dict[str, Any]:
    return {
        "summary": {"resource": SESSION, "provider": "p", "title": "t", "status": 1, "createdAt": 1, "modifiedAt": 1},
        "lifecycle": "creating",
        "turns": [],
    }


def make_store(journal: Journal | None = None, **kwargs: Any) -> Store:
    store = Store({"agents": []}, clock=lambda: 5, journal=journal, **kwargs)
    at_once(store.recover())
    return store


def test_one_host_wide_sequence_across_channels() -> None:
    store = make_store()
    store.create(SESSION, "session", session_state())
    a = store.dispatch(ROOT, {"type": "root/activeSessionsChanged", "activeSessions": 1})
    b = store.dispatch(SESSION, {"type": "session/ready"})
    c = store.dispatch(ROOT, {"type": "root/activeSessionsChanged", "activeSessions": 2})
    assert [a["serverSeq"], b["serverSeq"], c["serverSeq"]] == [1, 2, 3]
    assert store.state(SESSION)["lifecycle"] == "ready"


def test_every_subscriber_gets_the_same_serialised_frame_once() -> None:
    store = make_store()
    sinks = [Sink() for _ in range(3)]
    for sink in sinks:
        store.subscribe(ROOT, sink)
    store.dispatch(ROOT, {"type": "root/activeSessionsChanged", "activeSessions": 4}, origin={"clientId": "c", "clientSeq": 9})
    texts = {sink.texts[0] for sink in sinks}
    assert len(texts) == 1 and all(len(sink.texts) == 1 for sink in sinks)
    frame = sinks[0].frames[0]
    assert frame == {
        "jsonrpc": "2.0",
        "method": "action",
        "params": {"channel": ROOT, "action": {"type": "root/activeSessionsChanged", "activeSessions": 4}, "serverSeq": 1, "origin": {"clientId": "c", "clientSeq": 9}},
    }


def test_a_snapshot_and_the_envelopes_after_it_cover_everything_exactly_once() -> None:
    store = make_store()
    store.dispatch(ROOT, {"type": "root/activeSessionsChanged", "activeSessions": 1})
    sink = Sink()
    snapshot = store.subscribe(ROOT, sink)
    store.dispatch(ROOT, {"type": "root/activeSessionsChanged", "activeSessions": 2})
    assert snapshot == {"resource": ROOT, "state": {"agents": [], "activeSessions": 1}, "fromSeq": 1}
    assert [f["params"]["serverSeq"] for f in sink.frames] == [2]


def test_a_rejection_goes_only_to_the_dispatcher_and_changes_nothing() -> None:
    store = make_store()
    other, sender = Sink(), Sink()
    store.subscribe(ROOT, other)
    store.subscribe(ROOT, sender)
    before = store.state(ROOT)
    store.reject(ROOT, {"type": "root/agentsChanged"}, {"clientId": "c", "clientSeq": 1}, "host only", sender)
    assert other.frames == []
    assert sender.frames[0]["params"]["rejectionReason"] == "host only"
    assert sender.frames[0]["params"]["serverSeq"] == 0
    assert store.state(ROOT) is before and store.seq == 0


def test_rejection_observers_hear_what_was_refused_and_from_whom() -> None:
    store = make_store()
    heard: list[tuple[str, dict[str, Any], str]] = []
    store.rejection_observers.append(lambda channel, action, client: heard.append((channel, action, client)))
    store.reject(ROOT, {"type": "root/agentsChanged"}, {"clientId": "c1", "clientSeq": 4}, "host only", Sink())
    assert heard == [(ROOT, {"type": "root/agentsChanged"}, "c1")]
    assert store.seq == 0


def test_replay_covers_the_window_and_reports_a_gap() -> None:
    store = make_store(replay_capacity=3)
    store.create(SESSION, "session", session_state())
    for count in range(1, 6):
        store.dispatch(ROOT if count % 2 else SESSION, {"type": "root/activeSessionsChanged", "activeSessions": count} if count % 2 else {"type": "session/isReadChanged", "isRead": bool(count % 4)})
    assert [e["serverSeq"] for e in store.replay(2, [ROOT, SESSION])] == [3, 4, 5]
    assert [e["serverSeq"] for e in store.replay(2, [SESSION])] == [4]
    assert store.replay(5, [ROOT]) == []
    assert store.replay(1, [ROOT]) is None  # seq 2 fell out of the window
    assert store.replay(9, [ROOT]) is None  # the client is ahead of us (we restarted)


def test_observers_see_before_and_after(tmp_path: Path) -> None:
    store = make_store()
    seen: list[tuple[Any, ...]] = []
    store.observers.append(lambda channel, before, after, envelope: seen.append((channel, before["activeSessions"] if "activeSessions" in before else None, after["activeSessions"], envelope["serverSeq"])))
    store.dispatch(ROOT, {"type": "root/activeSessionsChanged", "activeSessions": 3})
    assert seen == [(ROOT, None, 3, 1)]


def test_the_journal_brings_back_channels_state_and_seq(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    store = make_store(Journal(path), snapshot_every=4)
    store.create(SESSION, "session", session_state())
    store.dispatch(SESSION, {"type": "session/ready"})
    store.create("ahp-session:/gone", "session", session_state())
    for title in ("one", "two", "three", "four", "five"):
        store.dispatch(SESSION, {"type": "session/titleChanged", "title": title})
    store.remove("ahp-session:/gone")
    expected = store.state(SESSION)
    seq = store.seq
    # No close(): the process "dies" here; only what the journal committed remains.
    again = make_store(Journal(path), snapshot_every=4)
    assert again.seq == seq
    assert again.state(SESSION) == expected
    assert "ahp-session:/gone" not in again
    assert [e["action"].get("title") for e in again.replay(seq - 2, [SESSION])] == ["four", "five"]
    next_envelope = again.dispatch(SESSION, {"type": "session/titleChanged", "title": "six"})
    assert next_envelope["serverSeq"] == seq + 1


def test_a_journal_from_an_incompatible_format_is_refused_clearly(tmp_path: Path) -> None:
    import sqlite3

    import pytest

    from host.errors import JournalError

    path = tmp_path / "journal.sqlite3"
    Journal(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value='99' WHERE key='format'")
    db.commit()
    db.close()
    with pytest.raises(JournalError) as error:
        Journal(path)
    assert "--data-dir" in str(error.value)


# -- subscribers of another protocol version (host.dialects) ----------------------------------------


class CountingTranslator:
    """Shows root/activeSessionsChanged as a made-up ``x/count``, passes root/configChanged
    through as is, shows session/titleChanged as two actions (with the states around it), and
    hides everything else; counts how often it is asked."""

    def __init__(self) -> None:
        self.envelopes = 0
        self.notifications = 0
        self.changes: list[Any] = []

    def wants_states(self, kind: str, action: dict[str, Any]) -> bool:
        return action["type"] == "session/titleChanged"

    def envelope(self, kind: str, envelope: dict[str, Any], change: Any) -> Any:
        self.envelopes += 1
        self.changes.append(change)
        action = envelope["action"]
        if action["type"] == "root/activeSessionsChanged":
            return {**envelope, "action": {"type": "x/count", "n": action["activeSessions"]}}
        if action["type"] == "session/titleChanged":
            return [{**envelope, "action": {"type": "x/was", "title": change.before.get("title")}},
                    {**envelope, "action": {"type": "x/is", "title": change.after.get("title")}}]
        return envelope if action["type"] == "root/configChanged" else None

    def notification(self, kind: str, method: str, params: dict[str, Any], store: Any) -> dict[str, Any] | None:
        self.notifications += 1
        return None if method == "x/hidden" else {**params, "seen": True}


class TranslatedSink(Sink):
    def __init__(self, translator: CountingTranslator) -> None:
        super().__init__()
        self.translator = translator


def test_each_translator_group_is_asked_once_per_envelope_and_shares_one_frame() -> None:
    store = make_store()
    plain = [Sink() for _ in range(2)]
    translator = CountingTranslator()
    translated = [TranslatedSink(translator) for _ in range(3)]
    for sink in (*plain, *translated):
        store.subscribe(ROOT, sink)
    store.dispatch(ROOT, {"type": "root/activeSessionsChanged", "activeSessions": 4}, origin={"clientId": "c", "clientSeq": 0})
    assert translator.envelopes == 1
    assert {sink.texts[0] for sink in plain} != {sink.texts[0] for sink in translated}
    assert len({sink.texts[0] for sink in translated}) == 1
    assert translated[0].frames[0]["params"] == {"channel": ROOT, "action": {"type": "x/count", "n": 4}, "serverSeq": 1,
                                                 "origin": {"clientId": "c", "clientSeq": 0}}
    assert plain[0].frames[0]["params"]["action"] == {"type": "root/activeSessionsChanged", "activeSessions": 4}


def test_an_envelope_a_translator_passes_unchanged_reuses_the_shared_frame() -> None:
    store = Store({"agents": [], "config": {"schema": {"type": "object", "properties": {}}, "values": {}}}, clock=lambda: 5)
    plain, translated = Sink(), TranslatedSink(CountingTranslator())
    store.subscribe(ROOT, plain)
    store.subscribe(ROOT, translated)
    store.dispatch(ROOT, {"type": "root/configChanged", "config": {"a": 1}})
    assert translated.texts == plain.texts
    assert translated.texts[0] is plain.texts[0]  # the very same string: serialised once


def test_a_translator_can_hide_an_envelope_from_its_group() -> None:
    store = make_store()
    store.create(SESSION, "session", session_state())
    translated = TranslatedSink(CountingTranslator())
    store.subscribe(SESSION, translated)
    store.dispatch(SESSION, {"type": "session/ready"})
    assert translated.texts == []


def test_notifications_are_translated_per_group_and_can_be_hidden() -> None:
    store = make_store()
    plain, translated = Sink(), TranslatedSink(CountingTranslator())
    store.subscribe(ROOT, plain)
    store.subscribe(ROOT, translated)
    store.notify(ROOT, "root/sessionRemoved", {"channel": ROOT, "session": "s"})
    store.notify(ROOT, "x/hidden", {"channel": ROOT})
    assert [f["method"] for f in plain.frames] == ["root/sessionRemoved", "x/hidden"]
    assert translated.frames == [{"jsonrpc": "2.0", "method": "root/sessionRemoved",
                                  "params": {"channel": ROOT, "session": "s", "seen": True}}]


def test_a_translator_may_ask_for_the_states_around_an_action_and_send_several_actions() -> None:
    store = make_store()
    store.create(SESSION, "session", session_state())
    translator = CountingTranslator()
    translated = TranslatedSink(translator)
    store.subscribe(SESSION, translated)
    store.dispatch(SESSION, {"type": "session/titleChanged", "title": "New"})
    store.dispatch(SESSION, {"type": "session/ready"})
    assert [f["params"]["action"] for f in translated.frames] == [
        {"type": "x/was", "title": None}, {"type": "x/is", "title": "New"}]
    assert {f["params"]["serverSeq"] for f in translated.frames} == {1}
    assert translator.changes[1].before is None  # not asked for: not read


def test_a_translated_subscriber_counts_as_a_subscriber_until_it_leaves() -> None:
    store = make_store()
    translated = TranslatedSink(CountingTranslator())
    store.subscribe(ROOT, translated)
    assert store.has_subscribers(ROOT) and store.is_subscribed(ROOT, translated)
    store.unsubscribe(ROOT, translated)
    assert not store.has_subscribers(ROOT) and not store.is_subscribed(ROOT, translated)
    store.subscribe(ROOT, translated)
    store.unsubscribe_all(translated)
    store.dispatch(ROOT, {"type": "root/activeSessionsChanged", "activeSessions": 1})
    assert translated.texts == []


def test_a_translator_that_fails_costs_only_its_own_group_the_frame() -> None:
    class Broken(CountingTranslator):
        def envelope(self, kind: str, envelope: dict[str, Any], change: Any) -> Any:
            raise RuntimeError("bug")

    store = make_store()
    plain, broken = Sink(), TranslatedSink(Broken())
    store.subscribe(ROOT, plain)
    store.subscribe(ROOT, broken)
    envelope = store.dispatch(ROOT, {"type": "root/activeSessionsChanged", "activeSessions": 2})
    assert envelope["serverSeq"] == 1 and len(plain.texts) == 1 and broken.texts == []


def test_replace_swaps_a_state_durably_without_a_server_seq(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite3")
    store = make_store(journal)
    store.dispatch(ROOT, {"type": "root/activeSessionsChanged", "activeSessions": 3})
    store.replace(ROOT, {"agents": [], "activeSessions": 3, "config": {"schema": {"type": "object", "properties": {}}, "values": {}}})
    assert store.seq == 1
    store.flush()
    journal.close()
    again = make_store(Journal(tmp_path / "journal.sqlite3"))
    assert again.state(ROOT)["config"]["values"] == {} and again.state(ROOT)["activeSessions"] == 3
    assert again.seq == 1


def test_replace_is_refused_while_someone_subscribes() -> None:
    store = make_store()
    store.subscribe(ROOT, Sink())
    with pytest.raises(RuntimeError):
        store.replace(ROOT, {"agents": []})
