"""What a session's changesets look like, without I/O: their URIs, their operations, and how
recorded file edits fold into entries.

Each session that changed files has (PROTOCOL.md §11, ``ChangesetSummary.uriTemplate``):

* the session changeset ``ahp-changeset:/<session id>`` — every file the session's tools changed
  and the user has not yet kept or undone: ``before`` is the file before the first such change,
  ``after`` after the latest; ``_meta.turns`` lists the turns that changed it;
* one changeset per turn ``ahp-changeset:/<session id>/turn/<turn id>`` — the files that turn
  changed, from before its first change to after its last (the turn's checkpoint).

An entry's id is the file's URI. A file whose net change is nothing (changed and changed back)
leaves the changeset. When a tool's edit does not start from the content the entry ended with,
the file was edited outside the agent in between: the entry keeps ``_meta.outsideEdits: true``,
and undoing it as a whole is refused (it would undo those edits too). Conflicts found by an
operation are shown on the entry as ``_meta.conflict`` (a sentence for the user) until the entry
changes again.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, unquote

__all__ = [
    "SCHEME",
    "SESSION_OPERATIONS",
    "TURN_OPERATIONS",
    "catalogue",
    "changeset_owner",
    "entry_id",
    "fold",
    "session_changeset",
    "turn_changeset",
    "turn_template",
]

SCHEME = "ahp-changeset:/"
_TURN = "/turn/"

SESSION_OPERATIONS = [
    {"id": "accept", "label": "Keep", "description": "Keep these changes and take them off the review list.",
     "scopes": ["changeset", "resource", "range"], "icon": "check", "status": "idle"},
    {"id": "reject", "label": "Undo", "description": "Put the files back as they were before the agent changed them.",
     "scopes": ["changeset", "resource", "range"], "icon": "discard", "status": "idle",
     "confirmation": "Undo the agent's changes to these files? Files edited since by someone else are left alone."},
]
TURN_OPERATIONS = [
    {"id": "accept", "label": "Keep", "description": "Keep this turn's changes and take them off the review list.",
     "scopes": ["changeset", "resource", "range"], "icon": "check", "status": "idle"},
    {"id": "revert", "label": "Undo this turn", "description": "Put the files this turn changed back as they were before it.",
     "scopes": ["changeset", "resource", "range"], "icon": "history", "status": "idle",
     "confirmation": "Undo this turn's changes? Files changed since by a later turn or by someone else are left alone."},
]


def _session_id(session: str) -> str:
    return session.split(":/", 1)[1]


def session_changeset(session: str) -> str:
    return SCHEME + _session_id(session)


def turn_changeset(session: str, turn_id: str) -> str:
    return SCHEME + _session_id(session) + _TURN + quote(turn_id, safe="")


def turn_template(session: str) -> str:
    return SCHEME + _session_id(session) + _TURN + "{turnId}"


def changeset_owner(uri: Any) -> tuple[str, str | None] | None:
    """``(session URI, turn id or None)`` for a changeset URI of this host, else None."""
    if not isinstance(uri, str) or not uri.startswith(SCHEME):
        return None
    rest = uri[len(SCHEME):]
    session_id, _, turn = rest.partition(_TURN)
    if not session_id or "/" in session_id:
        return None
    return "ahp-session:/" + session_id, (unquote(turn) if turn else None)


def entry_id(edit: dict[str, Any]) -> str | None:
    side = edit.get("after") or edit.get("before")
    return side.get("uri") if isinstance(side, dict) else None


def _content_uri(side: Any) -> str | None:
    return side["content"]["uri"] if isinstance(side, dict) else None


def fold(
    entry: dict[str, Any] | None, edit: dict[str, Any], turn_id: str | None, diff: dict[str, int], *, undo: bool = False,
) -> dict[str, Any] | None:
    """The entry after ``edit`` happened on top of ``entry`` (None: nothing left to show).

    ``diff`` is the line count between the entry's original ``before`` and the edit's ``after``,
    which only the caller (who can read the content) can compute. ``undo`` marks an edit the host
    made itself (undoing a turn), which continues the entry by construction.
    """
    file_id = entry_id(edit)
    before = entry["edit"].get("before") if entry is not None else edit.get("before")
    after = edit.get("after")
    if entry is not None and "before" not in entry["edit"] and after is None:
        return None  # created, then deleted
    if _content_uri(before) is not None and _content_uri(before) == _content_uri(after):
        return None  # changed back to what it was
    new_edit: dict[str, Any] = {}
    if before is not None:
        new_edit["before"] = before
    if after is not None:
        new_edit["after"] = after
    new_edit["diff"] = diff
    meta = (entry or {}).get("_meta") or {}
    turns = list(meta.get("turns") or [])
    if turn_id is not None and turn_id not in turns:
        turns.append(turn_id)
    new_meta: dict[str, Any] = {"turns": turns}
    broken = not undo and entry is not None and _content_uri(entry["edit"].get("after")) != _content_uri(edit.get("before"))
    if meta.get("outsideEdits") or broken:
        new_meta["outsideEdits"] = True
    return {"id": file_id, "edit": new_edit, "_meta": new_meta}


def catalogue(session: str, files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The session's ``Changeset`` catalogue: the review list (``changeKind`` "session") with its
    counts, and the turns ("turn"). The counts are 0.2.0's ``ChangesetSummary`` fields, which
    newer clients ignore."""
    added = sum(int((f["edit"].get("diff") or {}).get("added", 0)) for f in files)
    removed = sum(int((f["edit"].get("diff") or {}).get("removed", 0)) for f in files)
    return [
        {"label": "Session changes", "uriTemplate": session_changeset(session), "changeKind": "session",
         "description": "Files this session's tools changed that you have not kept or undone yet.",
         "additions": added, "deletions": removed, "files": len(files)},
        {"label": "Changes by turn", "uriTemplate": turn_template(session), "changeKind": "turn",
         "description": "What one turn changed; undo it to go back to before that turn."},
    ]
