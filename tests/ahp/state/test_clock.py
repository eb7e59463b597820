"""ISO-8601 timestamps as JavaScript's ``toISOString`` writes them, computed from data only."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ahp.state.clock import add_milliseconds, iso_timestamp, parse_timestamp


@pytest.mark.parametrize(
    ("epoch_ms", "text"),
    [
        (0, "1970-01-01T00:00:00.000Z"),
        (9999, "1970-01-01T00:00:09.999Z"),
        (1_788_000_000_123, "2026-08-29T10:40:00.123Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (1.9, "1970-01-01T00:00:00.001Z"),
    ],
)
def test_iso_timestamp(epoch_ms, text):
    assert iso_timestamp(epoch_ms) == text


@pytest.mark.parametrize("value", [None, True, "5", float("nan"), float("inf"), 10**20])
def test_iso_timestamp_of_something_that_is_not_a_time_is_none(value):
    assert iso_timestamp(value) is None


@given(st.integers(-(10**13), 10**13))
def test_parse_is_the_inverse_of_format(epoch_ms):
    assert parse_timestamp(iso_timestamp(epoch_ms)) == epoch_ms


def test_parse_reads_offsets_and_rejects_junk():
    assert parse_timestamp("2026-01-01T05:00:00.000+05:00") == parse_timestamp("2026-01-01T00:00:00.000Z")
    assert parse_timestamp("2026-01-01T00:00:00") == parse_timestamp("2026-01-01T00:00:00.000Z")
    for junk in ("", "yesterday", None, 12, "2026-13-01T00:00:00Z"):
        assert parse_timestamp(junk) is None


def test_add_milliseconds():
    assert add_milliseconds("1970-01-01T00:00:01.000Z", 8999) == "1970-01-01T00:00:09.999Z"
    assert add_milliseconds("2026-08-28T23:59:59.500Z", 500) == "2026-08-29T00:00:00.000Z"
    assert add_milliseconds("later", 1) is None
    assert add_milliseconds("1970-01-01T00:00:01.000Z", "1") is None
