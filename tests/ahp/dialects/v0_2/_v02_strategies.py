"""Hypothesis strategies for AHP 0.2.0 session actions, every one of the 40 types, in the shapes of
the 0.2.0 schema, with ids from the same pools as ``_internal_strategies`` so that they meet the
turns, calls, requests, messages, clients and customizations of generated internal sessions."""

from __future__ import annotations

from hypothesis import strategies as st

from . import _internal_strategies as internal

texts = internal.texts
user_messages = st.fixed_dictionaries({"text": texts}, optional={"attachments": st.just([{"type": "simple", "label": "f", "modelRepresentation": "x"}])})
tool_calls_v02 = st.fixed_dictionaries(
    {"toolCallId": st.sampled_from(internal.CALL_IDS), "toolName": st.just("bash"), "displayName": st.just("Bash"),
     "status": st.just("completed"), "invocationMessage": texts, "confirmed": st.just("not-needed"), "success": st.booleans(),
     "pastTenseMessage": texts},
    optional={"toolClientId": st.sampled_from(internal.CLIENT_IDS)},
)
parts_v02 = st.one_of(
    st.builds(lambda kind, ident, text: {"kind": kind, "id": ident, "content": text},
              st.sampled_from(["markdown", "reasoning"]), st.sampled_from(internal.PART_IDS), texts),
    st.just({"kind": "contentRef", "uri": "file:///x"}),
    st.builds(lambda call: {"kind": "toolCall", "toolCall": call}, tool_calls_v02),
    st.builds(lambda text: {"kind": "systemNotification", "content": text}, texts),
)
customizations_v02 = st.sampled_from([
    {"type": "plugin", "id": "plug", "uri": "https://plugins/p", "name": "P", "enabled": True},
    {"type": "plugin", "id": "plug", "uri": "https://plugins/p", "name": "P", "enabled": False,
     "children": [{"type": "skill", "id": "skill", "uri": "https://plugins/p#s", "name": "s"}]},
    {"type": "directory", "id": "dir", "uri": "file:///d", "name": "D", "enabled": False, "contents": "rule", "writable": True},
])

SESSION_TYPES = (
    "ready", "creationFailed", "turnStarted", "delta", "reasoning", "responsePart", "usage", "turnComplete",
    "turnCancelled", "error", "truncated", "toolCallStart", "toolCallDelta", "toolCallReady", "toolCallConfirmed",
    "toolCallComplete", "toolCallResultConfirmed", "toolCallContentChanged", "titleChanged", "modelChanged",
    "agentChanged", "activityChanged", "isReadChanged", "isArchivedChanged", "changesetsChanged", "configChanged",
    "metaChanged", "serverToolsChanged", "activeClientChanged", "activeClientToolsChanged", "pendingMessageSet",
    "pendingMessageRemoved", "queuedMessagesReordered", "inputRequested", "inputAnswerChanged", "inputCompleted",
    "customizationsChanged", "customizationToggled", "customizationUpdated", "customizationRemoved",
)


def _optional(draw, key, strategy):
    return internal._optional(draw, key, strategy)


