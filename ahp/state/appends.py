"""Streamed-text runs of the internal model: the law that lets the host stream tokens in O(1)
each while the reducers stay pure. The one definition of a run, used by ``host.state.store`` (held
state) and ``host.state.journal`` (coalesced rows): both hold a :class:`TextRun`.

``chat/delta``, ``chat/reasoning`` and ``chat/toolCallDelta`` (without ``invocationMessage`` or
``_meta``, which replace fields of the call) only ever append their ``content`` string to one text
field of a chat's active turn (a part's ``content``, a tool call's ``partialInput``). Appending is
associative, and none of these actions changes what decides *where* the next one appends (the
active turn, the parts list, a part's kind, a call's status). Hence, for actions ``a1 .. ak`` with
the same :func:`run_key`:

    if ``reduce("chat", s, a1)`` is not ``s`` (``a1`` found its target), then
    ``fold(s, [a1 .. ak]) == reduce(reduce(s, a1), joined(a2, [a2.content .. ak.content]))``

and the right-hand side builds the same dicts, keys in the same order, as the left-hand side. An
action with another key, or a non-string content, ends a run and is reduced on its own. Text
appends never read ``now``, so a run reduced later is the same state.

**A run** is a :class:`TextRun`: consecutive appends to one channel with one :func:`run_key`; it
keeps the first append's action (``template``) and the contents (and ``serverSeq``) of the appends
its holder has not yet used up, and :meth:`TextRun.action` is them as one joined append. Its
holders differ only in when a run ends, never in what one is: :class:`AppendingState` (one
channel's state; only ``chat`` channels, and only a run whose first append found its target, as
the law asks) reduces the run when the state is read; the journal writes it as one *coalesced
envelope* (:meth:`TextRun.envelope`: the joined action, the last serverSeq and ``"coalesced":
[[serverSeq, length], ...]``), which :func:`extended` joins with later pieces and :func:`expand`
cuts back into the envelopes it stands for. ``tests/ahp/state/test_appends.py`` checks the law.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ahp.state import reduce as reduce_any

__all__ = ["RUN_ACTION_TYPES", "TEXT_APPENDS", "UNKEYED", "AppendingState", "Mark", "TextRun", "expand", "extended",
           "joined", "run_key"]

RUN_ACTION_TYPES = frozenset({"chat/delta", "chat/reasoning", "chat/toolCallDelta"})
"""Action types that append a string to one text field and may be joined into runs."""

TEXT_APPENDS = frozenset({"chat/delta", "chat/reasoning"})
"""The runs of response text (a part's ``content``), which the journal coalesces into one row."""

RUN_KINDS = frozenset({"chat"})
"""Channel kinds whose actions may form runs."""

UNKEYED: Any = ("unkeyed",)
"""Stands for a run key not worked out (:attr:`AppendingState.key` of a kind without runs): a holder
given it works the key out itself with :func:`run_key`."""


Mark = tuple[dict[str, Any], dict[str, Any] | None, list[str] | None, int]
"""A holder's state as of a moment (:meth:`AppendingState.mark`): its ``shape``, and the template,
pieces list and count of pieces of the run it held then (None, None, 0 without one)."""


def run_key(action: dict[str, Any]) -> tuple[Any, ...] | None:
    """What a run of joinable appends shares (type, turn, target); ``None`` when ``action`` can
    only be reduced on its own."""
    action_type = action.get("type")
    if action_type not in RUN_ACTION_TYPES or not isinstance(action.get("content"), str):
        return None
    if action_type == "chat/toolCallDelta":
        if action.get("invocationMessage") is not None or action.get("_meta") is not None:
            return None  # it also replaces the call's message or metadata: reduced on its own
        return (action_type, action.get("turnId"), action.get("toolCallId"))
    return (action_type, action.get("turnId"), action.get("partId"))


def joined(template: dict[str, Any], contents: list[str]) -> dict[str, Any]:
    """One action equivalent to appending ``contents`` in order with actions like ``template``."""
    return {**template, "content": "".join(contents)}


class TextRun:
    """One open run (see the module docstring): the first append's action and the appends not yet
    used up, as contents and (for a holder that numbers them) serverSeqs."""

    __slots__ = ("key", "template", "pieces", "seqs", "count")

    def __init__(self, key: tuple[Any, ...], action: dict[str, Any], seq: int = 0) -> None:
        self.key = key
        """The :func:`run_key` every append of the run has."""
        self.template = action
        """The first append: every field of the joined action but its ``content``."""
        self.pieces: list[str] = [action["content"]]
        """Contents not used up yet, in order."""
        self.seqs: list[int] = [seq]
        """Their serverSeqs (a holder that does not number them leaves them 0)."""
        self.count = 1
        """Appends in the run, used up or not."""

    def add(self, content: str, seq: int = 0) -> None:
        self.pieces.append(content)
        self.seqs.append(seq)
        self.count += 1

    def action(self) -> dict[str, Any]:
        """The pieces not used up, as one append."""
        return joined(self.template, self.pieces)

    def marks(self) -> list[tuple[int, int]]:
        """``(serverSeq, length)`` of each piece not used up."""
        return [(seq, len(piece)) for seq, piece in zip(self.seqs, self.pieces)]

    def envelope(self, channel: str) -> dict[str, Any]:
        """The pieces not used up as one envelope: a single piece's own, else the coalesced one."""
        if len(self.pieces) == 1:
            return {"channel": channel, "action": {**self.template, "content": self.pieces[0]}, "serverSeq": self.seqs[0]}
        return {"channel": channel, "action": self.action(), "serverSeq": self.seqs[-1], "coalesced": self.marks()}

    def used_up(self) -> None:
        """Everything held so far was used (reduced, written): the run goes on empty."""
        self.pieces, self.seqs = [], []


def extended(envelope: dict[str, Any], more: list[tuple[list[list[int]], str]]) -> dict[str, Any]:
    """A run's envelope (:meth:`TextRun.envelope`) with pieces written after it, each ``(marks,
    text)``: one coalesced envelope of them all."""
    action = envelope["action"]
    marks = list(envelope.get("coalesced") or [[envelope["serverSeq"], len(action["content"])]])
    texts = [action["content"]]
    for more_marks, more_text in more:
        marks.extend(more_marks)
        texts.append(more_text)
    return {"channel": envelope["channel"], "action": {**action, "content": "".join(texts)},
            "serverSeq": marks[-1][0], "coalesced": marks}


def expand(envelope: dict[str, Any]) -> list[dict[str, Any]]:
    """The envelopes a coalesced one stands for, each with its own serverSeq (a plain one: itself)."""
    pieces = envelope.get("coalesced")
    if pieces is None:
        return [envelope]
    action = envelope["action"]
    text = action["content"]
    out: list[dict[str, Any]] = []
    offset = 0
    for seq, length in pieces:
        out.append({"channel": envelope["channel"], "action": {**action, "content": text[offset:offset + length]}, "serverSeq": seq})
        offset += length
    return out


class AppendingState:
    """One channel's state, with streamed text appends held back as a run.

    ``state`` is always what the pure reducers would have produced from every applied action: a
    pending run is reduced, as one joined append, when ``state`` is read. ``reduce`` has the shape
    of ``ahp.state.reduce`` (``reduce(kind, state, action, now)``).

    A dialect with other action names (0.2.0's ``session/delta``...) subclasses it with its own
    ``run_kinds`` and ``key_of``; the holding and joining stay this one class.
    """

    __slots__ = ("kind", "_reduce", "shape", "_run", "_runs", "key")

    run_kinds: frozenset[str] = RUN_KINDS
    """Channel kinds whose actions may form runs."""
    key_of = staticmethod(run_key)
    """``key_of(action)``: the action's run key, ``None`` when it is reduced on its own."""

    def __init__(self, kind: str, state: dict[str, Any],
                 reduce: Callable[[str, dict[str, Any], dict[str, Any], int], dict[str, Any]] | None = None) -> None:
        self.kind = kind
        self._reduce = reduce or reduce_any
        self.shape = state
        """The state without reducing a pending run (read it, never set it: ``state`` does): exact
        in everything but the text of the run's target (text appends change nothing else), for
        cheap per-token checks. An attribute, not a property: read for every streamed token."""
        self._runs = kind in self.run_kinds
        self._run: TextRun | None = None
        """The run the last applied action opened or continued; its pieces are not in ``shape`` yet."""
        self.key: tuple[Any, ...] | None = UNKEYED
        """The run key (``key_of``) of the last applied action, so that another holder of runs of
        the same actions (the journal) need not work it out again per token; ``UNKEYED`` for a kind
        without runs (not worked out)."""

    @property
    def state(self) -> dict[str, Any]:
        """The reducers' state after every applied action (reduces a pending run first)."""
        run = self._run
        if run is not None and run.pieces:
            # ``now`` is not read by text appends: 0 stands for it.
            self.shape = self._reduce(self.kind, self.shape, run.action(), 0)
            run.used_up()
        return self.shape

    @state.setter
    def state(self, state: dict[str, Any]) -> None:
        """Replace the state outright (a snapshot); an open run is forgotten with the old one."""
        self.shape = state
        self._run = None

    def mark(self) -> Mark:
        """The state as it is now, without reducing a pending run (O(1)): what :meth:`restore`
        takes the holder back to. A run's pieces list only grows until the run is used up, when
        the run takes a new list, so the pieces held now stay as they are in the one kept here."""
        run = self._run
        if run is None or not run.pieces:
            return (self.shape, None, None, 0)
        return (self.shape, run.template, run.pieces, len(run.pieces))

    def restore(self, mark: Mark) -> None:
        """Go back to the state :meth:`mark` gave (undoing what was applied since: a networked
        log refused it), the run it held reduced."""
        shape, template, pieces, held = mark
        if held:
            assert template is not None and pieces is not None
            shape = self._reduce(self.kind, shape, joined(template, pieces[:held]), 0)
        self.state = shape

    def apply_keyed(self, action: dict[str, Any], now: int, key: tuple[Any, ...]) -> bool:
        """``apply`` of an action whose run key (``key_of(action)``, not None) the caller knows
        already: an append that continues the open run is held without working the key out again."""
        run = self._run
        if self._runs and run is not None and key == run.key:
            self.key = key
            run.pieces.append(action["content"])  # ``run.add``, inlined: once per streamed token
            run.seqs.append(0)
            run.count += 1
            return True
        return self.apply(action, now)

    def apply(self, action: dict[str, Any], now: int) -> bool:
        """Reduce ``action`` into the state (or hold it in the open run); True if state changed."""
        if self._runs:
            key = self.key = self.key_of(action)
        else:
            key = None
        run = self._run
        if key is not None and run is not None and key == run.key:
            run.add(action["content"])
            return True
        before = self.state
        after = self._reduce(self.kind, before, action, now)
        self.shape = after
        # Only an append that found its target opens a run: the law needs it. It is reduced
        # already, so the run starts empty.
        if key is not None and after is not before:
            self._run = TextRun(key, action)
            self._run.used_up()
        else:
            self._run = None
        return after is not before
