"""Reading the tool calls of the 0.2.0 session states a client mirrors or the host projects."""

from __future__ import annotations

from typing import Any


def answered_by(state: dict[str, Any], call_id: str) -> Any:
    """``answeredBy`` in the ``_meta`` of the call ``call_id`` among a 0.2.0 session's finished
    turns: who confirmed the call's result; ``None`` when no such call or no answer is recorded."""
    for turn in state.get("turns") or ():
        for part in turn.get("responseParts") or ():
            call = part.get("toolCall") if part.get("kind") == "toolCall" else None
            if call is not None and call["toolCallId"] == call_id:
                return (call.get("_meta") or {}).get("answeredBy")
    return None
