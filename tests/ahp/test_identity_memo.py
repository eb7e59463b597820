"""``IdentityMemo`` works a value out once per object, never gives one object's value for another
(an equal one, or one made where a let-go object was), and keeps only the latest objects."""

from __future__ import annotations

from ahp.identity_memo import IdentityMemo


def test_the_same_object_is_worked_out_once_and_an_equal_one_again() -> None:
    calls: list[dict] = []

    def shown(turn: dict) -> str:
        calls.append(turn)
        return f"turn {turn['id']}"

    memo = IdentityMemo(shown, 10)
    turn, twin = {"id": 1}, {"id": 1}
    assert [memo(turn), memo(turn), memo(twin)] == ["turn 1", "turn 1", "turn 1"]
    assert [call is turn for call in calls] == [True, False]


def test_only_the_latest_objects_are_kept_and_a_let_go_one_is_worked_out_again() -> None:
    calls: list[int] = []

    def length(items: list) -> int:
        calls.append(len(items))
        return len(items)

    memo = IdentityMemo(length, 2)
    lists = [[0] * n for n in range(4)]
    assert [memo(items) for items in lists] == [0, 1, 2, 3]
    assert len(memo) == 2
    assert memo(lists[0]) == 0 and memo(lists[3]) == 3
    assert calls == [0, 1, 2, 3, 0]


def test_a_new_object_never_gets_the_value_of_one_that_had_its_identity() -> None:
    memo = IdentityMemo(lambda turn: turn["text"], 1_000)
    seen = [memo({"text": f"turn {index}"}) for index in range(200)]  # each made and dropped: ids come back
    assert seen == [f"turn {index}" for index in range(200)]
