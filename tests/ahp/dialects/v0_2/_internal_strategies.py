"""Hypothesis strategies for the internal (0.9.0) model: sessions with several chats, and action
sequences over them, in the shapes of the 1.0.0 state and action schemas (``SessionState``,
``ChatState``, the ``session/*`` and ``chat/*`` actions).

Ids are drawn from small pools so that actions meet the turns, tool calls, input requests, pending
messages, clients and customizations they name, and sometimes miss them.
"""

from __future__ import annotations

from hypothesis import strategies as st

from ahp.dialects.v0_2.states import InternalSession
from ahp.dialects.v0_2.timestamps import ms_to_iso
from ahp.state.channels import chat_uri

SESSION_URI = "p:/s1"
DEFAULT_CHAT = chat_uri(SESSION_URI)
OTHER_CHATS = (chat_uri(SESSION_URI, "side"), chat_uri(SESSION_URI, "subagent"))

TURN_IDS = ("t1", "t2", "t3")
CALL_IDS = ("c1", "c2", "c3")
PART_IDS = ("p1", "p2")
REQUEST_IDS = ("r1", "r2")
MESSAGE_IDS = ("m1", "m2")
CLIENT_IDS = ("tui", "vscode", "agui")
CUSTOMIZATION_IDS = ("plug", "dir", "skill", "mcp-top", "mcp-child")
DIRECTORIES = ("file:///a", "file:///b", "file:///c")

texts = st.sampled_from(["", "hi", "ls -la", "ü", "{\"k\": 1}"])
times = st.integers(0, 20_000).map(ms_to_iso)
models = st.sampled_from([{"id": "m1"}, {"id": "m2", "config": {"effort": "high"}}])
agents = st.sampled_from([{"uri": "agent:/a"}, {"uri": "agent:/b"}])
metas = st.sampled_from([{"x": 1}, {"phase": "y"}])
string_or_markdown = texts | texts.map(lambda text: {"markdown": text})
activities = st.sampled_from([1, 2, 8, 24])
flags = st.sampled_from([0, 32, 64, 96, 128])
statuses = st.builds(lambda activity, flag: activity | flag, activities, flags)


def _optional(draw, key: str, strategy) -> dict:
    return {key: draw(strategy)} if draw(st.booleans()) else {}


@st.composite
def messages(draw, kinds=("user", "agent", "tool", "automation", "systemNotification")) -> dict:
    message = {"text": draw(texts), "origin": {"kind": draw(st.sampled_from(kinds))}}
    message.update(_optional(draw, "model", models))
    message.update(_optional(draw, "agent", agents))
    if draw(st.booleans()):
        message["attachments"] = [{"type": "simple", "label": "file", "modelRepresentation": "x"}]
    return message


contributors = st.sampled_from(
    [{"kind": "client", "clientId": "tui"}, {"kind": "client", "clientId": "vscode"}, {"kind": "mcp", "customizationId": "mcp-top"}]
)
options = st.just([{"id": "o1", "label": "Allow", "kind": "approve"}, {"id": "o2", "label": "Deny", "kind": "deny"}])
results = st.fixed_dictionaries(
    {"success": st.booleans(), "pastTenseMessage": string_or_markdown},
    optional={"content": st.just([{"type": "text", "text": "out"}]), "error": st.just({"message": "boom"})},
)
tool_inputs = texts | st.just({"uri": "file:///input.json"})


