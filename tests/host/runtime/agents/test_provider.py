"""host.runtime.agents.provider: a provider-backed agent is listed without its turn loop, loads it in a
worker thread when a session is made on it, and a turn waits for that import off the event loop."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]

LOAD = """
import asyncio, json, sys
from host.runtime.agents import ModelSpec, ProviderAgent, StaticSource
from providers.scripted import ScriptedProvider

async def main():
    agent = ProviderAgent("scripted", StaticSource(ScriptedProvider([])), display_name="S", models=[ModelSpec("m")])
    agent.info()
    listed = "host.runtime.agents.turn" in sys.modules
    await agent.prepare_session("ahp-session:/s", {})
    await agent._loading
    print(json.dumps({"when listed": listed, "once a session is made": "host.runtime.agents.turn" in sys.modules}))

asyncio.run(main())
"""


def test_the_turn_loop_is_loaded_when_a_session_is_made_not_when_the_agent_is_listed() -> None:
    out = subprocess.run([sys.executable, "-c", LOAD], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"when listed": False, "once a session is made": True}


async def test_a_turn_sent_while_the_loop_loads_waits_for_it_without_stopping_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    import host.runtime.agents.provider as provider_module
    from host.runtime.agents import ModelSpec, ProviderAgent, StaticSource
    from host.runtime.agents.turn import ProviderTurn
    from providers.scripted import ScriptedProvider

    happened: list[str] = []
    importing, release = threading.Event(), threading.Event()

    def slow_import() -> None:  # a slow machine: the import ends when the test says
        importing.set()
        if release.wait(60):  # set on the event loop while the turn waits: a blocked loop never would
            happened.append("loaded")

    async def run(self: ProviderTurn) -> None:
        happened.append("ran")

    monkeypatch.setattr(provider_module, "_import_turn_loop", slow_import)
    monkeypatch.setattr(ProviderTurn, "run", run)
    agent = ProviderAgent("scripted", StaticSource(ScriptedProvider([])), display_name="S", models=[ModelSpec("m")])
    await agent.prepare_session("ahp-session:/s", {})
    turn = asyncio.ensure_future(agent.run_turn(object()))  # type: ignore[arg-type]  # ``run`` is replaced: the context is not read
    try:
        assert await asyncio.to_thread(importing.wait, 60)
        assert happened == [] and not turn.done()  # the turn waits for the import
    finally:
        release.set()
    await turn
    assert happened == ["loaded", "ran"]  # the turn ran after the import, not beside it
