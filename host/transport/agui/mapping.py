"""Pure translation of one AHP turn, action by action, into the AG-UI events of one run.

``RunTranslator(thread_id, run_id, turn_id, client_id)`` is fed every accepted action of the
thread's chat (``chat/*``, internal model AHP 0.9.0, with the chat state *after* it) through ``feed(action, state)`` and returns the AG-UI
events that action means. It does no I/O, keeps no clock and dispatches nothing; the endpoint
(``host.transport.agui.runs``) decides what to dispatch and writes what this returns.

The mapping:

* ``responsePart`` markdown → ``TEXT_MESSAGE_START`` (role assistant), ``delta`` →
  ``TEXT_MESSAGE_CONTENT``; reasoning parts → ``REASONING_START`` + ``REASONING_MESSAGE_START``,
  ``reasoning`` → ``REASONING_MESSAGE_CONTENT``. A part is closed (``*_END``) when the next part or
  tool call starts, or when the run ends. The AG-UI message id is the AHP part id.
* ``toolCallStart`` → ``TOOL_CALL_START``; ``toolCallDelta`` → ``TOOL_CALL_ARGS``;
  ``toolCallReady`` → ``TOOL_CALL_END`` (with the whole input as one ``TOOL_CALL_ARGS`` first if no
  delta carried it); a host tool's ``toolCallComplete`` → ``TOOL_CALL_RESULT``; a call cancelled
  or denied → ``TOOL_CALL_RESULT`` saying so.
* Calls owned by this run's client (``contributor`` ``{kind: "client", clientId: client_id}``, the
  front-end tools) get no
  result event: the front end runs them. When every unfinished call of the turn is one of ours
  and ``running``, the run is *suspended*: ``RUN_FINISHED`` with a success outcome naming the
  pending calls; the turn stays active and the next run answers them.
* When the turn waits for a person to confirm a call (``pending-confirmation``) or its result
  (``pending-result-confirmation``) and nothing else is running, the run ends with
  ``RUN_FINISHED`` whose outcome is ``interrupt`` (``host.transport.agui.interrupts``); the turn stays
  active and the run whose ``resume`` answers the interrupts continues it. An open question for
  the user (``inputRequest``: ``ask_user``, MCP elicitation) ends the run the same way, with its
  own interrupt, even while server tools run: the call that asked is one of them, and nothing
  the turn does can finish before the answer comes. So does a confirmation or a question open in
  another chat of the session (a sub-agent's, which its running ``task`` call waits on), told to
  the translator with ``note_elsewhere``.
* ``usage`` is remembered (minus what the turn had used before this run began) and reported as
  ``RUN_FINISHED.usage``; ``turnComplete`` → ``RUN_FINISHED``; ``turnCancelled`` → ``RUN_FINISHED``
  with a cancelled outcome; ``error`` → ``RUN_ERROR`` with the message and type of its error
  part's ErrorInfo.

Invariants: actions of other turns are ignored; every START gets exactly one END before the run's
terminal event; after the terminal event ``done`` is true and ``feed`` returns nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    BaseEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from ahp.tool_results import result_text
from host.transport.agui.interrupts import Elsewhere, elsewhere_interrupts, interrupts, open_inputs

__all__ = ["RunTranslator", "token_usage"]

_UNFINISHED = frozenset({"streaming", "pending-confirmation", "running", "pending-result-confirmation"})


@dataclass
class _ToolCall:
    name: str
    args_sent: bool = False
    ended: bool = False
    answered: bool = False


@dataclass
class RunTranslator:
    thread_id: str
    run_id: str
    turn_id: str
    client_id: str
    usage_before: dict[str, Any] | None = None
    """The turn's usage when this run began (a resumed run reports only its own calls)."""
    done: bool = False
    suspended_on: list[str] = field(default_factory=list)
    """The front-end tool calls this run ended waiting for (empty unless it suspended)."""
    interrupted: list[str] = field(default_factory=list)
    """The interrupts (confirmations) this run ended with, if it ended waiting for a person."""
    _open: tuple[str, str] | None = None  # ("text" | "reasoning", message id)
    _calls: dict[str, _ToolCall] = field(default_factory=dict)
    _usage: dict[str, Any] | None = None
    _last_text_id: str | None = None
    _elsewhere: dict[str, Elsewhere] = field(default_factory=dict)
    """What the session's other chats (sub-agents) wait on, by interrupt id (``note_session``)."""
    _last_state: dict[str, Any] | None = None
    """The chat as the last action with a state left it."""

    # -- feeding ---------------------------------------------------------------------------------

    def feed(self, action: dict[str, Any], state: dict[str, Any] | None) -> list[BaseEvent]:
        """The events ``action`` means for this run; ``state`` is the chat after it, or ``None``
        for a streamed token (``host.state.channels.STREAMED``: it changes no tool call's status, so the
        run cannot become suspended by it and its handler reads only the action)."""
        if self.done:
            return []
        if "turnId" not in action:
            # A chat-wide action (``inputRequested`` carries no turn id): it may leave this run's
            # turn waiting for a person; ``_maybe_suspend`` checks that it is this run's turn.
            return self._maybe_suspend(state) if state is not None else []
        if action.get("turnId") != self.turn_id:
            return []
        handler = _HANDLERS.get(action.get("type", ""))
        events = handler(self, action, state or {}) if handler is not None else []
        if not self.done and state is not None:
            events += self._maybe_suspend(state)
        return events

    # -- parts -----------------------------------------------------------------------------------

    def _close_open(self) -> list[BaseEvent]:
        if self._open is None:
            return []
        kind, message_id = self._open
        self._open = None
        if kind == "text":
            return [TextMessageEndEvent(message_id=message_id)]
        return [ReasoningMessageEndEvent(message_id=message_id), ReasoningEndEvent(message_id=message_id)]

    def _response_part(self, action: dict[str, Any], state: dict[str, Any]) -> list[BaseEvent]:
        part = action.get("part") or {}
        kind, message_id, content = part.get("kind"), part.get("id"), part.get("content")
        if kind not in ("markdown", "reasoning") or not isinstance(message_id, str):
            return []  # contentRef / systemNotification parts have no AG-UI counterpart
        events = self._close_open()
        if kind == "markdown":
            self._open = ("text", message_id)
            self._last_text_id = message_id
            events.append(TextMessageStartEvent(message_id=message_id, role="assistant"))
            if isinstance(content, str) and content:
                events.append(TextMessageContentEvent(message_id=message_id, delta=content))
        else:
            self._open = ("reasoning", message_id)
            events += [ReasoningStartEvent(message_id=message_id), ReasoningMessageStartEvent(message_id=message_id)]
            if isinstance(content, str) and content:
                events.append(ReasoningMessageContentEvent(message_id=message_id, delta=content))
        return events

    def _text(self, action: dict[str, Any], state: dict[str, Any]) -> list[BaseEvent]:
        content = action.get("content")
        wanted = "text" if action["type"] == "chat/delta" else "reasoning"
        if not isinstance(content, str) or not content or self._open != (wanted, action.get("partId")):
            return []
        message_id = action["partId"]
        if wanted == "text":
            return [TextMessageContentEvent(message_id=message_id, delta=content)]
        return [ReasoningMessageContentEvent(message_id=message_id, delta=content)]

    # -- tool calls ------------------------------------------------------------------------------

    def _tool_start(self, action: dict[str, Any], state: dict[str, Any]) -> list[BaseEvent]:
        call_id = action.get("toolCallId")
        if not isinstance(call_id, str) or call_id in self._calls:
            return []
        events = self._close_open()
        name = action.get("toolName") or "tool"
        self._calls[call_id] = _ToolCall(name)
        events.append(ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name, parent_message_id=self._last_text_id))
        return events

    def _tool_delta(self, action: dict[str, Any], state: dict[str, Any]) -> list[BaseEvent]:
        call = self._calls.get(action.get("toolCallId", ""))
        content = action.get("content")
        if call is None or call.ended or not isinstance(content, str) or not content:
            return []
        call.args_sent = True
        return [ToolCallArgsEvent(tool_call_id=action["toolCallId"], delta=content)]

    def _end_call(self, call_id: str, tool_input: Any) -> list[BaseEvent]:
        call = self._calls.get(call_id)
        if call is None or call.ended:
            return []
        events: list[BaseEvent] = []
        if not call.args_sent and isinstance(tool_input, str) and tool_input:
            events.append(ToolCallArgsEvent(tool_call_id=call_id, delta=tool_input))
            call.args_sent = True
        call.ended = True
        events.append(ToolCallEndEvent(tool_call_id=call_id))
        return events

    def _tool_ready(self, action: dict[str, Any], state: dict[str, Any]) -> list[BaseEvent]:
        return self._end_call(action.get("toolCallId", ""), action.get("toolInput"))

    def _tool_complete(self, action: dict[str, Any], state: dict[str, Any]) -> list[BaseEvent]:
        if _client_of(_find_call(state, action.get("toolCallId", "")) or {}) == self.client_id:
            return []  # the front end ran it and already holds the result
        if action.get("requiresResultConfirmation"):
            return []  # reported when a person accepts (or refuses) the result
        return self._result(action.get("toolCallId", ""), result_text(action.get("result") or {}))

    def _tool_confirmed(self, action: dict[str, Any], state: dict[str, Any]) -> list[BaseEvent]:
        if action.get("approved"):
            return []
        reason = action.get("reasonMessage") or "A person declined this tool call, so it did not run."
        return self._result(action.get("toolCallId", ""), reason)

    def _tool_result_confirmed(self, action: dict[str, Any], state: dict[str, Any]) -> list[BaseEvent]:
        call_id = action.get("toolCallId", "")
        if not action.get("approved"):
            return self._result(call_id, "A person rejected this tool's result; the model did not see it.")
        return self._result(call_id, result_text(_find_call(state, call_id) or {}))

    def _result(self, call_id: str, text: str) -> list[BaseEvent]:
        call = self._calls.get(call_id)
        if call is not None and call.answered:
            return []
        if call is None:
            call = self._calls[call_id] = _ToolCall("tool", args_sent=True, ended=True)
        events = self._end_call(call_id, None)
        call.answered = True
        events.append(ToolCallResultEvent(message_id=f"{call_id}:result", tool_call_id=call_id, content=text, role="tool"))
        return events

    # -- run end ---------------------------------------------------------------------------------

    def _usage_report(self, action: dict[str, Any], state: dict[str, Any]) -> list[BaseEvent]:
        usage = action.get("usage")
        if isinstance(usage, dict):
            self._usage = usage
        return []

    def _finish(self, outcome: Any = None) -> list[BaseEvent]:
        events = self._close_open()
        for call_id in list(self._calls):
            events += self._end_call(call_id, None)
        usage = token_usage(self._usage, self.usage_before)
        events.append(
            RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, outcome=outcome, usage=[usage] if usage else None)
        )
        self.done = True
        return events

    def _turn_complete(self, action: dict[str, Any], state: dict[str, Any]) -> list[BaseEvent]:
        return self._finish()

    def _turn_cancelled(self, action: dict[str, Any], state: dict[str, Any]) -> list[BaseEvent]:
        return self._finish(RunFinishedCancelledOutcome())

    def _error(self, action: dict[str, Any], state: dict[str, Any]) -> list[BaseEvent]:
        events = self._close_open()
        for call_id in list(self._calls):
            events += self._end_call(call_id, None)
        part = action.get("part")
        if not isinstance(part, dict):
            part = {}
        error = part.get("error")
        if not isinstance(error, dict):
            error = {}
        message = error.get("message") or "The turn failed without saying why; the host's log has details."
        usage = token_usage(self._usage, self.usage_before)
        events.append(RunErrorEvent(message=message, code=error.get("errorType"), usage=[usage] if usage else None))
        self.done = True
        return events

    def adopt_calls(self, call_ids: list[str]) -> None:
        """Calls an earlier run already streamed: this run reports their results, not their start."""
        for call_id in call_ids:
            self._calls.setdefault(call_id, _ToolCall("tool", args_sent=True, ended=True))

    def note_elsewhere(self, waiting: dict[str, Elsewhere]) -> list[BaseEvent]:
        """What the session's other chats (a sub-agent's) wait on now (``interrupts.elsewhere``):
        it ends the run with its interrupts once this turn waits only on people."""
        self._elsewhere = dict(waiting)
        if self.done or self._last_state is None:
            return []
        return self._maybe_suspend(self._last_state)

    def check(self, state: dict[str, Any]) -> list[BaseEvent]:
        """Events the chat's current state means on its own (a run joining a turn that
        already waits for a person ends at once with the interrupts)."""
        return [] if self.done else self._maybe_suspend(state)

    def _maybe_suspend(self, state: dict[str, Any]) -> list[BaseEvent]:
        """End the run once the turn waits only on people: this run's front-end tools (success
        with ``pendingToolCallIds``) or confirmations (the ``interrupt`` outcome)."""
        self._last_state = state
        turn = state.get("activeTurn")
        if not isinstance(turn, dict) or turn.get("id") != self.turn_id:
            return []
        ours: list[str] = []
        questions = bool(open_inputs(turn)) or bool(self._elsewhere)
        asking = questions
        for part in turn.get("responseParts") or ():
            call = part.get("toolCall") if isinstance(part, dict) and part.get("kind") == "toolCall" else None
            if not isinstance(call, dict) or call.get("status") not in _UNFINISHED:
                continue
            if call.get("status") in ("pending-confirmation", "pending-result-confirmation"):
                asking = True
            elif _client_of(call) == self.client_id and call.get("status") == "running":
                ours.append(call["toolCallId"])  # a call in state always has its id
            elif questions and call.get("status") == "running":
                continue  # the call asking the question (or one that runs beside it)
            else:
                return []  # something else is still going on: keep streaming
        if asking:
            waiting = interrupts(turn) + elsewhere_interrupts(self._elsewhere)
            self.interrupted = [item.id for item in waiting]
            return self._finish(RunFinishedInterruptOutcome(interrupts=waiting))
        if not ours or any(call_id not in self._calls for call_id in ours):
            return []
        self.suspended_on = ours
        return self._finish(RunFinishedSuccessOutcome(pending_tool_call_ids=ours))


