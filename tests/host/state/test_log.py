"""The ordered-log port's errors: what a caller catches when a log refuses an append."""

from __future__ import annotations

from host.errors import AgentHostError, JournalError
from host.state.log import LogError, LogUnavailable, NotOwner


def test_a_fenced_append_says_which_session_and_who_runs_it() -> None:
    error = NotOwner("ahp-session:/s", "host-b:4242")
    assert isinstance(error, LogError) and isinstance(error, JournalError) and isinstance(error, AgentHostError)
    assert str(error) == "ahp-session:/s is run by host-b:4242: this process may not write to it"
    assert (error.channel, error.owner) == ("ahp-session:/s", "host-b:4242")
    assert "another process" in str(NotOwner("ahp-session:/s", None))


def test_an_unreachable_log_is_a_log_error_the_host_reports_as_a_journal_error() -> None:
    assert issubclass(LogUnavailable, LogError) and issubclass(LogError, JournalError)
