"""Session input requests: ``inputRequested``, ``inputAnswerChanged``, ``inputCompleted``.

Handlers take ``(state, action, now)`` and return the next session state.

Invariants:

* Requests are keyed by ``id``; ``inputRequested`` upserts and keeps existing answers unless the
  new request brings its own.
* ``inputRequests`` and a request's ``answers`` are absent rather than empty.
* All three bump ``modifiedAt``; requested/completed recompute ``summary.status`` (requested also
  clears IsRead), answer changes never touch status.
* An action naming an unknown request is a no-op.
"""

from __future__ import annotations

from typing import Any

from ahp.dialects.v0_2.state._js import as_dict, as_list, assign, payload
from ahp.dialects.v0_2.state.status import SessionStatus, recompute_status, with_flag

__all__ = ["on_input_answer_changed", "on_input_completed", "on_input_requested"]


def _index_of(requests: list[Any], request_id: object) -> int:
    for index, request in enumerate(requests):
        if as_dict(request).get("id") == request_id:
            return index
    return -1


def on_input_requested(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    request = payload(action, "request")
    if not isinstance(request, dict):
        return state
    requests = list(as_list(state.get("inputRequests")))
    index = _index_of(requests, request.get("id"))
    if index >= 0:
        answers = request.get("answers")
        if answers is None:
            answers = as_dict(requests[index]).get("answers")
        requests[index] = assign(request, answers=answers)
    else:
        requests.append(request)
    nxt = {**state, "inputRequests": requests}
    status = with_flag(recompute_status(nxt), SessionStatus.IsRead, False)
    nxt["summary"] = {**as_dict(state.get("summary")), "status": status, "modifiedAt": now}
    return nxt


def on_input_answer_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    requests = state.get("inputRequests")
    if not isinstance(requests, list):
        return state
    index = _index_of(requests, action.get("requestId"))
    if index < 0:
        return state
    request = as_dict(requests[index])
    answers = dict(as_dict(request.get("answers")))
    question_id = action.get("questionId")
    if not isinstance(question_id, str):
        return state  # answers are keyed by question id; anything else cannot address one
    answer = payload(action, "answer")
    if answer is None:
        answers.pop(question_id, None)
    else:
        answers[question_id] = answer
    updated = list(requests)
    updated[index] = assign(request, answers=answers or None)
    return {
        **state,
        "inputRequests": updated,
        "summary": {**as_dict(state.get("summary")), "modifiedAt": now},
    }


def on_input_completed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    requests = as_list(state.get("inputRequests"))
    request_id = action.get("requestId")
    if _index_of(requests, request_id) < 0:
        return state
    # The submitted `answers` travel to the host's waiting resumer, they are not stored.
    remaining = [request for request in requests if as_dict(request).get("id") != request_id]
    nxt = assign(state, inputRequests=remaining or None)
    status = recompute_status(nxt)
    nxt["summary"] = {**as_dict(state.get("summary")), "status": status, "modifiedAt": now}
    return nxt
