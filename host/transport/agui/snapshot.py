"""A chat's turns (the thread's session's default chat) as the AG-UI messages of its thread
(``MESSAGES_SNAPSHOT``). Pure.

A front end joining a thread (a run that brings no new user message, answers nothing and resumes
nothing) first gets the whole conversation, so it shows what AHP clients and earlier runs did.
Ids are chosen so the snapshot agrees with what the runs streamed, which the official client
needs: it keeps a message whose id the snapshot has and drops one it does not.

* the turn's message → ``user``, id ``message._meta.agui.messageId`` (the front end's own id) or
  ``<turnId>:user`` for a message an AHP client sent;
* markdown part → ``assistant`` with the part id (the ``TEXT_MESSAGE_*`` id of the run);
* tool call → a ``toolCalls`` entry on the assistant message before it in the same turn (the
  run's ``parentMessageId``), or on an assistant message of its own with the call's id; a
  finished call is followed by its ``tool`` message ``<toolCallId>:result`` (the
  ``TOOL_CALL_RESULT`` id);
* reasoning, content references and notifications are left out (the client keeps the reasoning
  messages it has when a snapshot carries none).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ag_ui.core import AssistantMessage, FunctionCall, Message, ToolCall, ToolMessage, UserMessage

from ahp.tool_results import result_text

__all__ = ["thread_messages"]

_FINISHED = ("completed", "cancelled")


def thread_messages(state: Mapping[str, Any]) -> list[Message]:
    turns = list(state.get("turns") or ())
    if isinstance(state.get("activeTurn"), dict):
        turns.append(state["activeTurn"])
    messages: list[Message] = []
    for turn in turns:
        messages += _turn_messages(turn)
    return messages


def _turn_messages(turn: Mapping[str, Any]) -> list[Message]:
    user = turn.get("message") or {}
    agui_id = ((user.get("_meta") or {}).get("agui") or {}).get("messageId")
    messages: list[Message] = [UserMessage(id=agui_id if isinstance(agui_id, str) else f"{turn['id']}:user",
                                           content=str(user.get("text") or ""))]
    last_assistant: AssistantMessage | None = None
    for part in turn.get("responseParts") or ():
        kind = part.get("kind")
        if kind == "markdown":
            last_assistant = AssistantMessage(id=part["id"], content=part.get("content") or "")
            messages.append(last_assistant)
        elif kind == "toolCall":
            call = part["toolCall"]
            entry = ToolCall(id=call["toolCallId"], function=FunctionCall(name=call.get("toolName") or "tool",
                                                                         arguments=call.get("toolInput") or ""))
            if last_assistant is None:
                last_assistant = AssistantMessage(id=call["toolCallId"], tool_calls=[])
                messages.append(last_assistant)
            last_assistant.tool_calls = [*(last_assistant.tool_calls or []), entry]
            if call.get("status") in _FINISHED:
                messages.append(ToolMessage(id=f"{call['toolCallId']}:result", tool_call_id=call["toolCallId"],
                                            content=result_text(call) or _cancelled_text(call)))
    return messages


def _cancelled_text(call: Mapping[str, Any]) -> str:
    if call.get("status") == "cancelled":
        reason = call.get("reasonMessage")
        return reason if isinstance(reason, str) else "The tool call did not run."
    return ""
