"""The renamed and reshaped objects, one pair of functions each: ``*_down`` (internal 0.9.0 shape ->
AHP 0.2.0 shape) and ``*_up`` (0.2.0 -> internal). States and actions are built from these.

Renames (VERSIONS.md §3): ``Message`` -> ``UserMessage`` (no ``origin``, ``model``, ``agent``);
``Turn.message`` / ``PendingMessage.message`` -> ``userMessage``; ``ToolCallBase.contributor``
``{kind:"client", clientId}`` -> ``toolClientId`` (an MCP contributor has no 0.2.0 form);
``Changeset`` -> ``ChangesetSummary``; terminal ``lifecycle`` -> ``exitCode``; session lifecycle
``failed`` -> ``creationFailed``; a terminal claimed by a session names its chat in 0.9.0.

Contract:

* Every ``*_down(*_up(x)) == x`` for the 0.2.0 shape ``x`` (``up`` is a right inverse of ``down``);
  keys a function does not know pass through untouched, in both directions.
* Objects the 0.2.0 reducers build from scratch (turns, the active turn) keep only the keys those
  reducers write, so a projected state equals what a 0.2.0 replica computes from projected actions.
* Nothing raises on malformed input: a value of the wrong type passes through as it is.
* Inputs are never mutated.
"""

from __future__ import annotations

import re
from typing import Any

from ahp.dialects.v0_2.timestamps import iso_to_ms, ms_to_iso
from ahp.dialects.v0_2.uris import default_chat_uri, session_of_default_chat, subagent_session_uri, v02_session_uri

__all__ = [
    "HIDDEN_PART_KINDS",
    "USER_ORIGIN",
    "active_client_down",
    "agents_down",
    "agents_up",
    "changeset_status_down",
    "client_down",
    "client_up",
    "customization_down",
    "customization_up",
    "customizations_down",
    "customizations_up",
    "enabled_of",
    "exit_code_of_lifecycle",
    "iso_or_epoch",
    "ms_or_zero",
    "session_decision",
    "active_turn_down",
    "changeset_down",
    "changeset_up",
    "changesets_down",
    "changesets_up",
    "claim_down",
    "claim_up",
    "content_down",
    "contributor_to_tool_client_id",
    "error_of_parts",
    "lifecycle_down",
    "lifecycle_up",
    "message_up",
    "open_input_requests",
    "part_down",
    "part_up",
    "parts_down",
    "pending_message_down",
    "pending_message_up",
    "terminal_info_down",
    "terminal_info_up",
    "terminal_lifecycle_up",
    "tool_call_down",
    "tool_call_up",
    "turn_down",
    "turn_up",
    "user_message_down",
]

USER_ORIGIN = {"kind": "user"}
"""The origin of every message a 0.2.0 client writes (0.2.0 has no other kind)."""

HIDDEN_PART_KINDS = frozenset({"inputRequest", "error"})
"""Response parts 0.2.0 never shows: input requests are ``inputRequests`` in 0.2.0, a turn's final
error is ``Turn.error``."""

_MESSAGE_ONLY = ("origin", "model", "agent")
_TOOL_CALL_ONLY = ("intention", "contributor", "riskAssessment", "auth")


def _without(mapping: dict[str, Any], keys: tuple[str, ...] | frozenset[str]) -> dict[str, Any]:
    return {key: value for key, value in mapping.items() if key not in keys}


# --- messages -------------------------------------------------------------------------------------


def user_message_down(message: Any) -> Any:
    """``Message`` -> ``UserMessage``: origin, model and agent have no 0.2.0 place."""
    return _without(message, _MESSAGE_ONLY) if isinstance(message, dict) else message


def message_up(user_message: Any, *, model: Any = None, agent: Any = None) -> Any:
    """``UserMessage`` -> ``Message`` from the user, sent with ``model``/``agent`` when given."""
    if not isinstance(user_message, dict):
        return user_message
    message = {**user_message, "origin": dict(USER_ORIGIN)}
    if model is not None:
        message["model"] = model
    if agent is not None:
        message["agent"] = agent
    return message


