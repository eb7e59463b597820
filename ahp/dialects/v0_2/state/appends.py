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

from collections.abc import Callable
from typing import Any

from ahp.dialects.v0_2.state import reduce as reduce_v0_2
from ahp.state.appends import AppendingState as _AppendingState
from ahp.state.appends import joined

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


class AppendingState(_AppendingState):
    """One 0.2.0 channel's state, with streamed text appends held back as a run (the client's
    mirror): the internal model's holder (``ahp.state.appends.AppendingState``) with 0.2.0's
    action names and reducers. Appending to a run is a list append, so a long turn costs O(1) per
    token instead of a copy of its whole text.
    """

    __slots__ = ()

    run_kinds = frozenset({"session"})
    key_of = staticmethod(run_key)

    def __init__(self, kind: str, state: dict[str, Any],
                 reduce: Callable[[str, dict[str, Any], dict[str, Any], int], dict[str, Any]] | None = None) -> None:
        super().__init__(kind, state, reduce or reduce_v0_2)
