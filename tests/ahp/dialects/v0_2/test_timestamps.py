"""0.2.0 epoch milliseconds and 0.9.0 ISO strings convert both ways without loss."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ahp.dialects.v0_2.timestamps import EPOCH_ISO, iso_to_ms, ms_to_iso
from ahp.state.clock import iso_timestamp


@pytest.mark.parametrize(
    ("ms", "iso"),
    [
        (0, "1970-01-01T00:00:00.000Z"),
        (9999, "1970-01-01T00:00:09.999Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (1_741_632_123_456, "2025-03-10T18:42:03.456Z"),
        (951_782_400_000, "2000-02-29T00:00:00.000Z"),
        # Outside 0000-9999 JavaScript writes six-digit signed years.
        (253_402_300_800_000, "+010000-01-01T00:00:00.000Z"),
        (-62_198_755_200_001, "-000002-12-31T23:59:59.999Z"),
        (8_640_000_000_000_000, "+275760-09-13T00:00:00.000Z"),
        # A fraction of a millisecond is kept in further digits.
        (1000.5, "1970-01-01T00:00:01.0005Z"),
        (-0.25, "1969-12-31T23:59:59.99975Z"),
    ],
)
def test_ms_to_iso_writes_what_javascript_writes_and_reads_back(ms, iso):
    assert ms_to_iso(ms) == iso
    assert iso_to_ms(iso) == ms


@given(st.integers(min_value=-(10**17), max_value=10**17))
def test_every_whole_millisecond_survives_the_round_trip(ms):
    back = iso_to_ms(ms_to_iso(ms))
    assert back == ms and type(back) is int


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e16, max_value=1e16))
def test_every_finite_number_survives_the_round_trip(ms):
    assert iso_to_ms(ms_to_iso(ms)) == ms


@given(st.integers(min_value=-30_610_224_000_000, max_value=253_402_300_799_999))
def test_from_year_1000_to_9999_it_agrees_with_the_internal_model_clock(ms):
    assert ms_to_iso(ms) == iso_timestamp(ms)


def test_other_iso_spellings_read_as_the_same_instant():
    assert iso_to_ms("2025-03-10T18:42:03Z") == 1_741_632_123_000
    assert iso_to_ms("2025-03-10T19:42:03.000+01:00") == 1_741_632_123_000
    assert iso_to_ms("2025-03-10T18:42Z") == 1_741_632_120_000
    # Microseconds are not lost: the result is the nearest float.
    assert iso_to_ms("1970-01-01T00:00:00.000250Z") == 0.25


@pytest.mark.parametrize(
    "text",
    ["", "yesterday", "2025-03-10", "2025-03-10T18:42:03", "2025-02-30T00:00:00Z", "2025-13-01T00:00:00Z",
     "2025-03-10T24:00:00Z", "2025-03-10T18:42:03+25:00", 1000, None],
)
def test_what_is_not_an_iso_date_time_reads_as_none(text):
    assert iso_to_ms(text) is None


@pytest.mark.parametrize("value", [True, None, "1000", float("nan"), float("inf")])
def test_ms_to_iso_refuses_what_is_not_a_finite_number(value):
    with pytest.raises(ValueError):
        ms_to_iso(value)


def test_the_epoch_constant_is_instant_zero():
    assert iso_to_ms(EPOCH_ISO) == 0
    assert EPOCH_ISO == datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
