"""providers._fast_events: the streamed PartDelta built without validation is the one pydantic builds."""

from __future__ import annotations

import pydantic
import pytest

from providers import _fast_events
from providers.accumulator import StreamAccumulator
from providers.events import PartDelta, StreamEventAdapter


def test_this_pydantic_takes_the_fast_way_and_it_builds_what_pydantic_builds() -> None:
    assert _fast_events.FAST
    made = _fast_events.part_delta(2, "reasoning", "thinking…")
    validated = PartDelta(index=2, part_kind="reasoning", content="thinking…")
    assert made == validated
    assert made.model_dump() == validated.model_dump()
    assert StreamEventAdapter.dump_json(made) == StreamEventAdapter.dump_json(validated)
    assert made.model_fields_set == validated.model_fields_set
    assert made.model_copy(update={"content": "more"}) == PartDelta(index=2, part_kind="reasoning", content="more")
    with pytest.raises(pydantic.ValidationError):
        made.content = "changed"  # frozen, as every event is


def test_a_fast_way_that_builds_something_else_is_not_taken() -> None:
    def wrong(index: int, part_kind: str, content: str) -> PartDelta:
        return PartDelta(index=index + 1, part_kind=part_kind, content=content)  # type: ignore[arg-type]

    def broken(index: int, part_kind: str, content: str) -> PartDelta:
        raise AttributeError("__pydantic_fields_set__")

    assert _fast_events._same(_fast_events._constructed_part_delta)
    assert not _fast_events._same(wrong)
    assert not _fast_events._same(broken)


def test_the_accumulator_streams_the_same_deltas_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    def deltas() -> list[PartDelta]:
        acc = StreamAccumulator()
        acc.start("a", "text")
        return [acc.delta("a", piece) for piece in ("one", " two")]

    fast = deltas()
    monkeypatch.setattr("providers.accumulator.part_delta", _fast_events.plain_part_delta)
    assert deltas() == fast == [PartDelta(index=0, part_kind="text", content="one"), PartDelta(index=0, part_kind="text", content=" two")]


def test_content_that_is_not_text_is_still_refused() -> None:
    acc = StreamAccumulator()
    acc.start("a", "text")
    with pytest.raises(pydantic.ValidationError):
        acc.delta("a", 42)  # type: ignore[arg-type]
