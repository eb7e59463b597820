"""Where a chat's older turns live on disk, and the cursors that name them (AHP ``fetchTurns``).

A chat keeps only its recent turns in memory (``host.state.store``); the older ones stay in the rows the
journal's snapshots already write turn by turn (``channel_state_parts``: a chat's state JSON is an
opening ``{...,"turns":[``, then each turn's text, with a leading ``,`` after the first, cut in
parts of at most ``PART_CHARS`` characters and each turn starting a part of its own, then
``]}``). This module is the reading side of that layout, with no I/O of its own:

* ``split_turns`` takes the ``(part id, text)`` rows of a chat's snapshot and gives the state and,
  for each turn, the ids of the rows that hold it (None for a turn that does not start and end on
  row boundaries: a journal written whole, by an upgrade or an older format, until the next
  snapshot writes it turn by turn);
* ``turn_of`` reads one turn back from its rows' texts;
* ``turns_cursor`` / ``cursor_turn`` make and read the opaque ``turnsNextCursor``: it names the
  oldest turn the chat's state holds, so "the page before it" stays meaningful while other clients
  page in meanwhile (their page is then already loaded) and stops meaning anything once that turn
  is truncated away.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["CURSOR_PREFIX", "cursor_turn", "split_turns", "turn_of", "turns_cursor"]

CURSOR_PREFIX = "turns-before:"
"""What every ``turnsNextCursor`` this host gives out starts with (followed by a turn id)."""

_OPENING = '"turns":['
_DECODER = json.JSONDecoder()


def turns_cursor(oldest_turn_id: Any) -> str:
    """The cursor for "the turns before ``oldest_turn_id``"."""
    return f"{CURSOR_PREFIX}{oldest_turn_id}"


def cursor_turn(cursor: Any) -> str | None:
    """The turn id a cursor of ours names, None when it is not one of ours."""
    if not isinstance(cursor, str) or not cursor.startswith(CURSOR_PREFIX) or len(cursor) == len(CURSOR_PREFIX):
        return None
    return cursor[len(CURSOR_PREFIX):]


def turn_of(texts: list[str]) -> dict[str, Any]:
    """A turn from the texts of the rows that hold it (the first may start with the separator)."""
    text = "".join(texts)
    return json.loads(text[1:] if text.startswith(",") else text)


def split_turns(parts: list[tuple[int, str]]) -> tuple[dict[str, Any], list[list[int] | None]]:
    """A chat's state from its snapshot rows, and the row ids of each of its turns (see the module
    docstring; a state not laid out turn by turn is parsed whole, every turn's rows None)."""
    text = "".join(body for _, body in parts)
    ends: list[int] = []
    offset = 0
    for _, body in parts:
        offset += len(body)
        ends.append(offset)
    opening = _opening_end(text, ends)
    if opening is None:
        return _whole(text)
    head = json.loads(text[:opening] + "]}")
    starts = {0: 0}
    starts.update({end: index + 1 for index, end in enumerate(ends)})
    turns: list[Any] = []
    groups: list[list[int] | None] = []
    position = opening
    try:
        while text[position] != "]":
            begin = position
            if turns:
                if text[position] != ",":
                    return _whole(text)
                position += 1
            turn, position = _DECODER.raw_decode(text, position)
            turns.append(turn)
            first, last = starts.get(begin), starts.get(position)
            groups.append([part for part, _ in parts[first:last]] if first is not None and last is not None else None)
    except (IndexError, ValueError):
        return _whole(text)
    if text[position:] != "]}":
        return _whole(text)
    head["turns"] = turns
    return head, groups


def _opening_end(text: str, ends: list[int]) -> int | None:
    """Where the turns begin: the first row boundary after an opening that parses as a state
    whose last key is an empty ``turns``."""
    for end in ends:
        if not text.endswith(_OPENING, 0, end):
            continue
        try:
            head = json.loads(text[:end] + "]}")
        except ValueError:
            continue
        if isinstance(head, dict) and head.get("turns") == [] and next(reversed(head)) == "turns":
            return end
    return None


def _whole(text: str) -> tuple[dict[str, Any], list[list[int] | None]]:
    state = json.loads(text)
    turns = state.get("turns") if isinstance(state, dict) else None
    return state, [None] * (len(turns) if isinstance(turns, list) else 0)