@st.composite
def session_actions(draw) -> dict:
    kind = draw(st.sampled_from(SESSION_TYPES))
    action: dict = {"type": "session/" + kind}
    turn = {"turnId": draw(st.sampled_from(internal.TURN_IDS))}
    call = {**turn, "toolCallId": draw(st.sampled_from(internal.CALL_IDS))}
    if kind == "creationFailed":
        action.update(error=draw(internal.errors))
    elif kind == "turnStarted":
        action.update(turn, userMessage=draw(user_messages))
        action.update(_optional(draw, "queuedMessageId", st.sampled_from(internal.MESSAGE_IDS)))
    elif kind in ("delta", "reasoning"):
        action.update(turn, partId=draw(st.sampled_from(internal.PART_IDS + internal.CALL_IDS)), content=draw(texts))
    elif kind == "responsePart":
        action.update(turn, part=draw(parts_v02))
    elif kind == "usage":
        action.update(turn, usage=draw(internal.usages))
    elif kind in ("turnComplete", "turnCancelled"):
        action.update(turn)
    elif kind == "error":
        action.update(turn, error=draw(internal.errors))
    elif kind == "truncated":
        action.update(_optional(draw, "turnId", st.sampled_from(internal.TURN_IDS)))
    elif kind == "toolCallStart":
        action.update(call, toolName="bash", displayName="Bash")
        action.update(_optional(draw, "toolClientId", st.sampled_from(internal.CLIENT_IDS)))
        action.update(_optional(draw, "_meta", internal.metas))
    elif kind == "toolCallDelta":
        action.update(call, content=draw(texts))
        action.update(_optional(draw, "invocationMessage", texts))
    elif kind == "toolCallReady":
        action.update(call, invocationMessage=draw(texts))
        for key, strategy in (("toolInput", texts), ("confirmationTitle", texts), ("options", internal.options), ("editable", st.booleans())):
            action.update(_optional(draw, key, strategy))
        action.update(_optional(draw, "confirmed", st.sampled_from(["not-needed", "user-action", "setting"])))
    elif kind == "toolCallConfirmed":
        action.update(call, approved=draw(st.booleans()))
        if action["approved"]:
            action["confirmed"] = draw(st.sampled_from(["user-action", "setting"]))
            action.update(_optional(draw, "editedToolInput", texts))
        else:
            action["reason"] = draw(st.sampled_from(["denied", "skipped"]))
            action.update(_optional(draw, "userSuggestion", user_messages))
        action.update(_optional(draw, "selectedOptionId", st.sampled_from(["o1", "o2"])))
    elif kind == "toolCallComplete":
        action.update(call, result=draw(internal.results))
        action.update(_optional(draw, "requiresResultConfirmation", st.booleans()))
    elif kind == "toolCallResultConfirmed":
        action.update(call, approved=draw(st.booleans()))
    elif kind == "toolCallContentChanged":
        action.update(call, content=[{"type": "text", "text": draw(texts)}])
    elif kind == "titleChanged":
        action.update(title=draw(texts))
    elif kind == "modelChanged":
        action.update(model=draw(internal.models))
    elif kind == "agentChanged":
        action.update(_optional(draw, "agent", internal.agents))
    elif kind == "activityChanged":
        action.update(_optional(draw, "activity", texts))
    elif kind == "isReadChanged":
        action.update(isRead=draw(st.booleans()))
    elif kind == "isArchivedChanged":
        action.update(isArchived=draw(st.booleans()))
    elif kind == "changesetsChanged":
        action.update(_optional(draw, "changesets", st.just([{"label": "All", "uriTemplate": "ahp-changeset:/x", "files": 3}])))
    elif kind == "configChanged":
        action.update(config={"mode": draw(texts)})
        action.update(_optional(draw, "replace", st.booleans()))
    elif kind == "metaChanged":
        action.update(_optional(draw, "_meta", internal.metas))
    elif kind == "serverToolsChanged":
        action.update(tools=[{"name": "grep"}])
    elif kind == "activeClientChanged":
        action.update(activeClient=draw(st.none() | internal.active_clients))
    elif kind == "activeClientToolsChanged":
        action.update(tools=[{"name": draw(texts) or "t"}])
    elif kind == "pendingMessageSet":
        action.update(kind=draw(st.sampled_from(["steering", "queued"])), id=draw(st.sampled_from(internal.MESSAGE_IDS)),
                      userMessage=draw(user_messages))
    elif kind == "pendingMessageRemoved":
        action.update(kind=draw(st.sampled_from(["steering", "queued"])), id=draw(st.sampled_from(internal.MESSAGE_IDS)))
    elif kind == "queuedMessagesReordered":
        action.update(order=draw(st.lists(st.sampled_from(internal.MESSAGE_IDS), max_size=3)))
    elif kind == "inputRequested":
        action.update(request=draw(internal.input_requests()))
    elif kind == "inputAnswerChanged":
        action.update(requestId=draw(st.sampled_from(internal.REQUEST_IDS)), questionId="q1")
        action.update(_optional(draw, "answer", st.just({"state": "draft", "value": {"kind": "text", "value": "z"}})))
    elif kind == "inputCompleted":
        action.update(requestId=draw(st.sampled_from(internal.REQUEST_IDS)), response=draw(st.sampled_from(["accept", "decline", "cancel"])))
    elif kind == "customizationsChanged":
        action.update(customizations=draw(st.lists(customizations_v02, max_size=2, unique_by=lambda c: c["id"])))
    elif kind == "customizationToggled":
        action.update(id=draw(st.sampled_from(internal.CUSTOMIZATION_IDS)), enabled=draw(st.booleans()))
    elif kind == "customizationUpdated":
        action.update(customization=draw(customizations_v02))
    elif kind == "customizationRemoved":
        action.update(id=draw(st.sampled_from(internal.CUSTOMIZATION_IDS)))
    return action
