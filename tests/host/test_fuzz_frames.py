"""Fuzzing frame shapes against a real host: every request gets exactly one response with its id,
whatever else the frames hold, and the connection still answers a ping afterwards."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import connect

from ahp.dialects.v0_2.wire import METHODS
from host.service import AgentHost
from host.transport.server import start_host
from tests.conftest import TOKEN, host_config

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
METHOD = st.sampled_from(sorted(METHODS)) | st.text(max_size=12)
PARAMS = JSON | st.fixed_dictionaries({"channel": st.sampled_from(["ahp-root://", "ahp-session:/x", "", "file:///etc"])}, optional={"limit": JSON, "uri": JSON, "action": JSON, "clientSeq": JSON})


@st.composite
def frames(draw: Any) -> tuple[str, bool]:
    """``(text, is_request)``: requests carry ids the test assigns later (``{id}`` placeholder)."""
    kind = draw(st.sampled_from(["request", "request", "notification", "garbage", "json"]))
    if kind == "garbage":
        return draw(st.text(max_size=40)), False
    if kind == "json":
        return json.dumps(draw(JSON)), False
    message: dict[str, Any] = {"jsonrpc": draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0", 2]))}
    message["method"] = draw(METHOD)
    if draw(st.booleans()):
        message["params"] = draw(PARAMS)
    if kind == "request":
        message["id"] = "{id}"
    return json.dumps(message), kind == "request" and message["jsonrpc"] == "2.0" and bool(message["method"])


async def _exchange(batch: list[tuple[str, bool]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        running = await start_host(AgentHost(host_config(Path(tmp) / "data", default_directory=tmp)), token=TOKEN)
        try:
            async with connect(f"{running.url.split('?')[0]}?token={TOKEN}", max_size=None) as ws:
                expected = []
                for index, (text, is_request) in enumerate(batch, start=1):
                    if is_request:
                        expected.append(index)
                    await ws.send(text.replace('"{id}"', str(index)))
                await ws.send(json.dumps({"jsonrpc": "2.0", "id": 10**6, "method": "ping", "params": {"channel": "ahp-root://"}}))
                answered: dict[Any, int] = {}
                while 10**6 not in answered:
                    frame = json.loads(await asyncio.wait_for(ws.recv(), 20))
                    if "id" in frame and "method" not in frame:
                        answered[frame["id"]] = answered.get(frame["id"], 0) + 1
                assert answered.pop(10**6) == 1
                for index in expected:
                    assert answered.get(index) == 1, f"request {index} ({batch[index - 1][0][:80]}) got {answered.get(index)} responses"
        finally:
            await running.stop()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(frames(), min_size=1, max_size=15))
def test_every_request_gets_exactly_one_response_and_the_connection_stays_usable(batch: list[tuple[str, bool]]) -> None:
    asyncio.run(_exchange(batch))
