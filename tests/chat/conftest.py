"""Fixtures for the chat client tests: a real host on 127.0.0.1 port 0 serving the scenario
agent (first) and the offline agent, with the test's temporary directory as working directory."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from host.runtime.agents import OfflineAgent
from host.service import AgentHost
from host.transport.server import RunningHost, start_host
from tests.chat._pty import ChatProcess
from tests.chat._scenario import ScenarioAgent
from tests.conftest import TOKEN, host_config


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def scenario(workdir: Path) -> ScenarioAgent:
    return ScenarioAgent(workdir)


@pytest.fixture
async def chat_host(tmp_path: Path, workdir: Path, scenario: ScenarioAgent) -> AsyncIterator[RunningHost]:
    host = AgentHost(
        host_config(tmp_path / "data", default_directory=str(workdir)),
        agents=[scenario, OfflineAgent(delay=0)],
    )
    scenario.store = host.store
    running = await start_host(host, token=TOKEN)
    yield running
    await running.stop()


@pytest.fixture
async def spawn_chat(chat_host: RunningHost, workdir: Path) -> AsyncIterator[Callable[..., ChatProcess]]:
    """``spawn_chat(*args)`` → the terminal client on a pty, connected with the printed URL."""
    processes: list[ChatProcess] = []

    def spawn(*args: str, url: str | None = None) -> ChatProcess:
        process = ChatProcess.spawn([url or chat_host.url, *args], cwd=workdir)
        processes.append(process)
        return process

    yield spawn
    for process in processes:
        process.close()
