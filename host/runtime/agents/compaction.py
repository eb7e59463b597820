"""Keeping a session within its model's context window: older turns become a summary.

Contract (``Compaction``, one per agent, over the host's ``TranscriptStore``):
* ``past(session, finished, kept=None)``: the finished turns as the model is sent them, repaired
  (``host.runtime.conversation.repair``): a compaction's summary replaces the turns it covers
  (their transcripts stay on disk), later turns follow word for word. With ``kept`` (the chat's
  ``KeptPast``, which outlives the turn) only the turns finished since the last call are built.
* ``budget(spec)``: the tokens a request may use before older turns are compacted
  (``compact_at`` of the context window), or None when the model's window is unknown.
* ``compact(ctx, provider, model_id, spec, finished, keep=, focus=, through=)``: summarise the
  finished turns before the last ``keep`` with the model and store the summary; the user is told
  what was compacted, or why nothing was. Returns whether a new summary exists. ``through`` marks
  a compaction the user asked for (``/compact``): it covers up to that turn. ``started`` is called
  just before the model is asked (the caller shows an activity).

The token arithmetic (estimates, cutting tool output, the summary request) is ``host.runtime.agents.context``.
"""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Callable
from typing import Any

from host.runtime.agents.base import TurnContext
from host.runtime.agents.context import compaction_request, elide_old_tool_results, estimate_messages, summary_message
from host.runtime.agents.kept_past import KeptPast
from host.runtime.agents.models import ModelSpec, TurnSettings
from host.runtime.conversation import history, repair
from host.state.transcripts import TranscriptStore
from providers import Message, ModelStream, Provider, ProviderError

__all__ = ["Compaction"]

_TURN_ID = operator.methodcaller("get", "id")


class Compaction:
    def __init__(self, transcripts: Callable[[], TranscriptStore], settings: TurnSettings, notify: Callable[[TurnContext, str], None]) -> None:
        self._transcripts = transcripts
        self._settings = settings
        self._notify = notify

    def past(self, session: str, finished: list[dict[str, Any]], kept: KeptPast | None = None) -> list[Message]:
        transcripts = self._transcripts()
        ids = list(map(str, map(_TURN_ID, finished)))  # (before every turn, of every finished turn: in C)
        found = transcripts.compaction(session, ids)
        prefix: list[Message] = [summary_message(found[1])] if found else []
        start = found[0] + 1 if found else 0
        stored = transcripts.load(session, ids[start:])
        if kept is not None:
            return kept.conversation(finished[start:], stored, (found, prefix))
        return repair([*prefix, *history(finished[start:], stored)])

    def budget(self, spec: ModelSpec) -> int | None:
        if not spec.context_window or not self._settings.compact_at:
            return None
        return int(spec.context_window * self._settings.compact_at)

    async def compact(
        self, ctx: TurnContext, provider: Provider, model_id: str, spec: ModelSpec, finished: list[dict[str, Any]],
        *, keep: int, focus: str | None, through: str | None = None, started: Callable[[], None] = lambda: None,
    ) -> bool:
        transcripts = self._transcripts()
        ids = [str(t.get("id")) for t in finished]
        found = transcripts.compaction(ctx.session, ids)
        start = found[0] + 1 if found else 0
        end = len(finished) - keep
        if end <= start:
            if through is not None:
                self._notify(ctx, "Nothing to compact yet: no turns since the last compaction.")
            return False
        older = [*([summary_message(found[1])] if found else []),
                 *history(finished[start:end], transcripts.load(ctx.session, ids[start:end]))]
        older, _ = elide_old_tool_results(repair(older), 3)
        if spec.context_window and estimate_messages(older) > spec.context_window * 0.9:
            older, _ = elide_old_tool_results(older, 0)
        request = compaction_request(model_id, older, focus=focus, max_tokens=4096, stall_timeout=self._settings.stall_timeout)
        started()
        stream = ModelStream.open(provider, request)
        try:
            async with contextlib.aclosing(stream):
                async for _ in stream:
                    pass
        except ProviderError as error:
            self._notify(ctx, f"The conversation could not be compacted: {error.message}")
            return False
        summary = stream.message().text.strip()
        if not summary:
            self._notify(ctx, "The conversation could not be compacted: the model returned an empty summary.")
            return False
        transcripts.save_compaction(ctx.session, through or ids[end - 1], summary)
        count = end - start
        how = f"as asked{f' (focus: {focus})' if focus else ''}" if through is not None else "to stay within the model's context window"
        kept = ""
        if keep:
            kept = "; the latest turn is kept word for word" if keep == 1 else f"; the {keep} latest turns are kept word for word"
        turns = "1 earlier turn (about" if count == 1 else f"{count} earlier turns (about"
        self._notify(
            ctx,
            f"Compacted the conversation {how}: {turns} {estimate_messages(older):,} tokens) "
            f"{'is' if count == 1 else 'are'} now sent to the model as a summary of about "
            f"{estimate_messages([summary_message(summary)]):,} tokens{kept}. The full history stays in the session.",
        )
        return True
