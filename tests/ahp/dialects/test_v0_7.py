"""The 0.7.0 dialect: its projections, what it refuses, and the convergence law the edge relies on.

* Lifting is lossless for 0.7.0 data: ``state_down(state_up(s)) == s`` for every state of the 247
  official vectors, and ``action_down(action_up(a)) == a`` for every action in them (apart from the
  one field 0.9.0 removed, ``changeset/contentChanged.error``).
* Each documented difference (the module docstring's rules 1-9) holds in both directions.
* Types 0.7.0 does not have are neither sent (``action_down``) nor accepted (``action_up``).
* Convergence: on every step of every official and hand-made vector, a 0.7.0 client that holds the
  projection and applies the projected action with its own reducers (``v0_7.reduce``) holds the
  projection of the host's next state, apart from a chat's ``modifiedAt``, exactly when
  ``needs_resync`` is false; ``RESYNC_AFTER`` is exactly the set of post-0.7.0 types that change
  the 0.7.0 view in those vectors.
"""

from __future__ import annotations

import pytest

from ahp import state as internal
from ahp.dialects import v0_7
from ahp.dialects.catalogue import ACTION_INTRODUCED_IN, known_to
from ahp.state.channels import annotations_uri, default_chat_uri
from tests.ahp._wire import first_difference, strip_none, wire_equal
from tests.ahp.state._support import vectors_0_7, vectors_0_9

VECTORS = vectors_0_7()
IDS = [vector["description"] for vector in VECTORS]


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_lifting_a_0_7_0_state_and_projecting_it_back_changes_nothing(vector):
    kind = vector["reducer"]
    for key in ("initial", "expected"):
        original = strip_none(vector[key])
        again = v0_7.state_down(kind, v0_7.state_up(kind, original))
        assert wire_equal(again, original), first_difference(again, original)


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_lifting_a_0_7_0_action_and_projecting_it_back_changes_nothing(vector):
    kind = vector["reducer"]
    for action in vector["actions"]:
        lifted = v0_7.action_up(kind, action)
        if not known_to("0.7.0", action["type"]):
            assert lifted is None
            continue
        expected = strip_none(action)
        if action["type"] == "changeset/contentChanged":
            expected.pop("error", None)  # rule 9: 0.9.0 has no such field
        assert wire_equal(strip_none(v0_7.action_down(kind, lifted)), expected)


def test_types_0_7_0_does_not_have_are_neither_sent_nor_accepted():
    newer = [action_type for action_type in ACTION_INTRODUCED_IN if not known_to("0.7.0", action_type)]
    assert len(newer) == 21
    for action_type in newer:
        kind = action_type.split("/")[0]
        assert v0_7.action_down(kind, {"type": action_type}) is None
        assert v0_7.action_up(kind, {"type": action_type}) is None
    assert v0_7.action_down("session", {"type": "session/delta", "turnId": "t"}) is None  # 0.2.0 only
    assert v0_7.state_down("automation", {"entries": []}) is None
    assert v0_7.state_down("automationRun", {"sessions": []}) is None


SESSION = {"provider": "p", "title": "S", "status": 1, "lifecycle": "ready", "activeClients": [], "chats": []}


def test_rule_1_failed_is_creation_failed():
    failed = internal.reduce(
        "session", SESSION, {"type": "session/creationFailed", "error": {"errorType": "x", "message": "m"}}, 0
    )
    assert failed["lifecycle"] == "failed"
    assert v0_7.state_down("session", failed)["lifecycle"] == "creationFailed"
    assert v0_7.state_up("session", {**SESSION, "lifecycle": "creationFailed"})["lifecycle"] == "failed"