@st.composite
def tool_calls(draw) -> dict:
    call = {"toolCallId": draw(st.sampled_from(CALL_IDS)), "toolName": "bash", "displayName": "Bash"}
    call.update(_optional(draw, "intention", texts))
    call.update(_optional(draw, "contributor", contributors))
    call.update(_optional(draw, "_meta", metas))
    status = draw(st.sampled_from(
        ["streaming", "pending-confirmation", "running", "pending-result-confirmation", "completed", "cancelled", "auth-required"]
    ))
    call["status"] = status
    if status == "streaming":
        call.update(_optional(draw, "partialInput", texts))
        call.update(_optional(draw, "invocationMessage", string_or_markdown))
        return call
    call["invocationMessage"] = draw(string_or_markdown)
    call.update(_optional(draw, "toolInput", tool_inputs))
    if status == "pending-confirmation":
        call.update(_optional(draw, "confirmationTitle", string_or_markdown))
        call.update(_optional(draw, "options", options))
    elif status == "cancelled":
        call["reason"] = draw(st.sampled_from(["denied", "skipped", "result-denied"]))
    else:
        call["confirmed"] = draw(st.sampled_from(["not-needed", "user-action", "setting"]))
        if status in ("running", "auth-required"):
            call.update(_optional(draw, "content", st.just([{"type": "text", "text": "partial"}])))
        if status == "auth-required":
            call["contributor"] = {"kind": "mcp", "customizationId": "mcp-top"}
            call["auth"] = {"reason": "required", "resource": {"resource": "https://mcp.example"}}
        if status in ("pending-result-confirmation", "completed"):
            call.update(draw(results))
    return call


@st.composite
def input_requests(draw) -> dict:
    request = {"id": draw(st.sampled_from(REQUEST_IDS)), "message": draw(texts)}
    if draw(st.booleans()):
        request["questions"] = [{"id": "q1", "kind": "text", "message": "Why?"}]
    if draw(st.booleans()):
        request["answers"] = {"q1": {"state": "draft", "value": {"kind": "text", "value": "because"}}}
    return request


@st.composite
def parts(draw, *, active: bool) -> dict:
    kind = draw(st.sampled_from(["markdown", "reasoning", "toolCall", "inputRequest", "contentRef", "systemNotification"]))
    if kind in ("markdown", "reasoning"):
        return {"kind": kind, "id": draw(st.sampled_from(PART_IDS)), "content": draw(texts)}
    if kind == "toolCall":
        return {"kind": "toolCall", "toolCall": draw(tool_calls())}
    if kind == "inputRequest":
        part = {"kind": "inputRequest", "request": draw(input_requests())}
        if not active or draw(st.booleans()):
            part["response"] = draw(st.sampled_from(["accept", "decline", "cancel"]))
        return part
    if kind == "contentRef":
        return {"kind": "contentRef", "uri": "file:///out.txt", "contentType": "text/plain"}
    return {"kind": "systemNotification", "content": draw(string_or_markdown)}


usages = st.fixed_dictionaries({}, optional={"inputTokens": st.integers(0, 9), "outputTokens": st.integers(0, 9)})
errors = st.fixed_dictionaries({"errorType": st.just("runtime"), "message": texts})


@st.composite
def turns(draw) -> dict:
    turn = {
        "id": draw(st.sampled_from(TURN_IDS)),
        "message": draw(messages()),
        "responseParts": draw(st.lists(parts(active=False), max_size=3)),
        "state": draw(st.sampled_from(["complete", "cancelled", "error"])),
    }
    turn.update(_optional(draw, "startedAt", times))
    turn.update(_optional(draw, "duration", st.integers(0, 5000)))
    turn.update(_optional(draw, "usage", usages))
    if turn["state"] == "error" and draw(st.booleans()):
        turn["responseParts"] = [*turn["responseParts"], {"kind": "error", "error": draw(errors), "resumable": draw(st.booleans())}]
    return turn


@st.composite
def active_turns(draw) -> dict:
    active = {
        "id": draw(st.sampled_from(TURN_IDS)),
        "startedAt": draw(times),
        "message": draw(messages()),
        "responseParts": draw(st.lists(parts(active=True), max_size=4)),
    }
    active.update(_optional(draw, "usage", usages))
    return active


pending_messages = st.builds(lambda ident, message: {"id": ident, "message": message}, st.sampled_from(MESSAGE_IDS), messages(("user",)))


BLOCKING_CALL_STATUSES = frozenset({"pending-confirmation", "pending-result-confirmation", "auth-required"})


def blocks(active_turn: dict) -> bool:
    """Whether an active turn waits on the user: an input request without a response, or a tool call
    pending confirmation, pending result confirmation or paused for authentication."""
    for part in active_turn["responseParts"]:
        if part["kind"] == "inputRequest" and "response" not in part:
            return True
        if part["kind"] == "toolCall" and part["toolCall"]["status"] in BLOCKING_CALL_STATUSES:
            return True
    return False


