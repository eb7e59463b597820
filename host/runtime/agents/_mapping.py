"""One model call's neutral stream → AHP turn actions, token by token.

The mapper only maps: the assistant message the events build is the stream's to answer for
(``providers.ModelStream.message``), folded once by the provider that made the events.

``CallMapper.apply(event)`` dispatches at once:

* text part start → ``chat/responsePart`` (markdown, empty) and each delta → ``chat/delta``;
* reasoning part start → ``chat/responsePart`` (reasoning) and deltas → ``chat/reasoning``;
* tool-call part start → ``chat/toolCallStart`` (with the tool's ``contributor`` for client and
  MCP tools, and ``_meta.toolKind: "terminal"`` for a tool that runs commands, which VS Code shows
  as a terminal command and asks "Allow" / "Skip" for); deltas → ``chat/toolCallDelta`` (raw JSON).

A part's deltas are appended by the appender (``TurnContext.appender``) made at its start from
``APPENDS``, the one table of which action a delta of each kind of part becomes: a ``PartDelta``
through ``apply``, and a bare delta (``providers.ModelStream.bare``: a ``str`` for the part started
last, of any kind) through ``bare``, which is that part's appender itself, so a streamed chunk of
text, reasoning or tool arguments builds its action and nothing else.

Invariants: response part ids are ``<turn>:text-N`` / ``<turn>:reasoning-N`` (unique in the turn,
never equal to a tool-call id); AHP tool-call ids are the provider's ids made unique within the
turn (a second call reusing an id gets a ``#n`` suffix), while the neutral message keeps the
provider's own id, which is what the model must be answered with. ``streamed`` becomes true at
the first part: from then on a failed call must not be retried (the user already saw output).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ahp.protocol import builders
from host.runtime.agents.base import TurnContext
from providers import Finish, PartDelta, PartEnd, PartKind, PartStart, StreamEvent, Usage, UsageReport
from providers.accumulator import UnexpectedDeltaError

__all__ = ["APPENDS", "CallMapper", "TurnToolIds", "tool_start_meta"]

APPENDS: dict[PartKind, tuple[str, str]] = {
    "text": ("chat/delta", "partId"),
    "reasoning": ("chat/reasoning", "partId"),
    "tool_call": ("chat/toolCallDelta", "toolCallId"),
}
"""A part's kind → the action its streamed content is appended with, and the field naming its target
(as ``ahp.protocol.builders`` makes ``chat/delta``, ``chat/reasoning`` and ``chat/toolCallDelta``)."""


def tool_start_meta(tool: Any) -> dict[str, Any] | None:
    """The ``_meta`` of a tool's ``chat/toolCallStart``: its kind for clients that paint by kind."""
    return {"toolKind": "terminal"} if getattr(tool, "subject_kind", None) == "command" else None


@dataclass
class TurnToolIds:
    """Keeps AHP tool-call ids unique across the model calls of one turn."""

    used: set[str] = field(default_factory=set)

    def assign(self, provider_id: str) -> str:
        candidate, n = provider_id, 1
        while candidate in self.used:
            n += 1
            candidate = f"{provider_id}#{n}"
        self.used.add(candidate)
        return candidate


class CallMapper:
    def __init__(
        self, ctx: TurnContext, ids: TurnToolIds, display_names: dict[str, str],
        owners: dict[str, tuple[dict[str, Any], str]] | None = None, metas: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self._ctx = ctx
        self._ids = ids
        self._display = display_names
        self._owners = owners or {}
        """Offered name → (``ToolCallContributor``, the tool's name on the wire) for client and MCP tools."""
        self._metas = metas or {}
        """Offered name → the ``_meta`` its ``chat/toolCallStart`` carries (``tool_start_meta``)."""
        self.streamed = False
        self.usage = Usage()
        """The call's latest cumulative usage."""
        self.finish: Finish | None = None
        self.tool_ids: dict[str, str] = {}
        """Provider tool-call id → AHP tool-call id."""
        self._appends: dict[int, Callable[[str], None]] = {}
        """Part index → the appender of its deltas (``APPENDS``)."""
        self.bare: Callable[[str], None] = self._no_part
        """Maps a bare delta (``providers.ModelStream.bare``: a ``str`` for the part started last):
        that part's appender."""

    def _no_part(self, content: str) -> None:
        raise UnexpectedDeltaError("a delta came before any part started")

    def apply(self, event: StreamEvent) -> None:
        match event:  # deltas first: nearly every event is one
            case PartDelta():
                append = self._appends[event.index]
                if event.content or event.part_kind == "tool_call":  # (an empty text is no change to show)
                    append(event.content)
            case PartStart():
                self.streamed = True
                self._start(event)
            case PartEnd():
                pass  # tool arguments are final here; the loop approves calls after the stream
            case UsageReport():
                self.usage = event.usage
            case Finish():
                self.finish = event

    def _start(self, event: PartStart) -> None:
        if event.part_kind == "tool_call":
            provider_id = event.tool_call_id or f"call-{event.index}"
            call_id = self._ids.assign(provider_id)
            self.tool_ids[provider_id] = call_id
            self._appended(event, call_id)
            name = event.tool_name or "tool"
            contributor, tool_name = self._owners.get(name) or (None, name)
            self._ctx.emit(builders.chat_tool_call_start(
                turn_id=self._ctx.turn_id, tool_call_id=call_id, tool_name=tool_name,
                display_name=self._display.get(name, name), contributor=contributor, meta=self._metas.get(name),
            ))
            return
        kind = "markdown" if event.part_kind == "text" else "reasoning"
        part_id = self._ctx.new_part_id(event.part_kind)
        self._appended(event, part_id)
        self._ctx.emit(builders.chat_response_part(turn_id=self._ctx.turn_id, part={"kind": kind, "id": part_id, "content": ""}))

    def _appended(self, event: PartStart, target: str) -> None:
        """Make the appender of the deltas of the part ``event`` starts, whose target is ``target``:
        the one its ``PartDelta`` events and bare deltas go through (``APPENDS``)."""
        action_type, target_field = APPENDS[event.part_kind]
        self._appends[event.index] = self.bare = self._ctx.appender(action_type, target_field, target)
