"""Reading a chat's snapshot rows turn by turn, and the cursors that name a page of older turns."""

from __future__ import annotations

import json

from host.state.turn_pages import cursor_turn, split_turns, turn_of, turns_cursor

TURNS = [{"id": f"t{i}", "message": {"text": "x" * (i * 7)}} for i in range(4)]
HEAD = {"resource": "ahp-chat:/c", "title": "a \"turns\":[ title", "_meta": {"turns": [1]}}


def laid_out(cut: int) -> list[tuple[int, str]]:
    """Rows as a snapshot writes them: the opening, each turn in rows of at most ``cut``, the end."""
    head = json.dumps(HEAD, separators=(",", ":"))
    texts = [head[:-1] + ',"turns":[']
    for index, turn in enumerate(TURNS):
        text = ("," if index else "") + json.dumps(turn, separators=(",", ":"))
        texts += [text[start:start + cut] for start in range(0, len(text), cut)]
    texts.append("]}")
    return [(100 + index, text) for index, text in enumerate(texts)]


def test_each_turn_is_found_in_its_own_rows_also_when_cut() -> None:
    for cut in (1_000, 9):
        rows = laid_out(cut)
        state, groups = split_turns(rows)
        assert state == {**HEAD, "turns": TURNS}
        texts = dict(rows)
        assert [turn_of([texts[part] for part in group or []]) for group in groups] == TURNS
        assert all(group for group in groups)


def test_a_state_written_whole_parses_but_names_no_rows() -> None:
    whole = json.dumps({**HEAD, "turns": TURNS})
    state, groups = split_turns([(1, whole[:50]), (2, whole[50:])])
    assert state == {**HEAD, "turns": TURNS} and groups == [None] * len(TURNS)
    assert split_turns([(1, json.dumps({"resource": "r", "turns": []}))]) == ({"resource": "r", "turns": []}, [])


def test_cursors_name_a_turn_and_nothing_else_is_one() -> None:
    assert cursor_turn(turns_cursor("t-7")) == "t-7"
    for other in ("t-7", "turns-before:", None, 7, ""):
        assert cursor_turn(other) is None
