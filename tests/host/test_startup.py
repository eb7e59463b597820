"""host.startup: the start-up plan loads the modules it defers and refuses any other (which belongs
at the head of the module that needs it); what it defers is not loaded with the host's service and server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from host import startup

ROOT = Path(__file__).resolve().parents[2]


def test_a_deferred_module_and_its_submodules_are_loaded_through_the_plan() -> None:
    assert startup.load("host.runtime.agents.turn").__name__ == "host.runtime.agents.turn"
    assert startup.planned("providers.openai.chat") and not startup.planned("providers_extra")


def test_a_module_the_plan_does_not_defer_is_refused_with_where_it_belongs() -> None:
    with pytest.raises(KeyError, match="import it at the module head"):
        startup.load("host.state.store")


def test_the_host_and_its_server_leave_what_the_plan_defers_unloaded() -> None:
    # ``providers`` itself is imported: the plan defers its names (PEP 562), each on first use.
    code = ("import json, sys; import host.service, host.transport.server; from host.startup import DEFERRED; "
            "print(json.dumps(sorted(m for m in DEFERRED if m != 'providers' and m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []
