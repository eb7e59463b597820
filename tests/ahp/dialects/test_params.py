"""Params of AHP 0.7.0 commands checked against the vendored 0.7.0 schema: what a client is told."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ahp.dialects.params import PARAMS_0_7

ROOT = "ahp-root://"
REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("listSessions", {"channel": ROOT}),
        ("listSessions", {"channel": ROOT, "limit": 20, "cursor": "abc", "_meta": {"x": 1}}),
        ("ping", {"channel": ROOT}),
        ("subscribe", {"channel": "ahp-session:/x", "delivery": {"maxLatencyMs": 0}, "view": {"turns": 5}}),
        ("unsubscribe", {"channel": "ahp-session:/x"}),
        ("reconnect", {"channel": ROOT, "clientId": "c", "lastSeenServerSeq": 4, "subscriptions": [ROOT]}),
        ("resourceRead", {"channel": ROOT, "uri": "file:///tmp/x", "encoding": "utf-8"}),
        ("resourceWrite", {"channel": ROOT, "uri": "file:///tmp/x", "data": "", "encoding": "base64", "mode": "append"}),
        ("createTerminal", {"channel": "ahp-terminal:/t", "claim": {"kind": "client", "clientId": "c"}}),
        ("initialize", {"channel": ROOT, "protocolVersions": ["0.9.0"], "clientId": "c", "clientInfo": {"name": "vscode"}}),
        ("noSuchCommand", {"anything": True}),  # nothing to check
    ],
)
def test_params_that_fit_pass(method: str, params: dict[str, Any]) -> None:
    assert PARAMS_0_7.check(method, params) is None


@pytest.mark.parametrize(
    ("method", "params", "problem"),
    [
        ("listSessions", {}, "channel is required"),
        ("listSessions", {"channel": "ahp-session:/x"}, 'channel must be "ahp-root://"'),
        ("listSessions", {"channel": ROOT, "limit": "ten"}, "limit must be a number"),
        ("listSessions", {"channel": ROOT, "limit": True}, "limit must be a number"),
        ("listSessions", {"channel": ROOT, "cursor": 3}, "cursor must be a string"),
        ("reconnect", {"channel": ROOT, "clientId": "c", "lastSeenServerSeq": 1}, "subscriptions is required"),
        ("reconnect", {"channel": ROOT, "clientId": "c", "lastSeenServerSeq": 1, "subscriptions": ["a", 2]},
         "subscriptions[1] must be a string"),
        ("resourceWrite", {"channel": ROOT, "uri": "file:///x", "data": "", "encoding": "utf-16"},
         'encoding must be one of "base64", "utf-8"'),
        ("createTerminal", {"channel": "ahp-terminal:/t", "claim": {"kind": "client"}}, "claim.clientId is required"),
        ("createTerminal", {"channel": "ahp-terminal:/t", "claim": {"kind": "robot"}},
         'claim.kind must be one of "client", "session"'),
        ("subscribe", {"channel": ROOT, "delivery": {"maxLatencyMs": "soon"}}, "delivery.maxLatencyMs must be a number"),
        ("initialize", {"channel": ROOT, "protocolVersions": "0.9.0", "clientId": "c"}, "protocolVersions must be a list"),
    ],
)
def test_a_misfit_names_the_field(method: str, params: Any, problem: str) -> None:
    assert PARAMS_0_7.check(method, params) == problem


def test_every_0_7_0_command_has_a_params_definition() -> None:
    for method in ("initialize", "listSessions", "createChat", "disposeChat", "fetchTurns", "createResourceWatch"):
        assert PARAMS_0_7.defines(method), method


def test_the_schema_is_not_read_at_import() -> None:
    code = ("import ahp.dialects.params as p\n"
            "print(p.PARAMS_0_7._defs is None)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "True", done.stderr


def test_the_vendored_schema_is_the_0_7_0_release() -> None:
    schema = json.loads((REPO / "ahp" / "dialects" / "v0_7" / "spec-0.7.0" / "ahp-0.7.0.schema.json").read_text("utf-8"))
    assert len(schema["$defs"]) == 357
    assert (REPO / "ahp" / "dialects" / "v0_7" / "spec-0.7.0" / "LICENSE").is_file()


def test_every_action_type_of_each_version_has_its_definition() -> None:
    from ahp.dialects.catalogue import ACTION_INTRODUCED_IN, known_to
    from ahp.dialects.params import ACTIONS_0_7, ACTIONS_1_0

    assert set(ACTIONS_1_0.definitions) == set(ACTION_INTRODUCED_IN)
    assert set(ACTIONS_0_7.definitions) == {t for t in ACTION_INTRODUCED_IN if known_to("0.7.0", t)}


@pytest.mark.parametrize(
    ("action", "problem"),
    [
        ({"type": "terminal/input", "data": 3}, "data must be a string"),
        ({"type": "chat/toolCallConfirmed", "turnId": "t", "toolCallId": "c", "approved": True}, "confirmed is required"),
        ({"type": "chat/toolCallConfirmed", "turnId": "t", "toolCallId": "c", "approved": False, "reason": "denied",
          "userSuggestion": {"text": ""}}, "userSuggestion.origin is required"),
        ({"type": "chat/turnCancelled", "turnId": "t"}, "duration is required"),
        ({"type": "session/titleChanged"}, "title is required"),
        ("chat/turnCancelled", "the action must be an object"),
    ],
)
def test_a_malformed_action_is_named_by_its_field(action: Any, problem: str) -> None:
    from ahp.dialects.params import ACTIONS_0_7, ACTIONS_1_0

    assert ACTIONS_1_0.check_action(action) == problem
    assert ACTIONS_0_7.check_action(action) == problem


def test_a_well_formed_action_passes_and_null_counts_as_left_out() -> None:
    from ahp.dialects.params import ACTIONS_1_0

    assert ACTIONS_1_0.check_action({"type": "chat/draftChanged", "draft": None}) is None
    assert ACTIONS_1_0.check_action({"type": "chat/toolCallConfirmed", "turnId": "t", "toolCallId": "c", "approved": True,
                              "confirmed": "user-action", "selectedOptionId": "allow-once"}) is None
    assert ACTIONS_1_0.check_action({"type": "root/configChanged", "config": {"a": None}}) is None
    assert ACTIONS_1_0.check_action({"type": "no/suchType", "x": 1}) is None  # unknown types are judged elsewhere
