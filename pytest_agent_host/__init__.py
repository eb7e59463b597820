"""agent-host's pytest plugin: a recorded agent session replayed (or recorded) as a test.

See ``pytest_agent_host.plugin`` for the fixtures and ``--record-mode``; the README section
"Recorded sessions as tests" for the workflow. The harness (``_harness``) is imported when a test
uses the ``agent_host`` fixture.
"""

from __future__ import annotations

__all__ = ["RECORD_MODES"]

RECORD_MODES = ("none", "once", "rewrite", "new_episodes")
