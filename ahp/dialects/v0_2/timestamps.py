"""Timestamps between the two models: AHP 0.2.0 writes epoch milliseconds (numbers), the internal
(0.9.0) model ISO 8601 strings.

Contract:

* ``ms_to_iso`` writes what JavaScript's ``Date.prototype.toISOString`` writes for a whole number of
  milliseconds (``"1970-01-01T00:00:09.999Z"``; years outside 0..9999 as ``+YYYYYY``/``-YYYYYY``),
  for any integer, not only Python's ``datetime`` range. A number with a fraction of a millisecond
  keeps it as extra fraction digits (``1000.5`` -> ``"1970-01-01T00:00:01.0005Z"``), so that
  ``iso_to_ms(ms_to_iso(x)) == x`` for every finite number ``x``.
* ``iso_to_ms`` reads any ISO 8601 date-time with a ``Z`` or ``±HH:MM`` offset and any number of
  fraction digits, and returns ``None`` for anything else (never raises). It is exact: an ``int``
  when the instant is a whole millisecond, else the nearest ``float``.
* Pure integer and ``Decimal`` arithmetic: no clock, no locale, no ``datetime`` range limits.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation, localcontext
from functools import lru_cache

__all__ = ["EPOCH_ISO", "iso_to_ms", "ms_to_iso"]

EPOCH_ISO = "1970-01-01T00:00:00.000Z"
"""The instant 0; what a projection writes where a source time stamp is missing or unreadable."""

_MS_PER_DAY = 86_400_000
_EXACT_DIGITS = 800

_ISO = re.compile(
    r"(?P<year>[+-]\d{6,}|\d{4})-(?P<month>\d{2})-(?P<day>\d{2})"
    r"T(?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:\.(?P<fraction>\d+))?)?"
    r"(?P<zone>Z|z|[+-]\d{2}:\d{2})"
)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """The proleptic Gregorian (year, month, day) ``days`` after 1970-01-01."""
    days += 719468
    era = days // 146097
    day_of_era = days - era * 146097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted_month = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * shifted_month + 2) // 5 + 1
    month = shifted_month + 3 if shifted_month < 10 else shifted_month - 9
    return year_of_era + era * 400 + (month <= 2), month, day


def _year_text(year: int) -> str:
    if 0 <= year <= 9999:
        return f"{year:04d}"
    return f"{'+' if year > 0 else '-'}{abs(year):06d}"


def ms_to_iso(ms: int | float) -> str:
    """The ISO 8601 text of an epoch-milliseconds number; ``ValueError`` if it is not a finite number."""
    if isinstance(ms, bool) or not isinstance(ms, (int, float)) or (isinstance(ms, float) and not math.isfinite(ms)):
        raise ValueError(f"not a finite epoch-milliseconds number: {ms!r}")
    exact = Decimal(ms) if isinstance(ms, int) else Decimal(repr(ms))
    whole = int(exact.to_integral_value(rounding="ROUND_FLOOR"))
    with localcontext() as context:
        context.prec = _EXACT_DIGITS  # enough for any float's digits below a millisecond
        beyond_ms = exact - whole  # in [0, 1): the part finer than a millisecond
    days, ms_of_day = divmod(whole, _MS_PER_DAY)
    year, month, day = _civil_from_days(days)
    seconds_of_day, millis = divmod(ms_of_day, 1000)
    hours, rest = divmod(seconds_of_day, 3600)
    minutes, seconds = divmod(rest, 60)
    fraction = f"{millis:03d}"
    if beyond_ms:
        fraction += format(beyond_ms, "f")[2:].rstrip("0")  # "0.5" -> "5"
    return f"{_year_text(year)}-{month:02d}-{day:02d}T{hours:02d}:{minutes:02d}:{seconds:02d}.{fraction}Z"


def iso_to_ms(text: object) -> int | float | None:
    """Epoch milliseconds of an ISO 8601 date-time; ``None`` when ``text`` is not one."""
    return _iso_to_ms(text) if isinstance(text, str) else None


@lru_cache(maxsize=4096)
def _iso_to_ms(text: str) -> int | float | None:
    """``iso_to_ms`` of a string, kept for the latest ones: a session's creation and modification
    times are read again for each of its summaries, which change many times a turn."""
    match = _ISO.fullmatch(text)
    if match is None:
        return None
    year, month, day = int(match["year"]), int(match["month"]), int(match["day"])
    hour, minute, second = int(match["hour"]), int(match["minute"]), int(match["second"] or 0)
    if not (1 <= month <= 12 and 1 <= day <= _days_in_month(year, month)):
        return None
    if hour > 23 or minute > 59 or second > 59:
        return None
    offset_minutes = 0
    zone = match["zone"]
    if zone not in ("Z", "z"):
        zone_hours, zone_minutes = int(zone[1:3]), int(zone[4:6])
        if zone_hours > 23 or zone_minutes > 59:
            return None
        offset_minutes = (zone_hours * 60 + zone_minutes) * (1 if zone[0] == "+" else -1)
    whole_seconds = _days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
    whole_seconds -= offset_minutes * 60
    fraction = match["fraction"] or ""
    with localcontext() as context:
        context.prec = _EXACT_DIGITS + len(fraction) + len(str(whole_seconds))
        try:
            total = Decimal(whole_seconds * 1000) + (Decimal("0." + fraction).scaleb(3) if fraction else 0)
        except InvalidOperation:  # pragma: no cover - the pattern only admits digits
            return None
    if total == total.to_integral_value():
        return int(total)
    return float(total)


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31
