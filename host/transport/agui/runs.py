"""AG-UI runs on AHP sessions: thread ↔ session (and its default chat), and one run's lifecycle.

``AguiRuns(host).run(run_input, cancel_on_disconnect=...)`` is an async iterator of AG-UI events
for one ``RunAgentInput``. Everything it does to a session or its chat goes through the store
exactly as an AHP client's ``dispatchAction`` would (same ``check_client_action`` validation, an
``origin`` with this thread's client id), so AHP clients subscribed to the session see the run
live. It speaks the host's internal model (AHP 0.9.0): turns are ``chat/*`` actions on the
session's default chat, the front end's tools are one entry of the session's ``activeClients``.

Contract:

* A thread maps to the session ``<provider>:/agui-<uuid5(threadId)>`` (``session_uri_for``; an
  existing one is found by its id whatever its provider, ``thread_session``), created on first use
  with the host's default agent, or ``forwardedProps.agent``. ``forwardedProps.model`` is the
  model of each message the run sends.
* The thread acts as the AHP client ``agui:<threadId>``. With ``tools`` in the input, the run
  becomes one of the session's active clients with those tools (``session/activeClientSet``,
  AHP ``ToolDefinition``s); a run that ends without waiting on a front-end tool leaves again
  (``session/activeClientRemoved``). While another client is active the run offers no tools and
  ends with ``RUN_ERROR`` saying so (a 0.2.0 client sees one active client per session).
* A ``tool`` message answering one of the thread's front-end calls that the running turn waits
  on completes that call (``chat/toolCallComplete`` as its owner); the run then streams the
  rest of that turn. Otherwise the last ``user`` message, when no turn of the chat carries its
  id yet (``message._meta.agui.messageId``), starts a turn; ``context`` entries become simple
  attachments, media parts become attachments too.
* A run with ``resume`` answers the interrupts an earlier run ended with (confirmations and
  questions for the user, ``host.transport.agui.interrupts``): every open one exactly once, else
  ``RUN_ERROR`` ``resumeMismatch``; entries for calls or questions someone else answered meanwhile
  are moot. It then follows the same turn. A new user message while a confirmation waits is
  ``RUN_ERROR`` ``confirmationPending`` (``inputPending`` while only a question waits) saying how
  to answer, or to cancel.
* What another chat of the session waits on (a sub-agent's confirmation or question: read from
  that chat's state whenever the session's ``inputNeeded`` changes) is an interrupt of the thread
  too, its id suffixed ``@<chat>``; the resume's answer goes to that chat.
* A question the session asks outside a turn (the workspace-trust question of a folder that brings
  hooks or servers, ``ahp.workspace_trust``; asked when the thread's session is created, or when a
  run first uses a session restored at host start) comes before the thread's next message: a run
  bringing a new user message while one is open starts no turn and ends with ``RUN_FINISHED``
  whose outcome is ``interrupt``, one ``input_required`` interrupt per question
  (``interrupts.asked_outside``). The run whose ``resume`` answers them (the official client sends
  the message again with it) then starts that message's turn, once the answer took effect: a
  folder trusted now has its hooks run for that message. A join with no turn running ends with
  them the same way.
* A run with ``forwardedProps.cancel: true`` cancels the thread's running turn, whatever it waits
  on (interrupts, front-end tools, a hung model or MCP server), as an AHP client's
  ``chat/turnCancelled`` would, and ends with ``RUN_FINISHED`` whose outcome is ``cancelled``; its
  ``resume`` entries, if any, are not applied. With no turn running it cancels the questions asked
  outside a turn (a trust question cancelled: the folder stays untrusted) and finishes. So a thread
  is never stuck: the next run may send a new message.
* A run that brings nothing new (no unseen user message, no tool answer, no live resume entry)
  *joins*: ``MESSAGES_SNAPSHOT`` of the thread (``host.transport.agui.snapshot``), then the running turn live,
  if any (ending at once with its interrupts when it waits for a person). Without a running turn,
  an input whose last user message already ran ends with ``RUN_ERROR`` ``nothingToRun``; one with
  no user message at all finishes.
* The first event is always ``RUN_STARTED`` and the last ``RUN_FINISHED`` or ``RUN_ERROR``.
  Problems a person must fix (a turn already running, an unknown agent) are ``RUN_ERROR``s
  whose message says what to do.
* A run acts with the level of the token it came with (``grant``, ``host.transport.access``): a
  ``read`` token's run may only join; anything that would change the thread (creating its session,
  a message, an answer, a cancel, taking the active-client role) ends with ``RUN_ERROR``
  ``permissionDenied`` saying which level it needs. What a run dispatches carries the named
  token's ``tokenName`` in its ``origin``, and its confirmation answers record who answered in
  the tool call's ``_meta`` (``access.recorded_answer``).
* Abandoning the iterator (the HTTP client went away) cancels the turn only when the run asked
  for it; otherwise the turn goes on for the AHP clients watching it.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    BaseEvent,
    MessagesSnapshotEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    ToolMessage,
)
from ag_ui.core.version import PROTOCOL_VERSION as AGUI_PROTOCOL_VERSION

from ahp.protocol import builders
from ahp.state import default_chat_uri, parse_chat_uri
from host.errors import RpcError
from host.runtime.turns import now_iso, turn_duration
from host.service import AgentHost
from host.state.store import Store
from host.transport.access import action_refusal, recorded_answer
from host.transport.agui.interrupts import (
    INPUT_PREFIX,
    AnswerError,
    Elsewhere,
    answer,
    answer_input,
    asked_outside,
    coverage_problem,
    elsewhere,
    elsewhere_interrupts,
    open_inputs,
    waiting_calls,
)
from host.transport.agui.mapping import RunTranslator
from host.transport.agui.snapshot import thread_messages
from host.transport.tokens import FULL, HOST_GRANT, Grant
from host.transport.validation import check_client_action

__all__ = ["AguiRuns", "session_uri_for", "client_id_for", "thread_session"]

_THREAD_NAMESPACE = uuid.UUID("5d0c6f1e-2b8a-4f55-9a55-6a0d7f0c4e21")
_READY_TIMEOUT = 60.0


def _session_id(thread_id: str) -> str:
    return f"agui-{uuid.uuid5(_THREAD_NAMESPACE, thread_id)}"


def session_uri_for(thread_id: str, provider: str = "ahp-session") -> str:
    """The session a thread maps to on ``provider``: stable across runs and host restarts. Without
    a provider, the URI an AHP 0.2.0 client names it with (``ahp-session:/agui-<uuid>``)."""
    return f"{provider}:/{_session_id(thread_id)}"


def thread_session(store: Store, thread_id: str) -> str | None:
    """The session the thread already has (under whichever provider), or None."""
    suffix = ":/" + _session_id(thread_id)
    return next((uri for uri, _ in store.channels("session") if uri.endswith(suffix)), None)


def client_id_for(thread_id: str) -> str:
    """The AHP client id this thread's runs act as (tool ownership, origins, active client)."""
    return f"agui:{thread_id}"