def reachable_activities(chat: dict) -> tuple[int, ...]:
    """The activities the chat reducers can leave beside ``chat``'s turns (Idle 1, Error 2,
    InProgress 8, InputNeeded 24).

    Every action that starts, resumes, ends or truncates a turn, or asks, answers or confirms,
    derives the activity from the content; ``chat/responsePart`` appends a part and derives
    nothing, so a blocking part that arrived that way leaves InProgress. Hence: an active turn is
    InProgress, or InputNeeded when something in it blocks; with no active turn the chat is Idle,
    or Error when its last turn ended in an error (a truncation to that turn makes it Idle)."""
    active = chat.get("activeTurn")
    if active is not None:
        return (8, 24) if blocks(active) else (8,)
    ended = chat["turns"]
    return (1, 2) if ended and ended[-1]["state"] == "error" else (1,)


@st.composite
def chats(draw, resource: str) -> dict:
    """A chat whose status is one the reducers reach from its content (``reachable_activities``),
    with any flags."""
    chat = {"resource": resource, "title": draw(texts), "modifiedAt": draw(times)}
    chat["turns"] = draw(st.lists(turns(), max_size=3))
    chat.update(_optional(draw, "activeTurn", active_turns()))
    chat["status"] = draw(st.sampled_from(reachable_activities(chat))) | draw(flags)
    chat.update(_optional(draw, "steeringMessage", pending_messages))
    chat.update(_optional(draw, "queuedMessages", st.lists(pending_messages, min_size=1, max_size=2)))
    chat.update(_optional(draw, "draft", messages(("user",))))
    chat.update(_optional(draw, "activity", texts))
    chat.update(_optional(draw, "turnsNextCursor", st.just("cursor-1")))
    return chat


enablements = st.lists(
    st.sampled_from([{"kind": "session", "enabled": False}, {"kind": "global", "enabled": True}, {"kind": "global", "enabled": False}]),
    max_size=2,
)


@st.composite
def customizations(draw) -> list:
    mcp_child = {"type": "mcpServer", "id": "mcp-child", "uri": "file:///p/.mcp.json", "name": "child", "state": {"kind": "ready"}}
    mcp_child.update(_optional(draw, "enablement", enablements))
    plugin = {"type": "plugin", "id": "plug", "uri": "https://plugins/p", "name": "P",
              "children": [{"type": "skill", "id": "skill", "uri": "https://plugins/p#s", "name": "s"}, mcp_child]}
    plugin.update(_optional(draw, "enablement", enablements))
    directory = {"type": "directory", "id": "dir", "uri": "file:///d", "name": "D", "enabled": draw(st.booleans()),
                 "contents": "skill", "writable": False}
    top_mcp = {"type": "mcpServer", "id": "mcp-top", "uri": "file:///m", "name": "M",
               "state": draw(st.sampled_from([{"kind": "ready"}, {"kind": "starting", "blocking": True}, {"kind": "stopped"}]))}
    return draw(st.permutations([plugin, directory, top_mcp]).map(lambda entries: entries[: draw(st.integers(0, 3))]))


active_clients = st.builds(
    lambda ident, tools: {"clientId": ident, "tools": tools},
    st.sampled_from(CLIENT_IDS),
    st.sampled_from([[], [{"name": "open"}]]),
)


@st.composite
def internal_sessions(draw) -> InternalSession:
    """A session with its default chat, sometimes other chats, sometimes no default chat at all."""
    other = draw(st.lists(st.sampled_from(OTHER_CHATS), unique=True, max_size=2))
    held = ([DEFAULT_CHAT] if draw(st.integers(0, 9)) else []) + other
    chat_states = {uri: draw(chats(uri)) for uri in held}
    state = {
        "provider": "p",
        "title": draw(texts),
        "status": draw(statuses),
        "lifecycle": draw(st.sampled_from(["creating", "ready", "failed"])),
        "activeClients": draw(st.lists(active_clients, max_size=3, unique_by=lambda client: client["clientId"])),
        "chats": [{k: chat[k] for k in ("resource", "title", "status", "modifiedAt")} for chat in chat_states.values()],
    }
    if held:
        state["defaultChat"] = held[0]
    state.update(_optional(draw, "activity", texts))
    state.update(_optional(draw, "workingDirectories", st.lists(st.sampled_from(DIRECTORIES), unique=True, max_size=2)))
    state.update(_optional(draw, "customizations", customizations()))
    state.update(_optional(draw, "changesets", st.just([{"label": "All", "uriTemplate": "ahp-changeset:/s1", "changeKind": "session"}])))
    state.update(_optional(draw, "config", st.just({"schema": {"type": "object", "properties": {}}, "values": {"mode": "x"}})))
    state.update(_optional(draw, "_meta", metas))
    return InternalSession(SESSION_URI, state, chat_states, draw(times))