def test_rule_2_the_terminal_lifecycle_is_an_exit_code():
    terminal = {
        "title": "t",
        "content": [],
        "claim": {"kind": "client", "clientId": "c"},
        "lifecycle": {"status": "running"},
    }
    assert v0_7.state_down("terminal", terminal) == {
        "title": "t",
        "content": [],
        "claim": {"kind": "client", "clientId": "c"},
    }
    exited = internal.reduce("terminal", terminal, {"type": "terminal/exited", "exitCode": 2}, 0)
    assert v0_7.state_down("terminal", exited)["exitCode"] == 2
    killed = internal.reduce("terminal", terminal, {"type": "terminal/exited"}, 0)
    assert killed["lifecycle"] == {"status": "exited"} and "exitCode" not in v0_7.state_down("terminal", killed)
    assert v0_7.state_up("terminal", {**v0_7.state_down("terminal", exited)})["lifecycle"] == {
        "status": "exited",
        "exitCode": 2,
    }
    root = v0_7.state_down(
        "root",
        {
            "agents": [],
            "terminals": [
                {
                    "resource": "ahp-terminal:/1",
                    "title": "t",
                    "claim": {"kind": "client", "clientId": "c"},
                    "lifecycle": {"status": "exited", "exitCode": 0},
                }
            ],
        },
    )
    assert root["terminals"][0] == {
        "resource": "ahp-terminal:/1",
        "title": "t",
        "claim": {"kind": "client", "clientId": "c"},
        "exitCode": 0,
    }


def test_rule_3_a_session_claim_names_the_default_chat_going_up_and_drops_it_going_down():
    claim = {"kind": "session", "session": "copilot:/s1", "turnId": "t1"}
    lifted = v0_7.action_up("terminal", {"type": "terminal/claimed", "claim": claim})
    assert lifted["claim"] == {**claim, "chat": default_chat_uri("copilot:/s1")}
    assert (
        v0_7.action_down("terminal", {"type": "terminal/claimed", "claim": {**claim, "chat": "ahp-chat:/other"}})[
            "claim"
        ]
        == claim
    )


def test_rule_4_turn_errors_are_error_parts():
    part = {"kind": "error", "error": {"errorType": "e", "message": "m"}, "resumable": True}
    down = v0_7.action_down("chat", {"type": "chat/error", "turnId": "t", "duration": 1, "part": part})
    assert down == {"type": "chat/error", "turnId": "t", "duration": 1, "error": part["error"]}
    up = v0_7.action_up("chat", down)
    assert up["part"] == {"kind": "error", "error": part["error"]} and "error" not in up
    turn = {
        "id": "t",
        "message": {"text": "x"},
        "responseParts": [{"kind": "markdown", "id": "m", "content": "a"}, part],
        "state": "error",
    }
    chat = {
        "resource": "ahp-chat:/c",
        "title": "C",
        "status": 2,
        "modifiedAt": "x",
        "turns": [turn],
        "activeTurn": {"id": "u", "message": {}, "responseParts": [part]},
    }
    down_chat = v0_7.state_down("chat", chat)
    assert down_chat["turns"][0] == {**turn, "responseParts": turn["responseParts"][:1], "error": part["error"]}
    assert down_chat["activeTurn"]["responseParts"] == []
    assert v0_7.action_down("chat", {"type": "chat/responsePart", "turnId": "u", "part": part}) is None


def test_rule_5_annotation_origin_is_a_turn_id_and_the_channel_names_the_session():
    annotation = {"id": "a", "turnId": "turn-1", "resource": "file:///a", "resolved": False, "entries": []}
    channel = annotations_uri("copilot:/s1")
    lifted = v0_7.state_up("annotations", {"annotations": [annotation]}, channel=channel)["annotations"][0]
    assert lifted["origin"] == {"session": "copilot:/s1", "turnId": "turn-1"} and "turnId" not in lifted
    assert v0_7.state_up("annotations", {"annotations": [annotation]})["annotations"][0]["origin"]["session"] == ""
    updated = v0_7.action_up(
        "annotations", {"type": "annotations/updated", "annotationId": "a", "turnId": "turn-2"}, channel=channel
    )
    assert updated == {
        "type": "annotations/updated",
        "annotationId": "a",
        "origin": {"session": "copilot:/s1", "turnId": "turn-2"},
    }
    down = v0_7.action_down(
        "annotations",
        {"type": "annotations/updated", "annotationId": "a", "origin": {"session": "s", "chat": "c", "turnId": "t9"}},
    )
    assert down == {"type": "annotations/updated", "annotationId": "a", "turnId": "t9"}


