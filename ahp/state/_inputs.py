"""Chat input requests, which live in the active turn's response parts since 0.6.0.

Handlers take ``(state, action, now)`` and return the next chat state.

Invariants:

* A request is an ``{"kind": "inputRequest", "request": {...}}`` part; it is *open* until
  ``chat/inputCompleted`` records a ``response`` on it. Only open parts are addressed, by
  ``request.id``; with no active turn every input action is a no-op.
* ``chat/inputRequested`` upserts the open part (keeping drafted answers unless the new request
  brings its own), clears IsRead and recomputes status.
* ``chat/inputAnswerChanged`` sets or (absent answer) removes one answer; ``answers`` is absent
  rather than empty. It does not touch status.
* ``chat/inputCompleted`` merges the submitted answers, records ``response`` (the part stays in
  the turn as the durable outcome) and recomputes status.
* None of them touches ``modifiedAt`` [0.9.0].
"""

from __future__ import annotations

from typing import Any

from ahp.state._chat_status import chat_status
from ahp.state._js import as_dict, as_list, assign, payload, truthy
from ahp.state.status import SessionStatus, with_flag

__all__ = ["on_input_answer_changed", "on_input_completed", "on_input_requested"]


def _open_request(parts: list[Any], request_id: Any) -> int:
    for index, part in enumerate(parts):
        if (
            isinstance(part, dict)
            and part.get("kind") == "inputRequest"
            and "response" not in part
            and as_dict(part.get("request")).get("id") == request_id
        ):
            return index
    return -1


def _active(state: dict[str, Any]) -> dict[str, Any] | None:
    active = state.get("activeTurn")
    return active if truthy(active) and isinstance(active, dict) else None


def on_input_requested(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    active = _active(state)
    request = payload(action, "request")
    if active is None or not isinstance(request, dict):
        return state
    parts = list(as_list(active.get("responseParts")))
    index = _open_request(parts, request.get("id"))
    if index >= 0:
        answers = request.get("answers")
        if answers is None:
            answers = as_dict(parts[index].get("request")).get("answers")
        parts[index] = {"kind": "inputRequest", "request": assign(request, answers=answers)}
    else:
        parts.append({"kind": "inputRequest", "request": request})
    nxt = {**state, "activeTurn": {**active, "responseParts": parts}}
    nxt["status"] = with_flag(chat_status(nxt), SessionStatus.IsRead, False)
    return nxt


def on_input_answer_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    active = _active(state)
    question_id = action.get("questionId")
    if active is None or not isinstance(question_id, str):
        return state  # answers are keyed by question id; anything else cannot address one
    parts = as_list(active.get("responseParts"))
    index = _open_request(parts, action.get("requestId"))
    if index < 0:
        return state
    part = parts[index]
    request = as_dict(part.get("request"))
    answers = dict(as_dict(request.get("answers")))
    answer = payload(action, "answer")
    if answer is None:
        answers.pop(question_id, None)
    else:
        answers[question_id] = answer
    updated = list(parts)
    updated[index] = {**part, "request": assign(request, answers=answers or None)}
    return {**state, "activeTurn": {**active, "responseParts": updated}}


def on_input_completed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    active = _active(state)
    if active is None:
        return state
    parts = as_list(active.get("responseParts"))
    index = _open_request(parts, action.get("requestId"))
    if index < 0:
        return state
    part = parts[index]
    request = as_dict(part.get("request"))
    answers = {**as_dict(request.get("answers")), **as_dict(payload(action, "answers"))}
    completed = assign(
        {**part, "request": assign(request, answers=answers or None)}, response=payload(action, "response")
    )
    updated = list(parts)
    updated[index] = completed
    nxt = {**state, "activeTurn": {**active, "responseParts": updated}}
    nxt["status"] = chat_status(nxt)
    return nxt
