"""host.runtime.agents.sources: an SDK-backed agent imports its SDK (and builds the process's TLS context)
off the event loop before the first call."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]

WARM = """
import asyncio, os, sys
from host.runtime.agents.sources import SdkSource

async def main():
    os.environ.pop("LITELLM_LOCAL_MODEL_COST_MAP", None)
    source = SdkSource({kind!r}, agent="a", api_key="k")
    before = {module!r} in sys.modules
    source.warm()
    source.warm()  # once per source
    await source._warming
    print(before, {module!r} in sys.modules)
    if {kind!r} != "litellm":  # the CA bundle is loaded there too, not by the first model call
        from providers._tls import ssl_context
        print(ssl_context.cache_info().currsize)
    if {kind!r} == "litellm":  # imported with its bundled cost map, never fetched online
        print(os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP"))

asyncio.run(main())
"""


@pytest.mark.parametrize("kind, module", [("openai-chat", "openai.resources"), ("anthropic", "anthropic.resources"), ("litellm", "litellm")])
def test_warm_imports_the_sdk_in_a_thread_before_any_model_call(kind: str, module: str) -> None:
    out = subprocess.run([sys.executable, "-c", WARM.format(kind=kind, module=module)], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True"] + (["True"] if kind == "litellm" else ["1"])


async def test_a_turn_started_while_the_sdk_imports_waits_for_it_without_stopping_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A message sent right after the session was made: the turn awaits the import running in the
    worker thread; the event loop (every other session) keeps running meanwhile."""
    import host.runtime.agents.sources as sources

    happened: list[str] = []
    importing, release = threading.Event(), threading.Event()

    def slow_import() -> None:  # an SDK import on a slow machine: it ends when the test says
        importing.set()
        if release.wait(60):  # set on the event loop while the turn waits: a blocked loop never would
            happened.append("imported")

    async def turn() -> None:
        async with source.for_turn("ahp-session:/s", "t1", "m") as provider:
            assert provider is not None
            happened.append("provider")

    monkeypatch.setitem(sources._SDK_IMPORTS, "openai-chat", slow_import)
    source = sources.SdkSource("openai-chat", agent="a", api_key="k", base_url="http://127.0.0.1:9/v1")
    source.warm()
    started = asyncio.ensure_future(turn())
    try:
        assert await asyncio.to_thread(importing.wait, 60)
        assert happened == [] and not started.done()  # the turn waits for the import
        release.set()
        await started
    finally:
        release.set()
        await source.aclose()
    assert happened == ["imported", "provider"]  # the provider came after the import, not beside it