def test_rule_6_enablement_decisions_are_an_enabled_flag():
    plugin = {
        "type": "plugin",
        "id": "p",
        "uri": "u",
        "name": "n",
        "enablement": [{"kind": "workspace", "uri": "file:///w", "enabled": False}],
        "childEnablement": {"x": []},
    }
    assert v0_7.state_down("session", {**SESSION, "customizations": [plugin]})["customizations"][0] == {
        "type": "plugin",
        "id": "p",
        "uri": "u",
        "name": "n",
        "enabled": False,
    }
    assert (
        v0_7.state_down("session", {**SESSION, "customizations": [{**plugin, "enablement": []}]})["customizations"][0][
            "enabled"
        ]
        is True
    )
    toggled = v0_7.action_up("session", {"type": "session/customizationToggled", "id": "p", "enabled": False})
    assert toggled == {
        "type": "session/customizationToggled",
        "id": "p",
        "enablement": [{"kind": "session", "enabled": False}],
    }
    assert (
        v0_7.action_down("session", {"type": "session/customizationToggled", "id": "p", "enablement": []})["enabled"]
        is True
    )
    client = v0_7.action_down(
        "session",
        {"type": "session/activeClientSet", "activeClient": {"clientId": "c", "tools": [], "customizations": [plugin]}},
    )
    assert client["activeClient"]["customizations"][0]["enabled"] is False


def test_rule_7_fields_0_7_0_lacks_are_dropped():
    chat = {
        "resource": "ahp-chat:/c",
        "title": "C",
        "status": 1,
        "modifiedAt": "x",
        "turns": [],
        "movable": True,
        "changes": {},
        "changesets": [],
        "backgroundWork": [{"id": "w"}],
    }
    assert v0_7.state_down("chat", chat) == {
        "resource": "ahp-chat:/c",
        "title": "C",
        "status": 1,
        "modifiedAt": "x",
        "turns": [],
    }
    summary = {
        "resource": "ahp-chat:/c",
        "title": "C",
        "status": 1,
        "modifiedAt": "x",
        "movable": False,
        "changes": {"files": 1},
    }
    session = v0_7.state_down("session", {**SESSION, "origin": {"kind": "automation"}, "chats": [summary]})
    assert "origin" not in session and session["chats"][0] == {
        "resource": "ahp-chat:/c",
        "title": "C",
        "status": 1,
        "modifiedAt": "x",
    }
    assert v0_7.action_down(
        "session", {"type": "session/chatUpdated", "chat": "ahp-chat:/c", "changes": {"movable": True, "title": "T"}}
    )["changes"] == {"title": "T"}
    server = {"type": "mcpServer", "id": "m", "uri": "u", "name": "n", "state": {"kind": "starting", "blocking": True}}
    assert v0_7.action_down("session", {"type": "session/mcpServerStateChanged", "id": "m", "state": server["state"]})[
        "state"
    ] == {"kind": "starting"}


def test_rule_8_recomputing_reads_as_computing():
    assert v0_7.state_down("changeset", {"status": "recomputing", "files": []})["status"] == "computing"
    assert (
        v0_7.action_down("changeset", {"type": "changeset/statusChanged", "status": "recomputing"})["status"]
        == "computing"
    )


def test_a_0_7_0_client_stamps_modified_at_with_its_clock():
    chat = {"resource": "ahp-chat:/c", "title": "C", "status": 1, "modifiedAt": "1970-01-01T00:00:00.000Z", "turns": []}
    action = {
        "type": "chat/turnStarted",
        "turnId": "t",
        "startedAt": "2026-01-01T00:00:00.000Z",
        "message": {"text": "x"},
    }
    assert internal.reduce("chat", chat, action, 1000)["modifiedAt"] == "2026-01-01T00:00:00.000Z"
    assert v0_7.reduce("chat", chat, action, 1000)["modifiedAt"] == "1970-01-01T00:00:01.000Z"


# ── Convergence ───────────────────────────────────────────────────────────────────────────────────

STEPS = [
    (vector["_file"], vector["reducer"], v0_7.state_up(vector["reducer"], strip_none(vector["initial"])), lifted)
    for vector in VECTORS
    for lifted in [[v0_7.action_up(vector["reducer"], action) for action in vector["actions"]]]
] + [(vector["_file"], vector["reducer"], strip_none(vector["initial"]), vector["actions"]) for vector in vectors_0_9()]


