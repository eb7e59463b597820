"""Session catalogue behaviours the official vectors leave open."""

from __future__ import annotations

from ahp import state as internal

SUMMARY = {"resource": "ahp-chat:/c", "title": "C", "status": 1, "modifiedAt": "x", "activity": "thinking"}
SESSION = {
    "provider": "p",
    "title": "S",
    "status": 1,
    "lifecycle": "ready",
    "activeClients": [],
    "chats": [SUMMARY],
    "defaultChat": "ahp-chat:/c",
}


def test_chat_updated_never_moves_a_chat_and_a_null_change_clears_the_field():
    action = {
        "type": "session/chatUpdated",
        "chat": "ahp-chat:/c",
        "changes": {"resource": "ahp-chat:/x", "activity": None, "title": "T"},
    }
    chat = internal.reduce("session", SESSION, action, 0)["chats"][0]
    assert chat == {"resource": "ahp-chat:/c", "title": "T", "status": 1, "modifiedAt": "x"}


def test_removing_the_default_chat_clears_the_hint_and_an_unknown_chat_changes_nothing():
    assert internal.reduce("session", SESSION, {"type": "session/chatRemoved", "chat": "ahp-chat:/zz"}, 0) is SESSION
    removed = internal.reduce("session", SESSION, {"type": "session/chatRemoved", "chat": "ahp-chat:/c"}, 0)
    assert removed["chats"] == [] and "defaultChat" not in removed



def _server_tools(tools):
    return internal.reduce("session", SESSION, {"type": "session/serverToolsChanged", "tools": tools}, 0)["serverTools"]


def test_server_tools_hold_no_null_at_any_depth_and_are_shared_when_they_hold_none():
    schema = {"type": "object", "properties": {"path": {"type": "string", "description": "a:null, b"}}, "required": ["path"]}
    tool = {"name": "read", "title": "Read", "description": "Reads", "inputSchema": schema}
    tools = [tool]
    assert _server_tools(tools) is tools  # nothing dropped: the very list, not a copy
    schema["properties"]["path"]["default"] = None
    schema["examples"] = [{"path": None}, None]
    got = _server_tools([{**tool, "annotations": None}, None])
    assert got == [{"name": "read", "title": "Read", "description": "Reads",
                    "inputSchema": {"type": "object", "properties": {"path": {"type": "string", "description": "a:null, b"}},
                                    "required": ["path"], "examples": [{}, None]}}, None]


def test_server_tools_that_orjson_cannot_write_are_cleaned_the_plain_way():
    # A key that is not a string, an integer past 64 bits: orjson refuses them; ``clean`` does it.
    tools = [{"name": "x", "inputSchema": {1: {"a": None}, "big": 2**70, "c": None}}]
    assert _server_tools(tools) == [{"name": "x", "inputSchema": {1: {}, "big": 2**70}}]
    kept = [{"name": "x", "inputSchema": {1: "one", "big": 2**70}}]
    assert _server_tools(kept) is kept


def test_customizations_hold_no_null_and_are_shared_when_they_hold_none():
    entry = {"id": "c1", "type": "plugin", "name": "P", "children": [{"id": "c1/s", "type": "skill", "name": "s"}]}
    listed = [entry]
    state = internal.reduce("session", SESSION, {"type": "session/customizationsChanged", "customizations": listed}, 0)
    assert state["customizations"] is listed
    changed = {**entry, "description": None, "children": [{"id": "c1/s", "type": "skill", "name": "s", "uri": None}]}
    state = internal.reduce("session", state, {"type": "session/customizationUpdated", "customization": changed}, 0)
    assert state["customizations"] == [{"id": "c1", "type": "plugin", "name": "P",
                                        "children": [{"id": "c1/s", "type": "skill", "name": "s"}]}]
    state = internal.reduce("session", state, {"type": "session/customizationsChanged", "customizations": [changed]}, 0)
    assert state["customizations"] == [{"id": "c1", "type": "plugin", "name": "P",
                                        "children": [{"id": "c1/s", "type": "skill", "name": "s"}]}]