# --- actions --------------------------------------------------------------------------------------


def _ids(draw, pool):
    return draw(st.sampled_from(pool))


@st.composite
def chat_actions(draw) -> dict:
    """One ``chat/*`` action (any of the 0.9.0 chat action types)."""
    turn = {"turnId": _ids(draw, TURN_IDS)}
    call = {**turn, "toolCallId": _ids(draw, CALL_IDS)}
    meta = _optional(draw, "_meta", metas)
    kind = draw(st.sampled_from([
        "turnStarted", "delta", "reasoning", "responsePart", "usage", "toolCallStart", "toolCallDelta", "toolCallReady",
        "toolCallConfirmed", "toolCallComplete", "toolCallResultConfirmed", "toolCallContentChanged",
        "toolCallAuthRequired", "toolCallAuthResolved", "turnComplete", "turnCancelled", "error", "turnResume",
        "activityChanged", "pendingMessageSet", "pendingMessageRemoved", "queuedMessagesReordered", "draftChanged",
        "isReadChanged", "isArchivedChanged", "inputRequested", "inputAnswerChanged", "inputCompleted", "truncated",
        "turnsLoaded", "workingDirectorySet", "movableChanged", "backgroundWorkSet", "changesetsChanged",
    ]))
    action: dict = {"type": "chat/" + kind}
    if kind == "turnStarted":
        action.update(turn, startedAt=draw(times), message=draw(messages(("user",))))
        action.update(_optional(draw, "queuedMessageId", st.sampled_from(MESSAGE_IDS)))
    elif kind in ("delta", "reasoning"):
        action.update(turn, partId=_ids(draw, PART_IDS + CALL_IDS), content=draw(texts))
    elif kind == "responsePart":
        action.update(turn, part=draw(parts(active=True)))
    elif kind == "usage":
        action.update(turn, usage=draw(usages))
    elif kind == "toolCallStart":
        action.update(call, toolName="bash", displayName="Bash", **meta)
        action.update(_optional(draw, "contributor", contributors))
        action.update(_optional(draw, "intention", texts))
    elif kind == "toolCallDelta":
        action.update(call, **meta)
        action.update(_optional(draw, "content", texts))
        action.update(_optional(draw, "invocationMessage", string_or_markdown))
    elif kind == "toolCallReady":
        action.update(call, invocationMessage=draw(string_or_markdown), **meta)
        for key, strategy in (("toolInput", tool_inputs), ("confirmationTitle", string_or_markdown), ("options", options),
                              ("editable", st.booleans()), ("intention", texts), ("contributor", contributors)):
            action.update(_optional(draw, key, strategy))
        if draw(st.booleans()):
            action["confirmed"] = draw(st.sampled_from(["not-needed", "user-action", "setting"]))
    elif kind == "toolCallConfirmed":
        action.update(call, approved=draw(st.booleans()), **meta)
        if action["approved"]:
            action["confirmed"] = draw(st.sampled_from(["user-action", "setting"]))
            action.update(_optional(draw, "editedToolInput", texts))
        else:
            action["reason"] = draw(st.sampled_from(["denied", "skipped"]))
            action.update(_optional(draw, "userSuggestion", messages(("user",))))
        action.update(_optional(draw, "selectedOptionId", st.sampled_from(["o1", "o2", "zz"])))
    elif kind == "toolCallComplete":
        action.update(call, result=draw(results), **meta)
        action.update(_optional(draw, "requiresResultConfirmation", st.booleans()))
    elif kind == "toolCallResultConfirmed":
        action.update(call, approved=draw(st.booleans()), **meta)
    elif kind == "toolCallContentChanged":
        action.update(call, content=[{"type": "text", "text": draw(texts)}], **meta)
    elif kind == "toolCallAuthRequired":
        action.update(call, auth={"reason": "required", "resource": {"resource": "https://mcp.example"}}, **meta)
    elif kind == "toolCallAuthResolved":
        action.update(call, **meta)
    elif kind in ("turnComplete", "turnCancelled"):
        action.update(turn, duration=draw(st.integers(-10, 5000)))
    elif kind == "error":
        part = {"kind": "error", "error": draw(errors)}
        part.update(_optional(draw, "resumable", st.booleans()))
        action.update(turn, duration=draw(st.integers(0, 5000)), part=part)
    elif kind == "turnResume":
        action.update(turn)
    elif kind == "activityChanged":
        action.update(_optional(draw, "activity", texts))
    elif kind == "pendingMessageSet":
        action.update(kind=draw(st.sampled_from(["steering", "queued"])), id=_ids(draw, MESSAGE_IDS), message=draw(messages(("user",))))
    elif kind == "pendingMessageRemoved":
        action.update(kind=draw(st.sampled_from(["steering", "queued"])), id=_ids(draw, MESSAGE_IDS))
    elif kind == "queuedMessagesReordered":
        action.update(order=draw(st.lists(st.sampled_from(MESSAGE_IDS), max_size=3)))
    elif kind == "draftChanged":
        action.update(_optional(draw, "draft", messages(("user",))))
    elif kind == "isReadChanged":
        action.update(isRead=draw(st.booleans()))
    elif kind == "isArchivedChanged":
        action.update(isArchived=draw(st.booleans()))
    elif kind == "inputRequested":
        action.update(request=draw(input_requests()))
    elif kind == "inputAnswerChanged":
        action.update(requestId=_ids(draw, REQUEST_IDS), questionId="q1")
        action.update(_optional(draw, "answer", st.just({"state": "submitted", "value": {"kind": "text", "value": "y"}})))
    elif kind == "inputCompleted":
        action.update(requestId=_ids(draw, REQUEST_IDS), response=draw(st.sampled_from(["accept", "decline", "cancel"])))
        action.update(_optional(draw, "answers", st.just({"q1": {"state": "skipped"}})))
    elif kind == "truncated":
        action.update(_optional(draw, "turnId", st.sampled_from(TURN_IDS)))
    elif kind == "turnsLoaded":
        action.update(turns=draw(st.lists(turns(), max_size=2)))
        action.update(_optional(draw, "turnsNextCursor", st.just("cursor-2")))
    elif kind == "workingDirectorySet":
        action.update(directory=_ids(draw, DIRECTORIES))
    elif kind == "movableChanged":
        action.update(movable=draw(st.booleans()))
    elif kind == "backgroundWorkSet":
        action.update(work={"id": "w1", "kind": "task", "title": draw(texts)})
    elif kind == "changesetsChanged":
        action.update(_optional(draw, "changesets", st.just([{"label": "Turn", "uriTemplate": "ahp-changeset:/t/{turnId}", "changeKind": "turn"}])))
    return action


