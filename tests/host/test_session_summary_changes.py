"""``root/sessionSummaryChanged`` says, for any change of a session's state, exactly the summary
fields that differ (``host.service._summary_changes`` against the whole summary of both states,
``_summary_fields``): also when what the status and the chats follow is shared between the two
states, which it skips, or changed in a way that leaves them equal."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from host.service import _summary_changes, _summary_fields

CHATS = ["ahp-chat:/a", "ahp-chat:/b"]

_chat = st.fixed_dictionaries(
    {"resource": st.sampled_from(CHATS), "title": st.sampled_from(["One", "Two"]), "status": st.sampled_from([1, 8, 16, 2])},
    optional={"modifiedAt": st.sampled_from(["2026-12-07T00:00:00.000Z", "2026-12-07T00:00:01.000Z"]),
              "origin": st.just({"kind": "user"})},
)
_state = st.fixed_dictionaries(
    {},
    optional={"title": st.sampled_from(["New session", "Renamed"]), "activity": st.sampled_from(["Writing", "Thinking"]),
              "status": st.sampled_from([1, 8, 16, 2 | 32]), "chats": st.lists(_chat, max_size=2),
              "defaultChat": st.sampled_from(CHATS), "inputNeeded": st.lists(st.just({"id": "x", "kind": "chatInput"}), max_size=1),
              "workingDirectories": st.just(["file:///w"])},
)


def _expected(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    old, new = _summary_fields(before), _summary_fields(after)
    return {key: value for key, value in new.items() if old.get(key) != value}


@settings(max_examples=400, deadline=None)
@given(before=_state, after=_state, share=st.sets(st.sampled_from(["status", "chats", "defaultChat", "inputNeeded", "title"])))
def test_the_changes_said_are_the_summary_fields_that_differ(before: dict[str, Any], after: dict[str, Any], share: set[str]) -> None:
    after = dict(after)
    for key in share:  # the reducers share what an action left alone: the same objects
        if key in before:
            after[key] = before[key]
        else:
            after.pop(key, None)
    assert _summary_changes(before, after) == _expected(before, after)