def _comparable(kind: str, state: dict) -> dict:
    state = strip_none(state)
    return {key: value for key, value in state.items() if key != "modifiedAt"} if kind == "chat" else state


@pytest.mark.parametrize("name,kind,state,actions", STEPS, ids=[step[0] for step in STEPS])
def test_a_0_7_0_client_converges_unless_the_edge_resyncs_it(name, kind, state, actions):
    if kind not in v0_7.KINDS:
        return
    for action in actions:
        if action is None:
            continue
        after = internal.reduce(kind, state, action, 9999)
        projected = _comparable(kind, v0_7.state_down(kind, after))
        down = v0_7.action_down(kind, action)
        held = v0_7.state_down(kind, state)
        client = _comparable(kind, held if down is None else v0_7.reduce(kind, held, down, 9999))
        assert wire_equal(client, projected) != v0_7.needs_resync(kind, state, action, 9999), (
            action["type"],
            first_difference(client, projected),
        )
        state = after


@pytest.mark.parametrize("name,kind,state,actions", STEPS, ids=[step[0] for step in STEPS])
def test_what_follow_sends_brings_a_0_7_0_mirror_to_the_view_or_it_says_none(name, kind, state, actions):
    """The edge sends ``follow``'s actions (or, on None, a fresh snapshot): either way the 0.7.0
    client holds the projection of the host's next state."""
    if kind not in v0_7.KINDS:
        return
    for action in actions:
        if action is None:
            continue
        after = internal.reduce(kind, state, action, 9999)
        followed = v0_7.follow(kind, state, after, action)
        if followed is not None:
            client = v0_7.state_down(kind, state)
            for each in followed:
                client = v0_7.reduce(kind, client, each, 9999)
            projected = _comparable(kind, v0_7.state_down(kind, after))
            assert wire_equal(_comparable(kind, client), projected), (action["type"], first_difference(client, projected))
        else:
            assert v0_7.needs_resync(kind, state, action, 9999), action["type"]
        state = after


def test_follow_has_no_0_7_0_action_for_a_chat_marked_read_and_repeats_a_kept_changeset_error():
    chat = {"resource": "ahp-chat://default/x", "title": "t", "status": 1, "turns": []}
    marked = internal.reduce("chat", chat, {"type": "chat/isReadChanged", "isRead": True}, 0)
    assert v0_7.follow("chat", chat, marked, {"type": "chat/isReadChanged", "isRead": True}) is None
    changeset = {"status": "error", "error": {"message": "failed"}, "files": []}
    content = {"type": "changeset/contentChanged", "files": [], "status": "ready"}
    after = internal.reduce("changeset", changeset, content, 0)
    [sent] = v0_7.follow("changeset", changeset, after, content) or [None]
    assert sent is not None and sent["error"] == after["error"] == {"message": "failed"}


def test_resync_after_is_exactly_the_newer_types_that_change_the_0_7_0_view():
    changing = set()
    for _, kind, state, actions in STEPS:
        for action in actions:
            if action is None:
                continue
            after = internal.reduce(kind, state, action, 9999)
            if kind in v0_7.KINDS and v0_7.action_down(kind, action) is None:
                if not wire_equal(strip_none(v0_7.state_down(kind, state)), strip_none(v0_7.state_down(kind, after))):
                    changing.add(action["type"])
            state = after
    assert changing == v0_7.RESYNC_AFTER


def test_notifications_go_down_in_0_7_0_shapes():
    summary = {
        "resource": "copilot:/s",
        "provider": "copilot",
        "title": "S",
        "status": 1,
        "createdAt": "x",
        "modifiedAt": "y",
    }
    richer = {**summary, "chats": [{"resource": "ahp-chat:/c", "title": "C"}], "defaultChat": "ahp-chat:/c"}
    added = v0_7.notification_down("root/sessionAdded", {"channel": "ahp-root://", "summary": richer})
    assert added == {"channel": "ahp-root://", "summary": summary}
    changed = v0_7.notification_down(
        "root/sessionSummaryChanged",
        {"channel": "ahp-root://", "session": "copilot:/s", "changes": {"defaultChat": "c", "title": "T"}},
    )
    assert changed["changes"] == {"title": "T"}
    metadata = {"resource": "https://mcp.example", "authorization_servers": ["https://login.example"]}
    auth = v0_7.notification_down("auth/required", {"channel": "copilot:/s", "resource": metadata})
    assert auth == {"channel": "copilot:/s", "resource": "https://mcp.example"}
    assert v0_7.notification_down("channel/frame", {"channel": "x"}) is None
    progress = {"channel": "ahp-root://", "progressToken": "p", "progress": {"message": "m"}}
    assert v0_7.notification_down("root/progress", progress) is progress