@st.composite
def session_actions(draw, session: InternalSession) -> dict:
    """One ``session/*`` action (any of the 0.9.0 session action types)."""
    held = list(session.chats)
    kind = draw(st.sampled_from([
        "ready", "creationFailed", "chatAdded", "chatRemoved", "chatUpdated", "chatsReordered", "defaultChatChanged",
        "titleChanged", "activityChanged", "metaChanged", "serverToolsChanged", "isReadChanged", "isArchivedChanged",
        "changesetsChanged", "configChanged", "activeClientSet", "activeClientRemoved", "workingDirectorySet",
        "workingDirectoryRemoved", "workingDirectoryReplaced", "inputNeededSet", "inputNeededRemoved",
        "customizationsChanged", "customizationToggled", "customizationUpdated", "customizationRemoved",
        "mcpServerStateChanged", "mcpServerStartRequested", "mcpServerStopRequested", "mcpServerBackgroundRequested",
    ]))
    action: dict = {"type": "session/" + kind}
    chat_pool = tuple(held) + OTHER_CHATS + (DEFAULT_CHAT,)
    if kind == "creationFailed":
        action.update(error=draw(errors))
    elif kind == "chatAdded":
        action.update(summary={"resource": draw(st.sampled_from(chat_pool)), "title": "x", "status": 1, "modifiedAt": draw(times)})
    elif kind == "chatRemoved":
        action.update(chat=draw(st.sampled_from(chat_pool)))
    elif kind == "chatUpdated":
        action.update(chat=draw(st.sampled_from(chat_pool)), changes={"status": draw(statuses), "title": draw(texts)})
    elif kind == "chatsReordered":
        action.update(chats=draw(st.permutations([entry.get("resource") for entry in session.state.get("chats", [])])))
    elif kind == "defaultChatChanged":
        action.update(_optional(draw, "defaultChat", st.sampled_from(chat_pool)))
    elif kind == "titleChanged":
        action.update(title=draw(texts))
    elif kind == "activityChanged":
        action.update(_optional(draw, "activity", texts))
    elif kind == "metaChanged":
        action.update(_optional(draw, "_meta", metas))
    elif kind == "serverToolsChanged":
        action.update(tools=[{"name": draw(texts) or "t"}])
    elif kind == "isReadChanged":
        action.update(isRead=draw(st.booleans()))
    elif kind == "isArchivedChanged":
        action.update(isArchived=draw(st.booleans()))
    elif kind == "changesetsChanged":
        action.update(_optional(draw, "changesets", st.just([{"label": "All", "uriTemplate": "ahp-changeset:/x", "changeKind": "session", "capabilities": {"review": {}}}])))
    elif kind == "configChanged":
        action.update(config={"mode": draw(texts)})
        action.update(_optional(draw, "replace", st.booleans()))
    elif kind == "activeClientSet":
        action.update(activeClient=draw(active_clients))
    elif kind == "activeClientRemoved":
        action.update(clientId=_ids(draw, CLIENT_IDS))
    elif kind in ("workingDirectorySet", "workingDirectoryRemoved"):
        action.update(directory=_ids(draw, DIRECTORIES))
    elif kind == "workingDirectoryReplaced":
        action.update(directory=_ids(draw, DIRECTORIES), replacement=_ids(draw, DIRECTORIES))
    elif kind == "inputNeededSet":
        request = draw(input_requests())
        action.update(request={"kind": "chatInput", "id": f"{DEFAULT_CHAT}#{request['id']}", "chat": DEFAULT_CHAT, "request": request})
    elif kind == "inputNeededRemoved":
        action.update(id=f"{DEFAULT_CHAT}#{_ids(draw, REQUEST_IDS)}")
    elif kind == "customizationsChanged":
        action.update(_optional(draw, "customizations", customizations()))
    elif kind == "customizationToggled":
        action.update(id=_ids(draw, CUSTOMIZATION_IDS), enablement=draw(enablements))
    elif kind == "customizationUpdated":
        entries = draw(customizations())
        action.update(customization=entries[0] if entries else {"type": "directory", "id": "dir", "uri": "file:///e", "name": "E",
                                                                "enabled": False, "contents": "rule", "writable": True})
    elif kind == "customizationRemoved":
        action.update(id=_ids(draw, CUSTOMIZATION_IDS))
    elif kind == "mcpServerStateChanged":
        action.update(id=_ids(draw, CUSTOMIZATION_IDS), state=draw(st.sampled_from([{"kind": "ready"}, {"kind": "error", "message": "x"}])))
        action.update(_optional(draw, "channel", st.just("mcp://m")))
    elif kind in ("mcpServerStartRequested", "mcpServerStopRequested", "mcpServerBackgroundRequested"):
        action.update(id=_ids(draw, CUSTOMIZATION_IDS))
    return action


@st.composite
def envelopes(draw, session: InternalSession) -> tuple[str, dict]:
    """An internal ``(channel, action)``: a chat action on a chat the session holds, or a session action."""
    if session.chats and draw(st.integers(0, 2)):
        return draw(st.sampled_from(sorted(session.chats))), draw(chat_actions())
    return session.uri, draw(session_actions(session))
