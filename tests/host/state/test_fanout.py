"""Fan-out on its own: who gets which frame, each translator group served by one translation and
one serialisation, a failing translation kept to its group."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from ahp.jsonrpc import action_frame
from host.state import fanout
from host.state.channels import Channel
from host.state.fanout import Change

CHAT = "ahp-chat:/s/c"


class Sink:
    def __init__(self, translator: Any = None) -> None:
        self.translator = translator
        self.texts: list[str] = []

    def send(self, text: str) -> None:
        self.texts.append(text)


class Renaming:
    """A translator that shows every action under another type, and counts its calls."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls = 0

    def wants_states(self, kind: str, action: dict[str, Any]) -> bool:
        return action.get("type") != "chat/delta"

    def envelope(self, kind: str, envelope: dict[str, Any], change: Change) -> Any:
        self.calls += 1
        return {**envelope, "action": {**envelope["action"], "type": self.name}}

    def notification(self, kind: str, method: str, params: dict[str, Any], store: Any) -> dict[str, Any] | None:
        self.calls += 1
        return {**params, "shown": self.name}


class Broken(Renaming):
    def envelope(self, kind: str, envelope: dict[str, Any], change: Change) -> Any:
        raise RuntimeError("a translation bug")


class Silent(Renaming):
    def envelope(self, kind: str, envelope: dict[str, Any], change: Change) -> Any:
        return None


def channel_with(*sinks: Sink) -> Channel:
    entry = Channel("chat", {})
    for sink in sinks:
        fanout.subscribe(entry, sink, fanout.translator_of(sink))
    return entry


def sent(envelope: dict[str, Any]) -> str:
    return action_frame(envelope)[1]


ENVELOPE = {"channel": CHAT, "action": {"type": "chat/activityChanged", "activity": "x"}, "serverSeq": 4}
UNREAD = Change(None, None, None)


def test_subscribers_of_the_stores_shapes_get_the_very_frame_given() -> None:
    own = [Sink(), Sink()]
    entry = channel_with(*own)
    frame = sent(ENVELOPE)
    fanout.fan_out(entry, ENVELOPE, frame, UNREAD)
    assert all(sink.texts == [frame] and sink.texts[0] is frame for sink in own)


def test_a_translator_group_is_translated_once_and_serialised_once_for_all_its_members() -> None:
    translator = Renaming("old/activity")
    group = [Sink(translator) for _ in range(3)]
    own = Sink()
    entry = channel_with(own, *group)
    fanout.fan_out(entry, ENVELOPE, sent(ENVELOPE), UNREAD)
    assert translator.calls == 1
    first = group[0].texts[0]
    assert all(sink.texts[0] is first for sink in group)  # one text object for the whole group
    assert json.loads(first)["params"]["action"]["type"] == "old/activity"
    assert json.loads(own.texts[0])["params"]["action"]["type"] == "chat/activityChanged"


def test_a_failing_translation_costs_only_its_own_group(caplog: pytest.LogCaptureFixture) -> None:
    broken, silent, working = Sink(Broken("b")), Sink(Silent("s")), Sink(Renaming("w"))
    entry = channel_with(broken, silent, working)
    with caplog.at_level(logging.ERROR):
        fanout.fan_out(entry, ENVELOPE, sent(ENVELOPE), UNREAD)
    assert broken.texts == [] and silent.texts == []
    assert json.loads(working.texts[0])["params"]["action"]["type"] == "w"
    assert "translating chat/activityChanged failed" in caplog.text


def test_a_notification_reaches_each_group_in_its_shapes() -> None:
    own, old = Sink(), Sink(Renaming("v"))
    entry = channel_with(own, old)
    fanout.notify(entry, "root/changed", {"a": 1}, store=None)
    assert json.loads(own.texts[0]) == {"jsonrpc": "2.0", "method": "root/changed", "params": {"a": 1}}
    assert json.loads(old.texts[0])["params"] == {"a": 1, "shown": "v"}


def test_a_subscriber_leaves_every_group_it_was_in_and_empty_groups_go() -> None:
    translator = Renaming("v")
    sink = Sink(translator)
    entry = channel_with(sink)
    fanout.subscribe(entry, sink, None)  # also in the store's own shapes (a channel it names alike)
    assert fanout.is_subscribed(entry, sink) and fanout.has_subscribers(entry)
    assert fanout.drop(entry, sink)
    assert not fanout.has_subscribers(entry) and entry.translated == {}
    assert not fanout.drop(entry, sink)  # not a subscriber any more
    fanout.fan_out(entry, ENVELOPE, sent(ENVELOPE), UNREAD)
    assert sink.texts == []


def test_only_the_dispatcher_hears_of_a_rejection_at_the_current_sequence() -> None:
    sink = Sink()
    fanout.reject(CHAT, {"type": "x"}, {"clientId": "c", "clientSeq": 3}, "no", 12, sink)
    assert json.loads(sink.texts[0])["params"] == {
        "channel": CHAT, "action": {"type": "x"}, "serverSeq": 12, "origin": {"clientId": "c", "clientSeq": 3},
        "rejectionReason": "no"}


class Unsayable(Renaming):
    def envelope(self, kind: str, envelope: dict[str, Any], change: Change) -> Any:
        self.calls += 1
        return fanout.Resync("no action of this version says it")


class Resyncing(Sink):
    def __init__(self, translator: Any = None) -> None:
        super().__init__(translator)
        self.resyncs: list[tuple[str, int]] = []

    def resync(self, reason: str, server_seq: int) -> None:
        self.resyncs.append((reason, server_seq))


def test_an_envelope_a_version_cannot_say_asks_each_of_its_group_to_resync_and_sends_it_nothing() -> None:
    translator = Unsayable("u")
    group = [Resyncing(translator), Resyncing(translator)]
    plain, own = Sink(translator), Sink()
    entry = channel_with(own, plain, *group)
    fanout.fan_out(entry, ENVELOPE, sent(ENVELOPE), UNREAD)
    assert translator.calls == 1
    assert all(sink.resyncs == [("no action of this version says it", 4)] and sink.texts == [] for sink in group)
    assert plain.texts == []  # one that cannot resync is sent nothing
    assert len(own.texts) == 1