def pending_message_down(pending: Any) -> Any:
    """``PendingMessage{id, message}`` -> ``{id, userMessage}``."""
    if not isinstance(pending, dict):
        return pending
    out = _without(pending, ("message",))
    if "message" in pending:
        out["userMessage"] = user_message_down(pending["message"])
    return out


def pending_message_up(pending: Any) -> Any:
    """``{id, userMessage}`` -> ``PendingMessage{id, message}``."""
    if not isinstance(pending, dict):
        return pending
    out = _without(pending, ("userMessage",))
    if "userMessage" in pending:
        out["message"] = message_up(pending["userMessage"])
    return out


# --- tool calls and response parts ----------------------------------------------------------------


def contributor_to_tool_client_id(contributor: Any) -> Any:
    """The 0.2.0 ``toolClientId`` of a contributor: the client's id, ``None`` for MCP or none."""
    if isinstance(contributor, dict) and contributor.get("kind") == "client" and "clientId" in contributor:
        return contributor["clientId"]
    return None


def content_down(blocks: Any) -> Any:
    """Tool content as 0.2.0 shows it: a sub-agent block names the worker chat in 0.9.0
    (``ToolResultSubagentContent.resource``) and a session in 0.2.0: the projected session of a
    sub-agent's chat (``ahp-session:/<id>/subagent/<call>``), or the session whose default chat
    the block names (``ahp-session:/<id>``)."""
    if not isinstance(blocks, list) or not any(isinstance(b, dict) and b.get("type") == "subagent" for b in blocks):
        return blocks
    out = []
    for block in blocks:
        resource = block.get("resource") if isinstance(block, dict) and block.get("type") == "subagent" else None
        session = subagent_session_uri(resource) or session_of_default_chat(resource)
        name = v02_session_uri(session) if session is not None else None
        out.append({**block, "resource": name} if name is not None else block)
    return out


def tool_call_down(call: Any) -> Any:
    """A 0.9.0 tool call as 0.2.0 shows it.

    ``intention``, ``riskAssessment`` and ``auth`` are dropped; ``contributor`` becomes
    ``toolClientId`` for a client. ``auth-required`` (waiting for MCP authentication, 0.6.0) has no
    0.2.0 status: it shows as the ``running`` call it was and will be again.
    """
    if not isinstance(call, dict):
        return call
    out = _without(call, _TOOL_CALL_ONLY)
    client_id = contributor_to_tool_client_id(call.get("contributor"))
    if client_id is not None:
        out["toolClientId"] = client_id
    if out.get("status") == "auth-required":
        out["status"] = "running"
    if "userSuggestion" in out:
        out["userSuggestion"] = user_message_down(out["userSuggestion"])
    if "content" in out:
        out["content"] = content_down(out["content"])
    return out


def tool_call_up(call: Any) -> Any:
    """A 0.2.0 tool call in the internal model: ``toolClientId`` becomes a client contributor, a
    denial's ``userSuggestion`` a message from the user."""
    if not isinstance(call, dict) or ("toolClientId" not in call and "userSuggestion" not in call):
        return call
    out = _without(call, ("toolClientId",))
    if "toolClientId" in call:
        out["contributor"] = {"kind": "client", "clientId": call["toolClientId"]}
    if "userSuggestion" in call:
        out["userSuggestion"] = message_up(call["userSuggestion"])
    return out


def part_down(part: Any) -> Any:
    """One response part as 0.2.0 shows it (tool calls renamed, every other kind as it is)."""
    if isinstance(part, dict) and part.get("kind") == "toolCall" and isinstance(part.get("toolCall"), dict):
        return {**part, "toolCall": tool_call_down(part["toolCall"])}
    return part


def part_up(part: Any) -> Any:
    if isinstance(part, dict) and part.get("kind") == "toolCall" and isinstance(part.get("toolCall"), dict):
        return {**part, "toolCall": tool_call_up(part["toolCall"])}
    return part


def _hidden(part: Any) -> bool:
    return isinstance(part, dict) and part.get("kind") in HIDDEN_PART_KINDS


def parts_down(parts: Any) -> Any:
    """A response-part list without the parts 0.2.0 does not show (``HIDDEN_PART_KINDS``)."""
    if not isinstance(parts, list):
        return parts
    return [part_down(part) for part in parts if not _hidden(part)]