class _Refused(Exception):
    """The run cannot go ahead; ``str`` is the message for the person, ``code`` a stable tag."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class _SeqCounter:
    value: int = 0

    def next(self) -> int:
        self.value += 1
        return self.value


class _SessionWatch:
    """Queues (channel, action, state after) for one session and its default chat from the store's
    observer hooks; a streamed token comes with ``None`` for the state (it changes no state the
    translator reads, and building the state for every token would cost a copy of the turn's text)."""

    def __init__(self, host: AgentHost, session: str) -> None:
        self._store = host.store
        self._channels = (session, default_chat_uri(session))
        self.queue: asyncio.Queue[tuple[str, dict[str, Any], dict[str, Any] | None]] = asyncio.Queue()
        self._store.change_observers.append(self._observe)
        self._store.token_observers.append(self._observe_token)

    def _observe(self, channel: str, before: dict[str, Any], after: dict[str, Any], envelope: dict[str, Any]) -> None:
        if channel in self._channels:
            self.queue.put_nowait((channel, envelope["action"], after))

    def _observe_token(self, channel: str, envelope: dict[str, Any]) -> None:
        if channel in self._channels:
            self.queue.put_nowait((channel, envelope["action"], None))

    def close(self) -> None:
        with contextlib.suppress(ValueError):
            self._store.change_observers.remove(self._observe)
        with contextlib.suppress(ValueError):
            self._store.token_observers.remove(self._observe_token)


class AguiRuns:
    def __init__(self, host: AgentHost, *, grant: Grant = HOST_GRANT, seqs: dict[str, _SeqCounter] | None = None) -> None:
        self.host = host
        self._grant = grant
        """The token this object's runs act with."""
        self._seqs: dict[str, _SeqCounter] = seqs if seqs is not None else {}

    # -- the run -------------------------------------------------------------------------------

    async def run(self, run_input: RunAgentInput, *, cancel_on_disconnect: bool = False,
                  grant: Grant = HOST_GRANT) -> AsyncIterator[BaseEvent]:
        if grant != self._grant:  # the same runs (and clientSeq counters), acting with this token
            runs = AguiRuns(self.host, grant=grant, seqs=self._seqs)
            async for event in runs.run(run_input, cancel_on_disconnect=cancel_on_disconnect, grant=grant):
                yield event
            return
        thread_id, run_id = run_input.thread_id, run_input.run_id
        client_id = client_id_for(thread_id)
        props = run_input.forwarded_props if isinstance(run_input.forwarded_props, dict) else {}
        agent = props.get("agent") if isinstance(props.get("agent"), str) and props.get("agent") else None
        session = thread_session(self.host.store, thread_id) or session_uri_for(thread_id, agent or self.host.default_provider())
        chat = default_chat_uri(session)
        yield RunStartedEvent(thread_id=thread_id, run_id=run_id, protocol_version=AGUI_PROTOCOL_VERSION)
        watch = _SessionWatch(self.host, session)
        translator: RunTranslator | None = None
        finished = False
        try:
            plan = _Plan()
            try:
                await self._ensure_session(session, run_input, client_id, watch)
                translator = self._begin(session, run_input, client_id, plan)
            except _Refused as refused:
                plan.refusal = refused
            for event in plan.events:
                yield event
            if plan.refusal is not None:
                self._release_role(session, client_id)
                finished = True
                yield RunErrorEvent(message=str(plan.refusal), code=plan.refusal.code)
                return
            if translator is None:  # joined a thread with nothing running: the snapshot was all
                self._release_role(session, client_id)
                finished = True
                yield RunFinishedEvent(thread_id=thread_id, run_id=run_id, outcome=plan.outcome)
                return
            translator.note_elsewhere(self._elsewhere(session))
            for event in translator.check(self.host.store.state(chat) or {}):
                yield event
            while not translator.done:
                channel, action, state = await watch.queue.get()
                if channel == session and state is not None:
                    # What the session waits on changed: a sub-agent's chat may wait on a person.
                    events = translator.note_elsewhere(self._elsewhere(session))
                elif channel == chat:
                    events = translator.feed(action, state)
                else:
                    continue
                for event in events:
                    yield event
            finished = True
            self._release_role(session, client_id)
        finally:
            watch.close()
            if not finished and translator is not None and cancel_on_disconnect:
                self._cancel_turn(session, translator.turn_id, client_id)

    # -- session -------------------------------------------------------------------------------

    async def _ensure_session(self, session: str, run_input: RunAgentInput, client_id: str, watch: _SessionWatch) -> None:
        store = self.host.store
        if session not in store:
            if self._grant.level != FULL:
                raise _Refused(f"This thread has no session yet, and creating one needs a token of level {FULL}; this "
                               f"run uses {self._grant.describe()}, which may only join threads that exist.",
                               "permissionDenied")
            params: dict[str, Any] = {"channel": session, "provider": session.split(":", 1)[0]}
            try:
                self.host.create_session(params, client_id)
            except RpcError as error:
                raise _Refused(error.message, "sessionNotCreated") from None
        elif store.kind(session) != "session":
            raise _Refused(f"{session} is not a session; use another threadId.", "sessionNotCreated")
        try:
            async with asyncio.timeout(_READY_TIMEOUT):
                while (store.state(session) or {}).get("lifecycle") == "creating":
                    await watch.queue.get()
        except TimeoutError:
            raise _Refused("The session for this thread is still starting; try again in a moment.", "sessionNotReady") from None
        state = store.state(session) or {}
        if state.get("lifecycle") == "failed":
            failure = state.get("creationError") or {}
            message = failure.get("message") or "The session for this thread failed to start."
            raise _Refused(f"{message} (Use a new threadId once this is fixed.)", failure.get("errorType") or "creationFailed")
        # A run uses the session as a subscription would: one restored at host start resumes now,
        # so its trust question (if any) is asked outside a turn, before this run's message runs.
        self.host.customizations.resumed(session)

    # -- starting or resuming the turn ---------------------------------------------------------

    def _begin(self, session: str, run_input: RunAgentInput, client_id: str, plan: _Plan) -> RunTranslator | None:
        chat = default_chat_uri(session)
        state = self.host.store.state(chat) or {}
        active = state.get("activeTurn") if isinstance(state.get("activeTurn"), dict) else None
        waiting = _our_waiting_calls(active, client_id)
        answers = [
            m for m in run_input.messages if isinstance(m, ToolMessage) and m.tool_call_id in waiting
        ]
        props = run_input.forwarded_props if isinstance(run_input.forwarded_props, dict) else {}
        if props.get("cancel") is True:
            return self._cancel(session, active, run_input, client_id)
        if run_input.resume:
            return self._resume(session, state, active, run_input, client_id, answers, waiting, plan)
        message = _new_user_message(run_input, state)
        asking = waiting_calls(active)
        questions = open_inputs(active)
        if asking and message is not None and not answers:
            ids = list(asking) + list(questions)
            raise _Refused(
                f"The turn is waiting for a person to confirm {_call_names(asking.values())} (interrupt "
                f"{', '.join(ids)}). Start the next run with resume entries answering each interrupt: "
                "status \"resolved\" with payload {\"approved\": true} or {\"approved\": false, \"reason\": \"...\"}, "
                "or status \"cancelled\" to refuse; send the new message once the turn has ended"
                f"{_OR_CANCEL}",
                "confirmationPending",
            )
        if questions and message is not None and not answers:
            raise _Refused(
                f"The turn is waiting for your answer to {_question_names(questions.values())} (interrupt "
                f"{', '.join(questions)}). Start the next run with resume entries answering each interrupt: "
                "status \"resolved\" with payload {\"answers\": {<questionId>: <value>}} or {\"response\": \"decline\"}, "
                f"or status \"cancelled\"; send the new message once the turn has ended{_OR_CANCEL}",
                "inputPending",
            )
        if message is None and not answers:
            return self._join(session, state, active, run_input, client_id, waiting, plan)
        if active is not None and answers:
            self._claim_role(session, run_input, client_id)
            translator = self._translator(run_input, active["id"], client_id, active.get("usage"))
            for answer in answers:
                self._dispatch(chat, _tool_complete(active["id"], answer, waiting[answer.tool_call_id]), client_id)
            return translator
        if waiting:
            names = ", ".join(sorted(waiting))
            raise _Refused(
                f"The turn is waiting for the result of front-end tool call {names}; send a tool message "
                f"with that toolCallId before a new message{_OR_CANCEL}",
                "toolResultMissing",
            )
        return self._start_turn(session, run_input, client_id, message, active, plan)

    def _start_turn(self, session: str, run_input: RunAgentInput, client_id: str, message: Any,
                    active: dict[str, Any] | None, plan: _Plan, answered: Iterable[str] = ()) -> RunTranslator | None:
        """Start a turn with the run's new user message, unless a question asked outside a turn
        (the workspace-trust question) must be answered first: then the run ends with it.
        ``answered``: interrupts this run just answered (their entries leave the session soon after)."""
        if message is None:
            return None
        settled = set(answered)
        outside = {key: item for key, item in self._outside(session).items() if key not in settled} if active is None else {}
        if outside:
            plan.outcome = RunFinishedInterruptOutcome(interrupts=elsewhere_interrupts(outside))
            return None
        chat = default_chat_uri(session)
        self._claim_role(session, run_input, client_id)
        turn_id = str(uuid.uuid4())
        action = builders.chat_turn_started(turn_id=turn_id, started_at=now_iso(), message=_user_message(message, run_input))
        translator = self._translator(run_input, turn_id, client_id, None)
        self._dispatch(chat, action, client_id)
        return translator

    def _resume(self, session: str, state: dict[str, Any], active: dict[str, Any] | None, run_input: RunAgentInput,
                client_id: str, answers: list[Any], waiting: dict[str, dict[str, Any]], plan: _Plan) -> RunTranslator | None:
        """A run whose ``resume`` answers the confirmations an earlier run was interrupted by."""
        entries = list(run_input.resume or ())
        chat = default_chat_uri(session)
        # With no turn running, what the thread can wait on is a question asked outside a turn.
        other = self._elsewhere(session) if active is not None else self._outside(session)
        asking: dict[str, Any] = {**waiting_calls(active), **open_inputs(active), **other}
        # A confirmation someone answered meanwhile (an AHP client) is no longer open: its entry
        # is moot, and a resume of nothing but moot entries just joins the thread, so the front
        # end's pending interrupts clear instead of locking it. (An entry for another chat of the
        # session that is no longer open is moot the same way, and so is a question no longer
        # open: one asked outside a turn leaves no trace in the chat once answered.)
        decided = _decided_interrupts(state)
        live = [entry for entry in entries if entry.interrupt_id in asking
                or (entry.interrupt_id not in decided and not _of_other_chat(entry.interrupt_id, session)
                    and not entry.interrupt_id.startswith(INPUT_PREFIX))]
        problem = coverage_problem(live, asking)
        if problem is not None:
            raise _Refused(problem + " Answer exactly the interrupts of the run that ended with them.", "resumeMismatch")
        if not live and not answers:
            return self._join(session, state, active, run_input, client_id, waiting, plan, joined_after_resume=True)
        try:
            actions = [_answer(entry, asking[entry.interrupt_id], chat, active["id"] if active else "") for entry in live]
        except AnswerError as error:
            raise _Refused(str(error), "resumeInvalid") from None
        if active is None:
            # Questions asked outside a turn, answered: then the run's new message, if any, runs.
            # (Their askers hear the answers first: the futures' callbacks run before the turn.)
            for where, action in actions:
                self._dispatch(where, action, client_id)
            return self._start_turn(session, run_input, client_id, _new_user_message(run_input, state), None, plan,
                                    answered=[entry.interrupt_id for entry in live])
        self._claim_role(session, run_input, client_id)
        translator = self._translator(run_input, active["id"], client_id, active.get("usage"))
        translator.adopt_calls(_call_ids(active))
        for where, action in actions:
            self._dispatch(where, action, client_id)
        for message in answers:
            self._dispatch(chat, _tool_complete(active["id"], message, waiting[message.tool_call_id]), client_id)
        return translator

    def _elsewhere(self, session: str) -> dict[str, Elsewhere]:
        """What the session's chats other than the thread's wait on (``interrupts.elsewhere``)."""
        chat = default_chat_uri(session)
        store = self.host.store
        return elsewhere({other: store.state(other) for other in self.host.session_chats(session) if other != chat})

    def _outside(self, session: str) -> dict[str, Elsewhere]:
        """The session's questions asked outside a turn (``interrupts.asked_outside``)."""
        store = self.host.store
        chats = {chat: store.state(chat) for chat in self.host.session_chats(session)}
        return asked_outside(store.state(session) or {}, chats, default_chat_uri(session))

    def _cancel(self, session: str, active: dict[str, Any] | None, run_input: RunAgentInput, client_id: str) -> RunTranslator | None:
        """``forwardedProps.cancel``: end the running turn, whatever it waits on; with none running,
        cancel the questions asked outside a turn (the trust question: then not trusted)."""
        if active is None:
            for item in self._outside(session).values():
                self._dispatch(item.chat, builders.chat_input_completed(
                    request_id=str((item.request or {})["id"]), response="cancel"), client_id)
            return None
        translator = self._translator(run_input, active["id"], client_id, active.get("usage"))
        translator.adopt_calls(_call_ids(active))
        self._dispatch(default_chat_uri(session), builders.chat_turn_cancelled(
            turn_id=active["id"], duration=turn_duration(active.get("startedAt"))), client_id)
        return translator

    def _join(self, session: str, state: dict[str, Any], active: dict[str, Any] | None, run_input: RunAgentInput,
              client_id: str, waiting: dict[str, dict[str, Any]], plan: _Plan, *,
              joined_after_resume: bool = False) -> RunTranslator | None:
        """A run that brings nothing new: the thread so far, then the running turn live (if any)."""
        # The whole thread, also the turns older than the chat's state holds.
        whole = {**state, "turns": self.host.store.turns(default_chat_uri(session))}
        plan.events.append(MessagesSnapshotEvent(messages=thread_messages(whole)))
        if active is not None:
            translator = self._translator(run_input, active["id"], client_id, active.get("usage"))
            translator.adopt_calls(_call_ids(active))
            return translator
        outside = self._outside(session)
        if outside:  # nothing runs, but the session asks something (whether to trust its folder)
            plan.outcome = RunFinishedInterruptOutcome(interrupts=elsewhere_interrupts(outside))
            return None
        users = [m for m in run_input.messages if getattr(m, "role", None) == "user"]
        if users and not joined_after_resume:
            raise _Refused(
                f"Nothing ran: the last user message ({users[-1].id}) was already answered in this thread "
                "(the snapshot above holds the answer). Add a new user message, with a new id, to continue.",
                "nothingToRun",
            )
        return None

    @staticmethod
    def _translator(run_input: RunAgentInput, turn_id: str, client_id: str, usage: Any) -> RunTranslator:
        return RunTranslator(run_input.thread_id, run_input.run_id, turn_id, client_id, usage_before=usage)

    def _claim_role(self, session: str, run_input: RunAgentInput, client_id: str) -> None:
        tools = [_tool_definition(tool) for tool in run_input.tools or ()]
        current = _our_entry(self.host.store.state(session) or {}, client_id)
        if not tools:
            if current is not None:
                self._release_role(session, client_id)
            return
        other = next((client for client in (self.host.store.state(session) or {}).get("activeClients") or ()
                      if isinstance(client, dict) and client.get("clientId") != client_id), None)
        if other is not None:
            # The thread's tools would sit beside another client's: a client of AHP 0.2.0 (one
            # active client per session) could not see them, so the run offers none.
            raise _Refused(
                f"Another client ({other.get('displayName') or other.get('clientId')}) provides the tools of this "
                "thread's session right now, so this run's tools cannot be offered. Run without tools, or once "
                "that client lets go.", "actionRefused")
        active_client = {"clientId": client_id, "displayName": f"AG-UI thread {run_input.thread_id}", "tools": tools}
        if current != active_client:
            self._dispatch(session, builders.session_active_client_set(active_client=active_client), client_id)

    def _release_role(self, session: str, client_id: str) -> None:
        """Leave the session's active clients, unless the running turn still waits on our tools."""
        if _our_entry(self.host.store.state(session) or {}, client_id) is None:
            return
        turn = (self.host.store.state(default_chat_uri(session)) or {}).get("activeTurn")
        if _our_waiting_calls(turn if isinstance(turn, dict) else None, client_id):
            return
        try:
            self._dispatch(session, builders.session_active_client_removed(client_id=client_id), client_id)
        except _Refused:
            pass  # the session went away meanwhile: there is no role left to give up

    def _cancel_turn(self, session: str, turn_id: str, client_id: str) -> None:
        chat = default_chat_uri(session)
        turn = (self.host.store.state(chat) or {}).get("activeTurn")
        if isinstance(turn, dict) and turn.get("id") == turn_id:
            try:
                self._dispatch(chat, builders.chat_turn_cancelled(
                    turn_id=turn_id, duration=turn_duration(turn.get("startedAt"))), client_id)
            except _Refused:
                pass  # the turn ended on its own meanwhile

    def _dispatch(self, channel: str, action: dict[str, Any], client_id: str) -> None:
        """Apply ``action`` to the session or its chat as this thread's client would, through the
        same validation."""
        store = self.host.store
        forbidden = action_refusal(self._grant, action.get("type"))
        if forbidden is not None:
            raise _Refused(forbidden + " This run may only join the thread.", "permissionDenied")
        kind = store.kind(channel)
        if kind is None:
            raise _Refused("The session for this thread was disposed; use a new threadId.", "sessionNotFound")
        state = store.state(channel) or {}
        owner = self.host.chat_summaries.session_of(channel) if kind == "chat" else None
        # (An answer to a question asked outside a turn is checked against the session's inputNeeded.)
        session = store.state(owner) if owner is not None else None
        reason = check_client_action(kind, state, action, client_id, session)
        if reason is not None:
            raise _Refused(_explain(reason, action, state), "actionRefused")
        origin: dict[str, Any] = {"clientId": client_id, "clientSeq": self._seqs.setdefault(client_id, _SeqCounter()).next()}
        if self._grant.name is not None:
            origin["tokenName"] = self._grant.name
        if kind == "chat":
            action = recorded_answer(action, state, self._grant, client_id)
        store.dispatch(channel, action, origin)


@dataclass
class _Plan:
    """What a run sends before (or instead of) following a turn."""

    events: list[BaseEvent] = field(default_factory=list)
    refusal: _Refused | None = None
    outcome: RunFinishedInterruptOutcome | None = None
    """How a run that follows no turn finishes: interrupted by questions asked outside a turn."""


# -- pure helpers ----------------------------------------------------------------------------------


def _answer(entry: Any, waiting: Any, chat: str, turn_id: str) -> tuple[str, dict[str, Any]]:
    """The chat a resume entry's answer goes to, and the action: a question or a confirmation of
    this thread's chat, or of another chat of its session (``Elsewhere``: a sub-agent's)."""
    if isinstance(waiting, Elsewhere):
        if waiting.request is not None:
            return waiting.chat, answer_input(entry, waiting.request)
        return waiting.chat, answer(entry, waiting.call or {}, str(waiting.turn_id))
    if entry.interrupt_id.startswith(INPUT_PREFIX):
        return chat, answer_input(entry, waiting)
    return chat, answer(entry, waiting, turn_id)


def _of_other_chat(interrupt: str, session: str) -> bool:
    """Whether ``interrupt`` names a confirmation or question of another chat of ``session``."""
    where = interrupt.rpartition("@")[2] if "@" in interrupt else None
    parsed = parse_chat_uri(where)
    return parsed is not None and parsed[1] == session


def _call_ids(turn: dict[str, Any]) -> list[str]:
    return [part["toolCall"]["toolCallId"] for part in turn.get("responseParts") or ()
            if isinstance(part, dict) and part.get("kind") == "toolCall"]


def _call_names(calls: Any) -> str:
    return ", ".join(str(call.get("displayName") or call.get("toolName") or call.get("toolCallId")) for call in calls)


def _decided_interrupts(state: dict[str, Any]) -> set[str]:
    """Interrupt ids of every call of the session (the open ones are filtered out by the caller)."""
    turns = list(state.get("turns") or ())
    if isinstance(state.get("activeTurn"), dict):
        turns.append(state["activeTurn"])
    decided: set[str] = set()
    for turn in turns:
        for call_id in _call_ids(turn):
            decided.add(f"ahp-confirm:{call_id}")
            decided.add(f"ahp-result:{call_id}")
        for part in turn.get("responseParts") or ():
            if isinstance(part, dict) and part.get("kind") == "inputRequest" and isinstance(part.get("request"), dict):
                decided.add(INPUT_PREFIX + str(part["request"].get("id")))
    return decided


_OR_CANCEL = '; or cancel the turn with a run whose forwardedProps are {"cancel": true}.'


def _question_names(requests: Any) -> str:
    return ", ".join(repr(str(request.get("message") or request.get("id"))) for request in requests)


def _explain(reason: str, action: dict[str, Any], state: dict[str, Any]) -> str:
    """The validation's sentence, said in AG-UI terms where the AHP one would not help."""
    if action.get("type") == "chat/turnStarted" and isinstance(state.get("activeTurn"), dict):
        return (
            "A turn is already running in this thread's session (another client may have started it). "
            "Wait for it to finish, or cancel it with a run whose forwardedProps are {\"cancel\": true}, "
            "then send your message again."
        )
    return reason


def _our_entry(state: dict[str, Any], client_id: str) -> dict[str, Any] | None:
    """This thread's entry in the session's ``activeClients``, or None."""
    return next((client for client in state.get("activeClients") or ()
                 if isinstance(client, dict) and client.get("clientId") == client_id), None)


def _our_waiting_calls(active: dict[str, Any] | None, client_id: str) -> dict[str, dict[str, Any]]:
    """This thread's front-end calls in the active turn that wait for their result."""
    waiting: dict[str, dict[str, Any]] = {}
    for part in (active or {}).get("responseParts") or ():
        call = part.get("toolCall") if isinstance(part, dict) and part.get("kind") == "toolCall" else None
        if not isinstance(call, dict):
            continue
        contributor = call.get("contributor")
        if (isinstance(contributor, dict) and contributor.get("kind") == "client" and contributor.get("clientId") == client_id
                and call.get("status") in ("running", "pending-confirmation")):
            waiting[call["toolCallId"]] = call
    return waiting


def _tool_complete(turn_id: str, message: Any, call: dict[str, Any]) -> dict[str, Any]:
    text = _content_text(message.content)
    error = getattr(message, "error", None)
    name = call.get("displayName") or call.get("toolName") or "the tool"
    result: dict[str, Any] = {
        "success": not error,
        "pastTenseMessage": f"Ran {name}" if not error else f"{name} failed",
        "content": [{"type": "text", "text": text}] if text else [],
    }
    if error:
        result["error"] = {"message": str(error)}
    return builders.chat_tool_call_complete(turn_id=turn_id, tool_call_id=call["toolCallId"], result=result)


def _recorded_message_ids(state: dict[str, Any]) -> set[str]:
    turns = list(state.get("turns") or ())
    if isinstance(state.get("activeTurn"), dict):
        turns.append(state["activeTurn"])
    ids = set()
    for turn in turns:
        meta = ((turn.get("message") or {}).get("_meta") or {}).get("agui") or {}
        if isinstance(meta.get("messageId"), str):
            ids.add(meta["messageId"])
    return ids


def _new_user_message(run_input: RunAgentInput, state: dict[str, Any]) -> Any:
    users = [m for m in run_input.messages if getattr(m, "role", None) == "user"]
    if not users or users[-1].id in _recorded_message_ids(state):
        return None
    return users[-1]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(part.text for part in content or () if getattr(part, "type", None) == "text")


def _user_message(message: Any, run_input: RunAgentInput) -> dict[str, Any]:
    attachments: list[dict[str, Any]] = []
    if not isinstance(message.content, str):
        for part in message.content:
            attachment = _media_attachment(part)
            if attachment is not None:
                attachments.append(attachment)
    for item in run_input.context or ():
        attachments.append({"type": "simple", "label": item.description, "modelRepresentation": item.value})
    user: dict[str, Any] = {"text": _content_text(message.content), "origin": {"kind": "user"},
                            "_meta": {"agui": {"messageId": message.id}}}
    if attachments:
        user["attachments"] = attachments
    props = run_input.forwarded_props if isinstance(run_input.forwarded_props, dict) else {}
    model = props.get("model")
    if isinstance(model, str) and model:
        user["model"] = {"id": model}
    return user


def _media_attachment(part: Any) -> dict[str, Any] | None:
    kind = getattr(part, "type", None)
    source = getattr(part, "source", None)
    if kind == "text" or source is None:
        return None
    label = f"{kind} from the AG-UI client"
    display = {"image": "image", "document": "document"}.get(str(kind))
    if source.type == "data":
        attachment = {"type": "embeddedResource", "label": label, "data": source.value, "contentType": source.mime_type}
    else:  # url and file sources are references the host resolves (or refuses) itself
        attachment = {"type": "resource", "label": label, "uri": source.value}
        if source.mime_type:
            attachment["contentType"] = source.mime_type
    if display:
        attachment["displayKind"] = display
    return attachment


def _tool_definition(tool: Any) -> dict[str, Any]:
    definition: dict[str, Any] = {"name": tool.name, "description": tool.description}
    if isinstance(tool.parameters, dict) and tool.parameters:
        schema = dict(tool.parameters)
        schema.setdefault("type", "object")
        definition["inputSchema"] = schema
    return definition
