"""Streamed-text runs of the internal model: the law that lets the host stream tokens in O(1)
each while the reducers stay pure. The one definition of a run, used by ``host.state.store`` (held
state) and ``host.state.journal`` (coalesced rows).

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

:class:`AppendingState` holds one channel's state with the open run kept as a list of strings.
Only ``chat`` channels have runs. ``tests/ahp/state/test_appends.py`` checks the law.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["RUN_ACTION_TYPES", "TEXT_APPENDS", "AppendingState", "joined", "run_key"]

RUN_ACTION_TYPES = frozenset({"chat/delta", "chat/reasoning", "chat/toolCallDelta"})
"""Action types that append a string to one text field and may be joined into runs."""

TEXT_APPENDS = frozenset({"chat/delta", "chat/reasoning"})
"""The runs of response text (a part's ``content``), which the journal coalesces into one row."""

RUN_KINDS = frozenset({"chat"})
"""Channel kinds whose actions may form runs."""


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


class AppendingState:
    """One channel's state, with streamed text appends held back as a run.

    ``state`` is always what the pure reducers would have produced from every applied action: a
    pending run is reduced, as one joined append, when ``state`` is read. ``reduce`` has the shape
    of ``ahp.state.reduce`` (``reduce(kind, state, action, now)``).

    A dialect with other action names (0.2.0's ``session/delta``...) subclasses it with its own
    ``run_kinds`` and ``key_of``; the holding and joining stay this one class.
    """

    __slots__ = ("kind", "_reduce", "_state", "_run_key", "_run_template", "_run_chunks", "_runs")

    run_kinds: frozenset[str] = RUN_KINDS
    """Channel kinds whose actions may form runs."""
    key_of = staticmethod(run_key)
    """``key_of(action)``: the action's run key, ``None`` when it is reduced on its own."""

    def __init__(self, kind: str, state: dict[str, Any],
                 reduce: Callable[[str, dict[str, Any], dict[str, Any], int], dict[str, Any]] | None = None) -> None:
        if reduce is None:
            from ahp.state import reduce as reduce_any  # the package imports this module lazily
            reduce = reduce_any
        self.kind = kind
        self._reduce = reduce
        self._state = state
        self._runs = kind in self.run_kinds
        self._run_key: tuple[Any, ...] | None = None
        """The key of the run the last applied action opened or continued (``None``: no run)."""
        self._run_template: dict[str, Any] = {}
        self._run_chunks: list[str] = []
        """Contents appended to the run and not yet reduced into ``_state``."""

    @property
    def state(self) -> dict[str, Any]:
        """The reducers' state after every applied action (reduces a pending run first)."""
        if self._run_chunks:
            # ``now`` is not read by text appends: 0 stands for it.
            self._state = self._reduce(self.kind, self._state, joined(self._run_template, self._run_chunks), 0)
            self._run_chunks = []
        return self._state

    @state.setter
    def state(self, state: dict[str, Any]) -> None:
        """Replace the state outright (a snapshot); an open run is forgotten with the old one."""
        self._state = state
        self._run_key = None
        self._run_chunks = []

    @property
    def shape(self) -> dict[str, Any]:
        """The state without reducing a pending run: exact in everything but the text of the run's
        target (text appends change nothing else), for cheap per-token checks."""
        return self._state

    def apply(self, action: dict[str, Any], now: int) -> bool:
        """Reduce ``action`` into the state (or hold it in the open run); True if state changed."""
        key = self.key_of(action) if self._runs else None
        if key is not None and key == self._run_key:
            self._run_chunks.append(action["content"])
            return True
        before = self.state
        after = self._reduce(self.kind, before, action, now)
        self._state = after
        # Only an append that found its target opens a run: the law needs it.
        self._run_key = key if after is not before else None
        self._run_template = action
        return after is not before
