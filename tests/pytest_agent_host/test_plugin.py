"""The pytest plugin as a user runs it: pytest in a subprocess on a ten-line test and a committed
cassette (``user_suite``), the plugin loaded from its ``pytest11`` entry point.

Replayed offline, the recorded three-turn session passes; a changed user message, a changed file
the agent reads, or a changed set of tools fails it with a diff naming the difference; a cassette
recorded through the plugin holds no path of the recording machine and no key, and recording the
same session again writes the same file."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.pytest_agent_host.user_suite import CONFTEST, KINDS, ROOT, USER_TEST, fixture, write_suite

pytest_plugins = ["pytester"]


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    return pytester


def committed(pytester: pytest.Pytester, kind: str) -> Path:
    target = pytester.path / "cassettes" / "test_notes" / "test_three_turns.yaml"
    target.parent.mkdir(parents=True)
    shutil.copy(fixture(kind), target)
    return target


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args, timeout=300)


@pytest.mark.parametrize("kind", KINDS)
def test_the_committed_session_replays_offline_with_no_conftest(suite: pytest.Pytester, kind: str) -> None:
    committed(suite, kind)
    write_suite(suite.path, conftest=False)
    result = run(suite)
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("change", "where", "lines"),
    [
        (("Now count its lines", "Now count the lines"), "turn 2, model call 1", ["-*Now count its lines*", "+*Now count the lines*"]),
        (("one\\ntwo\\nthree\\n", "one\\ntwo\\nthree\\nfour\\n"), "turn 1, model call 2", ["-*3*three*", "+*4*four*"]),
    ],
    ids=["user message", "file the agent reads"],
)
def test_a_changed_session_fails_with_a_diff_naming_the_difference(suite: pytest.Pytester, change: tuple[str, str], where: str, lines: list[str]) -> None:
    committed(suite, "openai-chat")
    assert change[0] in USER_TEST
    write_suite(suite.path, conftest=False, test=USER_TEST.replace(*change))
    result = run(suite)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*ReplayFailed: The replay of test_three_turns.yaml diverged at {where}: the request differs from the recorded one.",
                                 "*--- recorded", "*+++ sent now", *[f"E  *{line}" for line in lines]])


def test_changed_tools_fail_with_a_diff_naming_the_tool(suite: pytest.Pytester) -> None:
    committed(suite, "anthropic")
    write_suite(suite.path, conftest=False)
    suite.makeconftest('import pytest\n\n@pytest.fixture\ndef agent_host_config():\n    return {"sessions": {"subagents": False}}\n')
    result = run(suite)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*diverged at turn 1, model call 1*", "E  *-*name: task"])


def test_a_turn_past_the_recording_says_the_cassette_is_used_up(suite: pytest.Pytester) -> None:
    committed(suite, "openai-chat")
    write_suite(suite.path, conftest=False, test=USER_TEST + '    session.send("One more thing")\n')
    result = run(suite)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*ReplayFailed: test_three_turns.yaml is used up: it recorded 3 turns and this is turn 4 of the session.*"])


def test_without_a_cassette_replay_fails_saying_how_to_record(suite: pytest.Pytester) -> None:
    write_suite(suite.path, conftest=False)
    result = run(suite)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*no cassette at *test_three_turns.yaml: record it with --record-mode=once*"])


@pytest.mark.parametrize("kind", KINDS)
def test_recording_keeps_no_path_or_key_and_records_the_same_session_the_same_way(suite: pytest.Pytester, kind: str) -> None:
    secret = "sk-live-THISKEYMUSTNOTLEAK0123456789"
    os.environ["FAKE_KIND"] = kind
    try:
        write_suite(suite.path)
        suite.path.joinpath("conftest.py").write_text(CONFTEST.replace("sk-fake-0123456789abcdefghij", secret))
        first = run(suite, "--record-mode=once")
        first.assert_outcomes(passed=1)
        cassette = suite.path / "cassettes" / "test_notes" / "test_three_turns.yaml"
        text = cassette.read_text()
        again = run(suite, "--record-mode=rewrite")
        again.assert_outcomes(passed=1)
        replayed = run(suite)
        replayed.assert_outcomes(passed=1)
    finally:
        del os.environ["FAKE_KIND"]
    assert secret not in text and "sk-live" not in text
    assert str(suite.path) not in text and "/tmp" not in text and str(Path.home()) not in text
    assert "${environment}" in text
    assert cassette.read_text() == text == fixture(kind).read_text()  # the committed one is this recording


KEY_TEST = '''\
def test_reads_a_key(agent_host, tmp_path):
    (tmp_path / "notes.txt").write_text("one\\nOPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx\\nthree\\n")
    session = agent_host.session(tmp_path)
    assert session.send("Please read notes.txt").text.startswith("The tool said: 1 one 2")
    session.assert_sent("OPENAI_API_KEY=<redacted>", turn=1)
'''


def test_a_key_in_a_file_the_agent_reads_is_redacted_and_the_session_still_replays(suite: pytest.Pytester) -> None:
    write_suite(suite.path, test=KEY_TEST)
    run(suite, "--record-mode=once").assert_outcomes(passed=1)
    text = (suite.path / "cassettes" / "test_notes" / "test_reads_a_key.yaml").read_text()
    assert "sk-abcdefghijklmnopqrstuvwx" not in text and "OPENAI_API_KEY=<redacted>" in text
    run(suite).assert_outcomes(passed=1)  # what is sent on replay is redacted the same way before it is compared


def test_new_episodes_replays_the_recorded_turns_and_appends_the_new_one(suite: pytest.Pytester) -> None:
    cassette = committed(suite, "openai-chat")
    before = cassette.read_text()
    longer = USER_TEST + '    assert session.send("And one more").text == "You said: And one more"\n'
    write_suite(suite.path, test=longer)
    run(suite).assert_outcomes(failed=1)  # none: turn 4 is not recorded
    run(suite, "--record-mode=new_episodes").assert_outcomes(passed=1)
    after = cassette.read_text()
    assert after.startswith(before[: before.index("\ntitle:")]) and "- turn: 4" in after
    run(suite).assert_outcomes(passed=1)  # and now all four replay
