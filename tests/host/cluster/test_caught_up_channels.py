"""``ClusterLog.caught_up`` given the channels that matter (``Store._gated_channels``' foreign
ones): what the server is asked before this process's frame numbered ``seq`` may leave. Only
those channels' groups and every owner marker while no marker lies below ``seq``; every subject
the follower takes once one does (a group changing hands: its records may be what a waiting
connection follows next). The server is a stand-in here (``_next_followed``: the first record on each
subject the follower is to bring); the real server's answers are ``test_taken_in_order.py``'s."""

from __future__ import annotations

import asyncio

from ahp.state.channels import default_chat_uri
from host.cluster.ordered_log import ClusterLog
from host.cluster.subjects import Subjects, token

ELSEWHERE = "ahp-session:/elsewhere"


class Core:
    subjects = Subjects()
    groups_changed = 0


def following_log(found: dict[str, int]) -> tuple[ClusterLog, dict[int, list[str]]]:
    """A log whose follower handed over #10, and a server whose next record on a subject past it
    is ``found[subject]`` (none when absent); the subjects asked about, per round (by where the
    round starts: past what the follower handed over)."""
    log = ClusterLog("nats://127.0.0.1:1", holder="here")
    log._core = Core()  # type: ignore[assignment]
    log._following = True
    log._followed = 10
    asked: dict[int, list[str]] = {}

    def follow_subjects() -> list[str]:
        return [log.core.subjects.coarse]

    async def next_followed(subjects: list[str], start: int, below: int) -> list[int]:
        asked.setdefault(start, []).extend(subjects)
        return [number if start <= number < below else 0 for number in (found.get(subject, 0) for subject in subjects)]

    log._follow_subjects = follow_subjects  # type: ignore[method-assign]
    log._next_followed = next_followed  # type: ignore[method-assign]
    return log, asked


ROOT_GROUP_SUBJECTS = f"ahp.log.{token('ahp-host:')}.*"
MARKERS = "ahp.log.*.~"


async def test_only_the_groups_of_the_channels_that_matter_and_the_markers_are_asked_about() -> None:
    log, asked = following_log({"ahp.log.*.*": 12})  # another session's record the connections do not follow
    waiting = log.caught_up(20, ["ahp-root://"])
    assert waiting is not None
    await asyncio.wait_for(waiting, 1)  # not held for the record of a session no waiting connection follows
    assert asked == {11: [ROOT_GROUP_SUBJECTS, MARKERS]}
    assert log.caught_up(20, ["ahp-root://"]) is None  # known already
    assert log.caught_up(20, [default_chat_uri(ELSEWHERE)]) is not None  # other channels: asked again


async def test_a_record_of_a_channel_that_matters_below_the_frame_is_waited_for() -> None:
    log, asked = following_log({ROOT_GROUP_SUBJECTS: 14})
    waiting = log.caught_up(20, ["ahp-root://"])
    assert waiting is not None
    await asyncio.sleep(0.01)
    assert not waiting.done()  # the follower has not brought #14 yet
    log._followed = 14
    log._woken(14, False)
    await asyncio.wait_for(waiting, 1)


async def test_once_a_marker_lies_below_the_frame_every_subject_the_follower_takes_is_asked_about() -> None:
    log, asked = following_log({MARKERS: 13, "ahp.log.*.*": 16})
    waiting = log.caught_up(20, ["ahp-root://"])
    assert waiting is not None
    await asyncio.sleep(0.01)
    log._followed = 13  # the marker handed over: a group changed hands below #20
    log._woken(13, True)
    await asyncio.sleep(0.01)
    assert asked == {11: [ROOT_GROUP_SUBJECTS, MARKERS], 14: ["ahp.log.*.*"]}
    assert not waiting.done()  # #16, of whatever group, comes first now
    log._followed = 16
    log._woken(16, False)
    await asyncio.wait_for(waiting, 1)


async def test_a_later_frame_asks_only_past_what_an_earlier_answer_covered() -> None:
    # The follower hands over other processes' records only: while this process streams its own,
    # it stays at #10, and the server would look at every message from #11 on for every frame.
    log, asked = following_log({})
    for seq in (20, 30):
        waiting = log.caught_up(seq, ["ahp-root://"])
        assert waiting is not None
        await asyncio.wait_for(waiting, 1)
    assert asked == {11: [ROOT_GROUP_SUBJECTS, MARKERS], 20: [ROOT_GROUP_SUBJECTS, MARKERS]}
    waiting = log.caught_up(40, [default_chat_uri(ELSEWHERE)])  # other groups: from what the follower handed over
    assert waiting is not None
    await asyncio.wait_for(waiting, 1)
    assert len(asked[11]) == 4
    waiting = log.caught_up(50)  # every subject the follower takes: from what it handed over too
    assert waiting is not None
    await asyncio.wait_for(waiting, 1)
    assert asked[11][-1] == "ahp.log.*.*"
    waiting = log.caught_up(60)  # and then past the answer for #50, on every subject
    assert waiting is not None
    await asyncio.wait_for(waiting, 1)
    assert asked[50] == ["ahp.log.*.*"]
    waiting = log.caught_up(70, ["ahp-root://"])  # covered up to #60 on every subject: the root's from there
    assert waiting is not None
    await asyncio.wait_for(waiting, 1)
    assert asked[60] == [ROOT_GROUP_SUBJECTS, MARKERS]


async def test_a_question_given_up_on_does_not_move_where_the_next_one_starts() -> None:
    log, asked = following_log({})
    asking = log._next_followed

    async def unreachable(subject: str, start: int, below: int) -> int:
        raise TimeoutError("NATS did not answer")

    log._next_followed = unreachable  # type: ignore[method-assign]
    waiting = log.caught_up(20)
    assert waiting is not None
    await asyncio.wait_for(waiting, 1)  # not held for ever: the frames leave
    log._next_followed = asking  # type: ignore[method-assign]
    waiting = log.caught_up(30)
    assert waiting is not None
    await asyncio.wait_for(waiting, 1)
    assert asked == {11: ["ahp.log.*.*"]}  # from what the follower handed over, not from #20
