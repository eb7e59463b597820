"""What the model is told about where it works: the <environment> preamble and instruction files."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from pathlib import Path

import pytest

from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS
from host.runtime.agents.preamble import render_preamble
from tests.conftest import FrameChecker
from tests.host.runtime.agents.test_faults import fake_agent_toml
from tests.providers.fake_server import FakeProviderServer, Reply, chat_sse

from .harness import config_for, idle, ready_session, serving
from .harness import run_chat_turn as run_turn


def _system_prompt(request_body: dict) -> str:
    messages = request_body["messages"]
    return "\n".join(m["content"] for m in messages if m["role"] in ("system", "developer"))


def _git(directory: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(directory), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"})


async def _first_request(tmp_path: Path, checker: FrameChecker, project: Path, **sessions: object) -> dict:
    async with FakeProviderServer([Reply(200, chat_sse("ok"))], base_path="/v1") as server:
        config = config_for(tmp_path / "host", toml=fake_agent_toml(server.base_url), sessions=dict(sessions))
        async with serving(config, checker, versions=PROTOCOL_VERSIONS) as (_, client):
            session = await ready_session(client, provider="fake", working_directory=project.as_uri())
            await run_turn(client, session, "hello")
            await idle(client, default_chat_uri(session))
        return server.requests[0].json()


@pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode != 0, reason="git is not installed")
async def test_the_model_is_told_the_clients_directory_git_state_and_instruction_files_once(tmp_path: Path, frame_checker: FrameChecker) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    (project / "docs").mkdir()
    (project / "docs" / "style.md").write_text("Use four spaces.\n")
    # The common layout: CLAUDE.md is a symlink to AGENTS.md, which imports a style guide.
    (project / "AGENTS.md").write_text("# Shop\nRun `make test` before committing.\nSee @docs/style.md and @../outside.md.\n")
    (tmp_path / "outside.md").write_text("SECRET OUTSIDE THE PROJECT")
    (project / "CLAUDE.md").symlink_to("AGENTS.md")
    _git(project, "init", "-q", "-b", "feature/cart")
    _git(project, "add", "AGENTS.md")
    _git(project, "commit", "-qm", "init")
    (project / "cart.py").write_text("x = 1\n")

    system = _system_prompt(await _first_request(tmp_path, frame_checker, project))

    assert f"Working directory: {project.resolve()}" in system
    assert "Git branch: feature/cart" in system
    assert "?? cart.py" in system
    assert f"Date: {dt.date.today().isoformat()}" in system
    assert "Instruction files loaded: AGENTS.md, docs/style.md (imported)" in system
    assert system.count("Run `make test` before committing.") == 1
    assert system.count("Use four spaces.") == 1
    assert "SECRET OUTSIDE THE PROJECT" not in system


async def test_the_preamble_can_be_turned_off(tmp_path: Path, frame_checker: FrameChecker) -> None:
    project = tmp_path / "plain"
    project.mkdir()
    body = await _first_request(tmp_path, frame_checker, project, preamble=False)
    assert all("<environment>" not in str(m.get("content")) for m in body["messages"])


def test_render_outside_a_repository_says_so() -> None:
    text = render_preamble(directory=Path("/p"), date=dt.date(2026, 1, 2), branch=None, status=[],
                           instruction_files=[], shell="/bin/zsh", system="Linux", release="6.8")
    assert text.splitlines() == [
        "<environment>", "Working directory: /p", "Platform: linux (Linux 6.8)", "Shell: /bin/zsh",
        "Date: 2026-01-02", "Git: not a git repository", "Instruction files loaded: none", "</environment>",
    ]


@pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode != 0, reason="git is not installed")
async def test_sessions_in_one_directory_share_one_git_run_within_the_reuse_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio
    import shutil

    from host.runtime.agents.base import TurnContext
    from host.runtime.agents.preamble import EnvironmentPreamble

    project = tmp_path / "shop"
    project.mkdir()
    _git(project, "init", "-q", "-b", "main")
    _git(project, "commit", "-q", "--allow-empty", "-m", "init")
    (project / "cart.py").write_text("x = 1\n")
    log = tmp_path / "git-calls.log"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{shutil.which("git")}" "$@"\n')
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    now = [100.0]
    preamble = EnvironmentPreamble(lambda: 1_767_312_000_000, lambda session: (), monotonic=lambda: now[0])

    def context(session: str) -> TurnContext:
        state = {"workingDirectories": [project.as_uri()]}
        return TurnContext(session=session, turn_id="t1", message={}, _dispatch=lambda channel, action: None, _state=lambda: state)

    def git_runs() -> int:
        return len(log.read_text().splitlines()) if log.exists() else 0

    await asyncio.gather(*(preamble.user_message(context(f"s{i}"), {}) for i in range(5)))
    assert git_runs() == 1  # one status with its branch, once for the five sessions
    now[0] += 5
    await preamble.user_message(context("late"), {})
    assert git_runs() == 1
    now[0] += 30
    await preamble.user_message(context("later"), {})
    assert git_runs() == 2
    for session in ("s0", "s4", "late", "later"):
        (text,) = preamble.system_prompt(context(session))
        assert "Git branch: main" in text and "?? cart.py" in text


@pytest.mark.skipif(subprocess.run(["git", "--version"], capture_output=True).returncode != 0, reason="git is not installed")
async def test_a_repository_without_a_commit_is_a_repository_on_its_branch(tmp_path: Path) -> None:
    from host.runtime.agents.preamble import git_facts

    project = tmp_path / "fresh"
    project.mkdir()
    _git(project, "init", "-q", "-b", "trunk")
    (project / "a.py").write_text("x = 1\n")
    assert await git_facts(project, 20) == ("trunk (no commits yet)", ["?? a.py"])
    _git(project, "add", "a.py")
    _git(project, "commit", "-qm", "one")
    _git(project, "checkout", "-q", "--detach")
    assert await git_facts(project, 20) == ("HEAD (detached)", [])
    assert await git_facts(tmp_path, 20) == (None, [])
