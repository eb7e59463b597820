"""The JSON-RPC endpoint's own limits: tracebacks from hostile input do not flood the log."""

from __future__ import annotations

import logging

import pytest

from ahp.jsonrpc import _depth_exceeds
from host.transport.rpc import _TracebackBudget


def test_tracebacks_are_rate_limited_and_the_rest_counted(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    budget = _TracebackBudget(limit=3, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="host.transport.rpc"):
        for _ in range(50):
            try:
                raise ValueError("hostile")
            except ValueError:
                budget.log("request %s failed", "ping")
        assert sum(1 for r in caplog.records if r.exc_info) == 3
        now[0] = 61.0
        try:
            raise ValueError("again")
        except ValueError:
            budget.log("request %s failed", "ping")
    messages = [r.getMessage() for r in caplog.records]
    assert "47 more failures handling messages were not logged with tracebacks in the last minute" in messages
    assert sum(1 for r in caplog.records if r.exc_info) == 4  # a new minute, a new allowance


def test_depth_is_measured_without_recursion() -> None:
    deep: list = []
    node = deep
    for _ in range(200_000):
        child: list = []
        node.append(child)
        node = child
    assert _depth_exceeds(deep, 64)
    assert not _depth_exceeds({"a": [1, {"b": [2]}]}, 4)
    assert _depth_exceeds({"a": [1, {"b": [2]}]}, 3)