def test_a_sub_agent_chat_looks_the_same_to_0_7_0():
    """Tool-spawned chats (ChatOrigin ``tool``, ``interactivity``) and ``ToolResultSubagentContent``
    are 0.7.0 shapes already: the catalogue entry, the chat and the spawning call's content pass
    unchanged, and a 0.7.0 mirror of the session converges on them."""
    worker = "ahp-chat://subagent/Y29waWxvdDovcw/call-1"
    summary = {"resource": worker, "title": "Sub-agent: Look", "status": 1, "modifiedAt": "1970-01-01T00:00:00.000Z",
               "origin": {"kind": "tool", "chat": "ahp-chat://default/Y29waWxvdDovcw", "toolCallId": "call-1"},
               "interactivity": "read-only"}
    added = {"type": "session/chatAdded", "summary": summary}
    assert v0_7.action_down("session", added) == added
    session = {**SESSION, "chats": []}
    after = internal.reduce("session", session, added, 9999)
    mirrored = v0_7.reduce("session", v0_7.state_down("session", session), v0_7.action_down("session", added), 9999)
    assert wire_equal(strip_none(mirrored), strip_none(v0_7.state_down("session", after)))
    assert v0_7.state_down("session", after)["chats"] == [summary]
    block = {"type": "subagent", "resource": worker, "title": "Sub-agent: Look", "description": "Look"}
    changed = {"type": "chat/toolCallContentChanged", "turnId": "t1", "toolCallId": "call-1", "content": [block]}
    assert v0_7.action_down("chat", changed) == changed


@pytest.mark.parametrize(("directories", "action"), [
    (["file:///a", "file:///b", "file:///c"], {"directory": "file:///b", "replacement": "file:///x"}),
    (["file:///a", "file:///b", "file:///c"], {"directory": "file:///b", "replacement": "file:///c"}),
    (["file:///a", "file:///b", "file:///c"], {"directory": "file:///c", "replacement": "file:///a"}),
    (["file:///a", "file:///b"], {"directory": "file:///z", "replacement": "file:///y"}),
])
def test_a_replaced_working_directory_reaches_a_0_7_0_mirror_as_0_7_0_actions(directories, action):
    before = {**SESSION, "workingDirectories": directories}
    replaced = {"type": "session/workingDirectoryReplaced", **action}
    after = internal.reduce("session", before, replaced, 0)
    mirror = v0_7.state_down("session", before)
    for each in v0_7.catch_up("session", before, after, replaced) or []:
        assert known_to("0.7.0", each["type"])
        mirror = v0_7.reduce("session", mirror, each, 0)
    assert mirror == v0_7.state_down("session", after)


def test_reordered_chats_reach_a_0_7_0_mirror_as_0_7_0_actions_keeping_the_default_chat():
    chats = [{"resource": f"ahp-chat://c/{name}", "title": name, "status": 1, "modifiedAt": "1970-01-01T00:00:00.000Z"}
             for name in "abc"]
    before = {**SESSION, "chats": chats, "defaultChat": chats[1]["resource"]}
    reordered = {"type": "session/chatsReordered", "chats": [chats[0]["resource"], chats[2]["resource"], chats[1]["resource"]]}
    after = internal.reduce("session", before, reordered, 0)
    mirror = v0_7.state_down("session", before)
    caught_up = v0_7.catch_up("session", before, after, reordered) or []
    assert caught_up and all(known_to("0.7.0", each["type"]) for each in caught_up)
    for each in caught_up:
        mirror = v0_7.reduce("session", mirror, each, 0)
    assert mirror == v0_7.state_down("session", after)