def error_of_parts(parts: Any) -> Any:
    """The error a turn ended with: the ``error`` of its last part if that is an error part."""
    if isinstance(parts, list) and parts and isinstance(parts[-1], dict) and parts[-1].get("kind") == "error":
        return parts[-1].get("error")
    return None


def open_input_requests(active_turn: Any) -> list[Any]:
    """The input requests of an active turn still waiting for an answer, in order: 0.2.0's
    ``inputRequests`` (0.9.0 keeps them, and the answered ones, as parts of the turn)."""
    if not isinstance(active_turn, dict) or not isinstance(active_turn.get("responseParts"), list):
        return []
    return [
        part.get("request")
        for part in active_turn["responseParts"]
        if isinstance(part, dict) and part.get("kind") == "inputRequest" and part.get("response") is None
    ]


# --- turns ----------------------------------------------------------------------------------------


def turn_down(turn: Any) -> Any:
    """A finished ``Turn`` as the 0.2.0 reducers build it: ``{id, userMessage, responseParts, usage?,
    state, error?}``. The error is the turn's final error part (0.9.0) or its ``error`` field (0.7.0)."""
    if not isinstance(turn, dict):
        return turn
    parts = turn.get("responseParts")
    error = error_of_parts(parts)
    if error is None:
        error = turn.get("error")
    out: dict[str, Any] = {}
    for key in ("id",):
        if key in turn:
            out[key] = turn[key]
    if "message" in turn:
        out["userMessage"] = user_message_down(turn["message"])
    if "responseParts" in turn:
        out["responseParts"] = parts_down(parts)
    for key in ("usage", "state"):
        if turn.get(key) is not None:
            out[key] = turn[key]
    if error is not None:
        out["error"] = error
    return out


def turn_up(turn: Any) -> Any:
    """A 0.2.0 ``Turn`` in the internal model; its ``error`` becomes a final error part."""
    if not isinstance(turn, dict):
        return turn
    out = _without(turn, ("userMessage", "error"))
    if "userMessage" in turn:
        out["message"] = message_up(turn["userMessage"])
    parts = turn.get("responseParts")
    if isinstance(parts, list):
        out["responseParts"] = [part_up(part) for part in parts]
        if turn.get("error") is not None:
            out["responseParts"].append({"kind": "error", "error": turn["error"]})
    return out


def active_turn_down(active: Any) -> Any:
    """An ``ActiveTurn`` as the 0.2.0 reducers build it: ``{id, userMessage, responseParts, usage?}``."""
    if not isinstance(active, dict):
        return active
    out: dict[str, Any] = {}
    if "id" in active:
        out["id"] = active["id"]
    if "message" in active:
        out["userMessage"] = user_message_down(active["message"])
    if "responseParts" in active:
        out["responseParts"] = parts_down(active["responseParts"])
    if active.get("usage") is not None:
        out["usage"] = active["usage"]
    return out


# --- session catalogue entries --------------------------------------------------------------------


def active_client_down(active_clients: Any) -> Any:
    """0.2.0's one ``activeClient``: the last of ``activeClients`` (the one that joined or re-joined
    last), with its plugins' decisions as ``enabled`` flags; ``None`` when there is none."""
    if isinstance(active_clients, list) and active_clients:
        return client_down(active_clients[-1])
    return None


def client_down(client: Any) -> Any:
    """One ``SessionActiveClient`` as 0.2.0 shows it (its published plugins renamed)."""
    if isinstance(client, dict) and isinstance(client.get("customizations"), list):
        return {**client, "customizations": customizations_down(client["customizations"])}
    return client


def client_up(client: Any) -> Any:
    if isinstance(client, dict) and isinstance(client.get("customizations"), list):
        return {**client, "customizations": customizations_up(client["customizations"])}
    return client


def changeset_down(changeset: Any) -> Any:
    """``Changeset`` -> ``ChangesetSummary``: ``changeKind`` and ``capabilities`` are 0.9.0's."""
    return _without(changeset, ("changeKind", "capabilities")) if isinstance(changeset, dict) else changeset


_TEMPLATE_VARIABLE = re.compile(r"\{([^}]*)\}")


