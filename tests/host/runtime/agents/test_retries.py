"""host.runtime.agents.retries: when a failed model call is tried again, and after how long (pure)."""

from __future__ import annotations

import pytest

from host.runtime.agents.retries import retry_after, too_long

BASE = {"retryable": True, "streamed": False, "retries": 3, "base_delay": 1.0, "asked": None}


@pytest.mark.parametrize("attempt, wait", [(0, 1.0), (1, 2.0), (2, 4.0)])
def test_a_retryable_failure_waits_twice_as_long_each_time(attempt: int, wait: float) -> None:
    assert retry_after(**{**BASE, "attempt": attempt}) == wait


def test_the_providers_own_wait_wins_over_the_backoff() -> None:
    assert retry_after(**{**BASE, "attempt": 2, "asked": 0.5}) == 0.5


def test_no_retry_once_the_retries_are_spent() -> None:
    assert retry_after(**{**BASE, "attempt": 3}) is None


def test_no_retry_after_part_of_the_answer_streamed() -> None:
    assert retry_after(**{**BASE, "attempt": 0, "streamed": True}) is None


def test_no_retry_for_an_error_that_would_fail_again() -> None:
    assert retry_after(**{**BASE, "attempt": 0, "retryable": False}) is None


def test_a_wait_past_the_hosts_limit_is_too_long_and_one_at_it_is_not() -> None:
    assert too_long(61.0, 60.0) and not too_long(60.0, 60.0)
