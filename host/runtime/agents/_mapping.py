"""One model call's neutral stream → AHP turn actions, token by token.

The mapper only maps: the assistant message the events build is the stream's to answer for
(``providers.ModelStream.message``), folded once by the provider that made the events.

``CallMapper.apply(event)`` dispatches at once:

* text part start → ``chat/responsePart`` (markdown, empty) and each delta → ``chat/delta``
  (a bare text delta, ``providers.ModelStream.bare``, through ``bare``: the part's appender made
  at its start, so a streamed text chunk builds its action and nothing else);
* reasoning part start → ``chat/responsePart`` (reasoning) and deltas → ``chat/reasoning``;
* tool-call part start → ``chat/toolCallStart`` (with the tool's ``contributor`` for client and
  MCP tools, and ``_meta.toolKind: "terminal"`` for a tool that runs commands, which VS Code shows
  as a terminal command and asks "Allow" / "Skip" for); deltas → ``chat/toolCallDelta`` (raw JSON).

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
from providers import Finish, PartDelta, PartEnd, PartStart, StreamEvent, Usage, UsageReport
from providers.accumulator import UnexpectedDeltaError

__all__ = ["CallMapper", "TurnToolIds", "tool_start_meta"]


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
        self._targets: dict[int, tuple[str, str]] = {}
        self.bare: Callable[[str], None] = self._no_text_part
        """Maps a bare text delta (``providers.ModelStream.bare``: a ``str`` for the text part
        started last): the appender (``TurnContext.appender``) of that part's ``chat/delta``."""

    def _no_text_part(self, content: str) -> None:
        raise UnexpectedDeltaError("a text delta came while no text part was open")

    def apply(self, event: StreamEvent) -> None:
        match event:  # deltas first: nearly every event is one
            case PartDelta():
                kind, target = self._targets[event.index]
                if kind == "tool_call":
                    self._ctx.emit(builders.chat_tool_call_delta(turn_id=self._ctx.turn_id, tool_call_id=target, content=event.content))
                elif event.content:
                    build = builders.chat_delta if kind == "text" else builders.chat_reasoning
                    self._ctx.emit(build(turn_id=self._ctx.turn_id, part_id=target, content=event.content))
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
        self.bare = self._no_text_part
        if event.part_kind == "tool_call":
            provider_id = event.tool_call_id or f"call-{event.index}"
            call_id = self._ids.assign(provider_id)
            self.tool_ids[provider_id] = call_id
            self._targets[event.index] = ("tool_call", call_id)
            name = event.tool_name or "tool"
            contributor, tool_name = self._owners.get(name) or (None, name)
            self._ctx.emit(builders.chat_tool_call_start(
                turn_id=self._ctx.turn_id, tool_call_id=call_id, tool_name=tool_name,
                display_name=self._display.get(name, name), contributor=contributor, meta=self._metas.get(name),
            ))
            return
        kind = "markdown" if event.part_kind == "text" else "reasoning"
        part_id = self._ctx.new_part_id(event.part_kind)
        self._targets[event.index] = (event.part_kind, part_id)
        self._ctx.emit(builders.chat_response_part(turn_id=self._ctx.turn_id, part={"kind": kind, "id": part_id, "content": ""}))
        if event.part_kind == "text":
            self.bare = self._ctx.appender("chat/delta", "partId", part_id)