def changeset_up(summary: Any) -> Any:
    """``ChangesetSummary`` -> ``Changeset``; ``changeKind`` (required in 0.9.0) is read off the
    template's variables as the 0.9.0 schema describes them. The 0.2.0 counts (``additions``,
    ``deletions``, ``files``) stay on the entry: 0.9.0 clients ignore them."""
    if not isinstance(summary, dict):
        return summary
    template = summary.get("uriTemplate")
    variables = set(_TEMPLATE_VARIABLE.findall(template)) if isinstance(template, str) else set()
    if {"originalTurnId", "modifiedTurnId"} <= variables:
        kind = "compare-turns"
    elif "turnId" in variables:
        kind = "turn"
    else:
        kind = "session"
    return {**summary, "changeKind": kind}


def changesets_down(changesets: Any) -> Any:
    return [changeset_down(entry) for entry in changesets] if isinstance(changesets, list) else changesets


def changesets_up(changesets: Any) -> Any:
    return [changeset_up(entry) for entry in changesets] if isinstance(changesets, list) else changesets


def lifecycle_down(lifecycle: Any) -> Any:
    return "creationFailed" if lifecycle == "failed" else lifecycle


def lifecycle_up(lifecycle: Any) -> Any:
    return "failed" if lifecycle == "creationFailed" else lifecycle


# --- terminals ------------------------------------------------------------------------------------


def claim_down(claim: Any, v02_session_of: Any) -> Any:
    """A terminal claim as 0.2.0 shows it: a session claim names the 0.2.0 session, not the chat.

    ``v02_session_of(internal_uri)`` maps session URIs down (``uris.v02_session_uri``). A session
    claim without a ``chat`` is not a 0.9.0 claim but a 0.2.0 one whose session the host could not
    resolve (``claim_up``): it passes through as it is."""
    if not isinstance(claim, dict) or claim.get("kind") != "session" or "chat" not in claim:
        return claim
    out = _without(claim, ("chat",))
    if isinstance(claim.get("session"), str):
        name = v02_session_of(claim["session"])
        if name is not None:
            out["session"] = name
    return out


def claim_up(claim: Any, internal_session_of: Any) -> Any:
    """A 0.2.0 terminal claim in the internal model: a session claim names the internal session and
    its default chat (0.9.0 requires the owning chat). ``internal_session_of(v02_uri)`` maps up and
    returns ``None`` for a session the host does not know; the claim then keeps the 0.2.0 name."""
    if not isinstance(claim, dict) or claim.get("kind") != "session" or not isinstance(claim.get("session"), str):
        return claim
    internal = internal_session_of(claim["session"])
    if internal is None:
        return claim
    return {**claim, "session": internal, "chat": default_chat_uri(internal)}


def terminal_lifecycle_up(exit_code: Any) -> dict[str, Any]:
    """0.2.0's optional ``exitCode`` as a 0.9.0 lifecycle: present means exited with that code,
    absent means running (0.2.0 cannot tell "running" from "exited without a code")."""
    if exit_code is None:
        return {"status": "running"}
    return {"status": "exited", "exitCode": exit_code}


def _exit_code_of(lifecycle: Any) -> Any:
    if isinstance(lifecycle, dict) and lifecycle.get("status") == "exited":
        return lifecycle.get("exitCode")
    return None


def terminal_info_down(info: Any, v02_session_of: Any) -> Any:
    """``TerminalInfo{resource, title, claim, lifecycle}`` -> ``{resource, title, claim, exitCode?}``."""
    if not isinstance(info, dict):
        return info
    out = _without(info, ("lifecycle",))
    if "claim" in info:
        out["claim"] = claim_down(info["claim"], v02_session_of)
    exit_code = _exit_code_of(info.get("lifecycle"))
    if exit_code is not None:
        out["exitCode"] = exit_code
    return out


def terminal_info_up(info: Any, internal_session_of: Any) -> Any:
    if not isinstance(info, dict):
        return info
    out = _without(info, ("exitCode",))
    if "claim" in info:
        out["claim"] = claim_up(info["claim"], internal_session_of)
    out["lifecycle"] = terminal_lifecycle_up(info.get("exitCode"))
    return out


