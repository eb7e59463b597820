"""host.agents.sources: an SDK-backed agent imports its SDK (and builds the process's TLS context)
off the event loop before the first call."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

WARM = """
import asyncio, os, sys
from host.agents.sources import SdkSource

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
