"""The user's side of the plugin tests: a conftest and a ten-line test, as a user would write them.

``tests/pytest_agent_host/test_plugin.py`` writes these into a fresh folder and runs pytest on them
in a subprocess (the plugin is loaded from its entry point, as for any user). The committed
cassettes under ``cassettes/<kind>/`` were recorded from them against ``fake_provider``:
``python -m tests.pytest_agent_host.user_suite`` records them again (``--record-mode=rewrite``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
KINDS = ("openai-chat", "anthropic")

USER_TEST = '''\
def test_three_turns(agent_host, tmp_path):
    (tmp_path / "notes.txt").write_text("one\\ntwo\\nthree\\n")
    session = agent_host.session(tmp_path)
    assert session.send("Please read notes.txt").text == "The tool said: 1 one 2 two 3 three"
    assert "3 notes.txt" in session.send("Now count its lines").text
    assert session.send("Thanks, that is all").text == "You said: Thanks, that is all"
    session.assert_sent("wc -l notes.txt", turn=2)
    assert "Thanks, that is all" in str(session.messages(turn=3)[-1])
'''
"""The whole user test: three turns, two of them with a tool call (read_file, then shell)."""

CONFTEST = '''\
import os

import pytest

from tests.pytest_agent_host.fake_provider import FakeProvider

KIND = os.environ.get("FAKE_KIND", "openai-chat")


@pytest.fixture(scope="session")
def fake():
    with FakeProvider() as served:
        yield served


@pytest.fixture
def agent_host_agent(request):
    if request.config.getoption("--record-mode") in (None, "none"):
        return {"kind": KIND, "models": [{"id": "fake-model-1"}]}  # replay: no provider runs
    fake = request.getfixturevalue("fake")
    base_url = fake.base_url if KIND == "openai-chat" else fake.base_url.removesuffix("/v1")
    return {"kind": KIND, "base_url": base_url, "api_key": os.environ.get("FAKE_KEY", "sk-fake-0123456789abcdefghij"),
            "models": [{"id": "fake-model-1"}]}
'''
"""Recording needs the live agent's table; replay takes the same table as a replay agent."""


def fixture(kind: str) -> Path:
    """The committed cassette recorded with ``kind``."""
    return HERE / "cassettes" / kind / "test_notes" / "test_three_turns.yaml"


def write_suite(folder: Path, *, conftest: bool = True, test: str = USER_TEST) -> None:
    (folder / "test_notes.py").write_text(test, encoding="utf-8")
    if conftest:
        (folder / "conftest.py").write_text(CONFTEST, encoding="utf-8")


def main() -> int:
    for kind in KINDS:
        with tempfile.TemporaryDirectory() as temporary:
            folder = Path(temporary)
            write_suite(folder)
            env = {"PYTHONPATH": str(ROOT), "FAKE_KIND": kind, "PATH": "/usr/bin:/bin"}
            done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--record-mode=rewrite"],
                                  cwd=folder, env=env, check=False)
            if done.returncode != 0:
                return done.returncode
            target = fixture(kind)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(folder / "cassettes" / "test_notes" / "test_three_turns.yaml", target)
            print(f"recorded {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
