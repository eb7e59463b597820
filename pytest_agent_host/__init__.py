"""agent-host's pytest plugin: a recorded agent session replayed (or recorded) as a test.

See ``pytest_agent_host.plugin`` for the fixtures and ``--record-mode``; the README section
"Recorded sessions as tests" for the workflow. The plugin is registered in every pytest run of an
environment where agent-host is installed, so importing it loads nothing of the host: the harness
(``HostHarness``, ``ReplaySession``, ``Turn``, ``ReplayFailed``) is imported when a test uses the
``agent_host`` fixture, or when one of those names is first read from this package.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["RECORD_MODES", "AGENT", "HostHarness", "ReplaySession", "Turn", "ReplayFailed"]

RECORD_MODES = ("none", "once", "rewrite", "new_episodes")
"""``--record-mode`` values, as pytest-recording names them (its ``all`` is taken as ``rewrite``)."""
AGENT = "recorded"
"""The name of the agent whose turns replay (or record) the test's cassette."""
_HARNESS = frozenset({"HostHarness", "ReplaySession", "Turn", "ReplayFailed"})


def __getattr__(name: str) -> Any:
    if name in _HARNESS:
        return getattr(importlib.import_module("pytest_agent_host._harness"), name)
    raise AttributeError(f"module 'pytest_agent_host' has no attribute {name!r}")
