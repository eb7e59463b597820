"""What a chat's state says about other chats, read the way the model writes it (0.9.0 and later).

Pure functions of a mirrored ``ChatState``; no I/O.

* ``subagent_chats(state)``: the worker chats its tool calls spawned (sub-agents), one per
  ``ToolResultSubagentContent`` block (``{"type": "subagent", "resource": <chat URI>, "title"}``)
  in a call's content, running or finished, in the order the turns and calls came. A chat may be
  subscribed to like any other; a worker chat is read-only (its host runs it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["SubagentChat", "subagent_chats"]


@dataclass(frozen=True)
class SubagentChat:
    """A worker chat a tool call opened."""

    resource: str
    """The worker chat's URI, to subscribe to."""
    title: str
    """Its display title."""
    turn_id: str
    """The turn of the spawning call."""
    tool_call_id: str
    """The spawning tool call."""


def subagent_chats(state: dict[str, Any] | None) -> list[SubagentChat]:
    """Every sub-agent chat the tool calls of ``state`` (a chat's state) name, oldest first."""
    state = state or {}
    turns = [*(state.get("turns") or ()), *([state["activeTurn"]] if isinstance(state.get("activeTurn"), dict) else [])]
    found: list[SubagentChat] = []
    for turn in turns:
        if not isinstance(turn, dict):
            continue
        for part in turn.get("responseParts") or ():
            call = part.get("toolCall") if isinstance(part, dict) and part.get("kind") == "toolCall" else None
            if not isinstance(call, dict):
                continue
            blocks = [*(call.get("content") or ()), *((call.get("result") or {}).get("content") or ())]
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "subagent" and isinstance(block.get("resource"), str):
                    entry = SubagentChat(block["resource"], str(block.get("title") or ""), str(turn.get("id")),
                                         str(call.get("toolCallId")))
                    if entry not in found:
                        found.append(entry)
    return found