_HANDLERS = {
    "chat/responsePart": RunTranslator._response_part,
    "chat/delta": RunTranslator._text,
    "chat/reasoning": RunTranslator._text,
    "chat/toolCallStart": RunTranslator._tool_start,
    "chat/toolCallDelta": RunTranslator._tool_delta,
    "chat/toolCallReady": RunTranslator._tool_ready,
    "chat/toolCallComplete": RunTranslator._tool_complete,
    "chat/toolCallConfirmed": RunTranslator._tool_confirmed,
    "chat/toolCallResultConfirmed": RunTranslator._tool_result_confirmed,
    "chat/usage": RunTranslator._usage_report,
    "chat/turnComplete": RunTranslator._turn_complete,
    "chat/turnCancelled": RunTranslator._turn_cancelled,
    "chat/error": RunTranslator._error,
}


def _client_of(call: dict[str, Any]) -> str | None:
    """The clientId a call runs on (its client contributor), None for host and MCP tools."""
    contributor = call.get("contributor")
    return contributor.get("clientId") if isinstance(contributor, dict) and contributor.get("kind") == "client" else None


def _find_call(state: dict[str, Any], call_id: str) -> dict[str, Any] | None:
    turn = state.get("activeTurn") or {}
    for part in turn.get("responseParts") or ():
        call = part.get("toolCall") if isinstance(part, dict) and part.get("kind") == "toolCall" else None
        if isinstance(call, dict) and call.get("toolCallId") == call_id:
            return call
    return None


def token_usage(usage: dict[str, Any] | None, before: dict[str, Any] | None = None) -> TokenUsage | None:
    """AHP ``UsageInfo`` (turn totals) minus ``before`` as one AG-UI ``TokenUsage``, or None."""
    if not usage:
        return None
    before = before or {}

    def count(key: str) -> int | None:
        value = usage.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        earlier = before.get(key)
        return max(0, value - (earlier if isinstance(earlier, int) else 0))

    input_tokens, output_tokens, cached = count("inputTokens"), count("outputTokens"), count("cacheReadTokens")
    if input_tokens is None and output_tokens is None:
        return None
    total = (input_tokens or 0) + (output_tokens or 0)
    model = usage.get("model") if isinstance(usage.get("model"), str) else None
    return TokenUsage(
        model=model, input_tokens=input_tokens, output_tokens=output_tokens, total_tokens=total, cached_input_tokens=cached
    )
