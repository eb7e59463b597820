"""Text appends that may be applied as one: the law that lets a holder of state stream tokens in
O(1) each while the reducers stay pure.

``session/delta``, ``session/reasoning`` and ``session/toolCallDelta`` (without
``invocationMessage``) only ever append their ``content`` string to one text field of the active
turn (a part's ``content``, a tool call's ``partialInput``). Appending is associative, and none of
these actions changes what decides *where* the next one appends (the active turn, the parts list,
a part's kind, a call's status). Hence, for actions ``a1 .. ak`` with the same :func:`run_key`:

    if ``reduce(s, a1)`` is not ``s`` (``a1`` found its target), then
    ``fold(reduce, s, [a1 .. ak]) == reduce(reduce(s, a1), joined(a2, [a2.content .. ak.content]))``

and the right-hand side builds exactly the same dicts, keys in the same order, as the left-hand
side. A caller may therefore keep the contents of ``a2 .. ak`` as a list and reduce them once, when
the state is read. An action with another key, or a non-string content (JS would append
``"undefined"``, ``"1"`` ...), ends a run and is reduced on its own.

:class:`AppendingState` is that holder, shared by the host's store and the client's mirror: one
channel's state, with the open run kept as a list of strings.

``tests/ahp/dialects/v0_2/state/test_appends.py`` checks the law on streams interleaving every such action with
the ones that end a run.
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["RUN_ACTION_TYPES", "AppendingState", "joined", "run_key"]

RUN_ACTION_TYPES = frozenset({"session/delta", "session/reasoning", "session/toolCallDelta"})
"""Action types that append a string to one text field and may be joined into runs."""


def run_key(action: dict[str, Any]) -> tuple[Any, ...] | None:
    """What a run of joinable appends shares (type, turn, target); ``None`` when ``action`` can
    only be reduced on its own."""
    action_type = action.get("type")
    if action_type not in RUN_ACTION_TYPES or not isinstance(action.get("content"), str):
        return None
    if action_type == "session/toolCallDelta":
        if action.get("invocationMessage") is not None:
            return None  # it also replaces the call's message: reduced on its own
        return (action_type, action.get("turnId"), action.get("toolCallId"))
    return (action_type, action.get("turnId"), action.get("partId"))


def joined(template: dict[str, Any], contents: list[str]) -> dict[str, Any]:
    """One action equivalent to appending ``contents`` in order with actions like ``template``."""
    return {**template, "content": "".join(contents)}


class AppendingState:
    """One channel's state, with streamed text appends held back as a run.

    ``state`` is always what the pure reducers would have produced from every applied action: a
    pending run is reduced, as one joined append, when ``state`` is read. Appending to a run is a
    list append, so a long turn costs O(1) per token instead of a copy of its whole text.
    ``reduce`` has the shape of ``ahp.dialects.v0_2.state.reduce`` (``reduce(kind, state, action, now)``).
    """

    __slots__ = ("kind", "_reduce", "_state", "_run_key", "_run_template", "_run_chunks")

    def __init__(self, kind: str, state: dict[str, Any],
                 reduce: Callable[[str, dict, dict, int], dict] | None = None) -> None:
        if reduce is None:
            from ahp.dialects.v0_2.state import reduce  # the package imports this module's names lazily
        self.kind = kind
        self._reduce = reduce
        self._state = state
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
        key = run_key(action) if self.kind == "session" else None
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
