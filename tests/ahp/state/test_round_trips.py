"""The 39 official 0.7.0 round-trip fixtures, read for what they mean to a dict-based host.

Each fixture gives a wire value (``input``), the schema type it is an instance of, and the
outputs a client may produce after decoding and re-encoding it. Typed clients test their codecs
with them. This host keeps wire values as plain dicts, so "decode" is ``json.loads`` and
"re-encode" is ``ahp.jsonrpc.encode``; what can still go wrong is in the *model*: a reducer or a
dialect projection that drops an unknown variant or key, narrows a number, masks status bits, or
turns an absent key into ``null``. So, for every fixture:

1. Transport: ``json.loads(ahp.jsonrpc.encode(input))`` is one of the acceptable outputs (or, for
   the group-B fixtures that carry unknown keys, ``preservedOutput``: like the TypeScript client,
   a dict host keeps unknown keys). This pins large integers (``serverSeq`` above 2^31, status
   bit 31) and that an absent key stays absent.
2. Model, where the type lives in channel state or in an action (the table ``MODEL_CHECKS`` says
   which check each fixture gets; every fixture is listed, ``None`` meaning "a command or
   notification payload, no reducer or projection touches it"):

   * an action is reduced by the internal reducer on a state where it applies, and the value the
     fixture cares about lands in the state exactly as on the wire; the 0.7.0 dialect passes the
     action and the resulting state through ``action_down`` / ``state_down`` unchanged in those
     parts (unknown variants such as ``changeKind: "future-kind-xyz"`` included);
   * an unknown ``StateAction`` variant is a no-op for every reducer (the very same state object
     comes back), is not mutated, and is neither sent to nor accepted from a 0.7.0 peer
     (``action_down`` / ``action_up`` give ``None``): the host's way of "preserving" it is to
     leave it alone;
   * a ``Customization`` (an unknown ``type`` too) survives ``state_up`` and ``state_down``
     verbatim, and ``session/customizationUpdated`` stores it as given;
   * a ``SessionStatus`` keeps every bit (bit 31 included) through the flag actions, the chat's
     status recomputation and the dialect projections.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable

import pytest

from ahp import state as internal
from ahp.dialects import v0_7
from ahp.jsonrpc import encode
from ahp.state.channels import channel_kind

from ._support import round_trips_0_7

FIXTURES = round_trips_0_7()
BY_FILE = {fixture["_file"]: fixture for fixture in FIXTURES}

SESSION = {"provider": "demo", "title": "S", "status": 1, "lifecycle": "ready", "activeClients": [], "chats": []}
CHAT = {"resource": "ahp-chat:/c1", "title": "C", "status": 1, "modifiedAt": "2026-01-01T00:00:00.000Z", "turns": []}
RUNNING_TOOL = {
    "kind": "toolCall",
    "toolCall": {
        "status": "running",
        "toolCallId": "tool-1",
        "toolName": "t",
        "displayName": "T",
        "invocationMessage": "m",
    },
}
ACTIVE_CHAT = {
    **CHAT,
    "status": 8,
    "activeTurn": {
        "id": "turn-1",
        "message": {"text": "hi", "origin": {"kind": "user"}},
        "responseParts": [RUNNING_TOOL],
    },
}


@pytest.mark.parametrize("fixture", FIXTURES, ids=[fixture["_file"] for fixture in FIXTURES])
def test_the_wire_codec_keeps_the_value(fixture):
    again = json.loads(encode(fixture["input"]))
    accepted = [fixture["preservedOutput"]] if "preservedOutput" in fixture else fixture["acceptableOutputs"]
    assert again in accepted
    assert type(again) is type(fixture["input"])


def _reduced(kind: str, state: dict, action: dict) -> dict:
    before = copy.deepcopy(action)
    after = internal.reduce(kind, state, action, 0)
    assert action == before, "the reducer mutated the action"
    assert after is not state, "the action should apply here"
    assert v0_7.action_down(kind, action) == action, "0.7.0 has this action unchanged"
    return after


def _action_lands(path: Callable[[dict], object], source: Callable[[dict], object], kind: str, state: dict):
    def check(value: dict) -> None:
        after = _reduced(kind, state, value)
        assert path(after) == source(value)
        assert path(v0_7.state_down(kind, after)) == source(value)

    return check


def _envelope(path: Callable[[dict], object], source: Callable[[dict], object]):
    def check(envelope: dict) -> None:
        kind = channel_kind(envelope["channel"])
        state = {"session": SESSION, "chat": ACTIVE_CHAT}[kind]
        _action_lands(path, source, kind, state)(envelope["action"])
        assert ("origin" in json.loads(encode(envelope))) == ("origin" in envelope)

    return check


def _unknown_action(action: dict) -> None:
    before = copy.deepcopy(action)
    for kind, state in (("session", SESSION), ("chat", ACTIVE_CHAT), ("root", {"agents": []})):
        assert internal.reduce(kind, state, action, 0) is state
        assert v0_7.reduce(kind, state, action, 0) is state
        assert v0_7.action_down(kind, action) is None and v0_7.action_up(kind, action) is None
    assert action == before


def _customization(entry: dict) -> None:
    session = {**SESSION, "customizations": [entry]}
    lifted = v0_7.state_up("session", session)
    assert v0_7.state_down("session", lifted) == session
    if entry.get("type") not in ("plugin", "mcpServer"):
        assert lifted["customizations"] == [entry]  # nothing to lift: carried verbatim
    updated = internal.reduce("session", SESSION, {"type": "session/customizationUpdated", "customization": entry}, 0)
    assert updated["customizations"] == [entry]


def _status(status: int) -> None:
    session = {**SESSION, "status": status}
    read = internal.reduce("session", session, {"type": "session/isReadChanged", "isRead": True}, 0)
    unread = internal.reduce("session", read, {"type": "session/isReadChanged", "isRead": False}, 0)
    assert unread["status"] == status & ~32 and read["status"] == status | 32
    assert v0_7.state_down("session", session)["status"] == status
    chat = {**CHAT, "status": status}
    started = internal.reduce(
        "chat",
        chat,
        {"type": "chat/turnStarted", "turnId": "t", "startedAt": CHAT["modifiedAt"], "message": {"text": "x"}},
        0,
    )
    assert started["status"] == (status & ~0b11111 & ~32) | 8  # flags kept, IsRead cleared, InProgress
    assert v0_7.state_down("chat", started)["status"] == started["status"]


def _string_or_markdown(value: object) -> None:
    ready = {"type": "chat/toolCallReady", "turnId": "turn-1", "toolCallId": "tool-1", "invocationMessage": value}
    after = _reduced("chat", ACTIVE_CHAT, ready)
    call = after["activeTurn"]["responseParts"][0]["toolCall"]
    assert call["invocationMessage"] == value and call["status"] == "pending-confirmation"
    assert v0_7.state_down("chat", after)["activeTurn"]["responseParts"][0]["toolCall"]["invocationMessage"] == value


def _question(question: dict) -> None:
    request = {"type": "chat/inputRequested", "request": {"id": "r1", "message": "?", "questions": [question]}}
    after = _reduced("chat", ACTIVE_CHAT, request)
    assert after["activeTurn"]["responseParts"][-1]["request"]["questions"] == [question]


def _summary(action: dict) -> object:
    return action["summary"]


def _message(action: dict) -> object:
    return action["message"]


def _first_chat(state: dict) -> object:
    return state["chats"][0]


def _active_message(state: dict) -> object:
    return state["activeTurn"]["message"]


def _tool_content(state: dict) -> object:
    return state["activeTurn"]["responseParts"][0]["toolCall"]["content"]


MODEL_CHECKS: dict[str, Callable[[object], None] | None] = {
    "001-action-envelope-session-title-changed.json": _envelope(lambda s: s["title"], lambda a: a["title"]),
    "002-state-action-unknown-variant-preserved.json": _unknown_action,
    "003-customization-unknown-type-preserved.json": _customization,
    "004-session-status-bitset-flags.json": _status,
    "005-session-status-unknown-bits-preserved.json": _status,
    "006-string-or-markdown-plain.json": _string_or_markdown,
    "007-string-or-markdown-object.json": _string_or_markdown,
    "008-jsonrpc-request.json": None,
    "009-jsonrpc-notification.json": None,
    "010-jsonrpc-success.json": None,
    "011-jsonrpc-error.json": None,
    "012-changeset-target-resource.json": None,  # invokeChangesetOperation params
    "013-changeset-target-range.json": None,
    "014-session-input-question-number.json": _question,
    "015-session-input-question-integer.json": _question,
    "016-long-above-int32-max-preserved.json": _envelope(lambda s: s["title"], lambda a: a["title"]),
    "017-unknown-wire-keys-ignored.json": None,  # root notification payloads (SessionSummary)
    "018-nested-optional-null-round-trip.json": None,
    "019-channel-scoped-notification-uri.json": None,
    "020-partial-summary-all-null.json": None,
    "024-changeset-changekind-known-and-unknown.json": _action_lands(
        lambda s: s["changesets"], lambda a: a["changesets"], "session", SESSION
    ),
    "025-action-envelope-origin-absent.json": _envelope(lambda s: s["title"], lambda a: a["title"]),
    "026-action-envelope-origin-present.json": _envelope(lambda s: s["title"], lambda a: a["title"]),
    "027-agent-customization-model-and-tools.json": _customization,
    "028-implementation-identity.json": None,  # initialize
    "029-initialize-terminal-command-prefix.json": None,
    "030-agent-side-chat-capability.json": None,
    "030-terminal-content-ispty.json": _envelope(_tool_content, lambda a: a["content"]),
    "031-side-chat-origin.json": _action_lands(_first_chat, _summary, "session", SESSION),
    "031-terminal-content-completed.json": _envelope(_tool_content, lambda a: a["content"]),
    "032-chat-transcript-attachment.json": _action_lands(_active_message, _message, "chat", CHAT),
    "033-chat-source-side-chat.json": None,  # createChat params
    "034-side-chat-origin-active.json": _action_lands(_first_chat, _summary, "session", SESSION),
    "035-chat-source-side-chat-active.json": None,
    "036-chat-source-fork.json": None,
    "037-chat-origin-fork.json": _action_lands(_first_chat, _summary, "session", SESSION),
    "038-chat-source-side-chat-selection.json": None,
    "039-side-chat-origin-selection.json": _action_lands(_first_chat, _summary, "session", SESSION),
    "040-chat-transcript-attachment-latest-turn.json": _action_lands(_active_message, _message, "chat", CHAT),
}


def test_every_fixture_has_a_decided_model_check():
    assert set(MODEL_CHECKS) == set(BY_FILE)
    assert sum(check is not None for check in MODEL_CHECKS.values()) == 22


MODELLED = [name for name, check in MODEL_CHECKS.items() if check is not None]


@pytest.mark.parametrize("name", MODELLED)
def test_the_model_keeps_the_value(name):
    fixture = BY_FILE[name]
    value = copy.deepcopy(fixture["input"])
    MODEL_CHECKS[name](value)
    assert value == fixture["input"], "the check mutated the fixture"