def exit_code_of_lifecycle(lifecycle: Any) -> Any:
    """The 0.2.0 ``exitCode`` a terminal lifecycle shows (``None``: no exit code)."""
    return _exit_code_of(lifecycle)


def iso_or_epoch(ms: Any) -> str:
    """``ms_to_iso`` of a 0.2.0 time stamp; the epoch for a value that is not a finite number."""
    try:
        return ms_to_iso(ms)
    except ValueError:
        return ms_to_iso(0)


def ms_or_zero(iso: Any) -> int | float:
    """``iso_to_ms`` of an internal time stamp; 0 (the epoch) for one that cannot be read."""
    ms = iso_to_ms(iso)
    return 0 if ms is None else ms


# --- customizations -------------------------------------------------------------------------------

KEEPS_DECISIONS = frozenset({"plugin", "mcpServer"})
"""Customization types that hold a list of ``enablement`` decisions instead of an ``enabled`` flag
since 0.8.0 (the others keep ``enabled``)."""


def enabled_of(enablement: Any) -> Any:
    """The effective ``enabled`` of a decision list: the first (most specific) decision's, else
    ``True`` (no explicit decision: enabled by default)."""
    if isinstance(enablement, list) and enablement and isinstance(enablement[0], dict):
        value = enablement[0].get("enabled")
        return True if value is None else value
    return True


def customization_down(entry: Any) -> Any:
    """A customization as 0.2.0 shows it: a plugin's or MCP server's ``enablement`` decisions as the
    ``enabled`` flag they add up to; children likewise. An entry that still carries ``enabled``
    (lifted from 0.2.0 without a usable flag) keeps it."""
    if not isinstance(entry, dict):
        return entry
    out = entry
    if entry.get("type") in KEEPS_DECISIONS and "enabled" not in entry:
        out = {key: value for key, value in entry.items() if key != "enablement"}
        out["enabled"] = enabled_of(entry.get("enablement"))
    children = entry.get("children")
    if isinstance(children, list):
        out = {**out, "children": [customization_down(child) for child in children]}
    return out


def session_decision(enabled: Any, enablement: Any = None) -> list[Any]:
    """A decision list whose effective value is ``enabled``: a session-scope decision ahead of the
    decisions of other scopes already in ``enablement`` (0.2.0 toggles are per session)."""
    others = [d for d in enablement if not (isinstance(d, dict) and d.get("kind") == "session")] if isinstance(enablement, list) else []
    return [{"kind": "session", "enabled": enabled}, *others]


def customization_up(entry: Any) -> Any:
    """A 0.2.0 customization in the internal model: a plugin's or MCP server's boolean ``enabled``
    becomes a session-scope decision; children likewise."""
    if not isinstance(entry, dict):
        return entry
    out = entry
    if entry.get("type") in KEEPS_DECISIONS and isinstance(entry.get("enabled"), bool):
        out = {key: value for key, value in entry.items() if key != "enabled"}
        out["enablement"] = session_decision(entry["enabled"])
    children = entry.get("children")
    if isinstance(children, list):
        out = {**out, "children": [customization_up(child) for child in children]}
    return out


def customizations_down(entries: Any) -> Any:
    return [customization_down(entry) for entry in entries] if isinstance(entries, list) else entries


def customizations_up(entries: Any) -> Any:
    return [customization_up(entry) for entry in entries] if isinstance(entries, list) else entries


def agents_down(agents: Any) -> Any:
    """``AgentInfo`` list with each agent's customizations as 0.2.0 shows them."""
    if not isinstance(agents, list):
        return agents
    return [
        {**agent, "customizations": customizations_down(agent["customizations"])}
        if isinstance(agent, dict) and isinstance(agent.get("customizations"), list) else agent
        for agent in agents
    ]


def agents_up(agents: Any) -> Any:
    if not isinstance(agents, list):
        return agents
    return [
        {**agent, "customizations": customizations_up(agent["customizations"])}
        if isinstance(agent, dict) and isinstance(agent.get("customizations"), list) else agent
        for agent in agents
    ]


def changeset_status_down(status: Any) -> Any:
    """``recomputing`` (a 1.0.0-schema changeset status) is ``computing`` to 0.2.0."""
    return "computing" if status == "recomputing" else status
