"""The action types the host can send a client, read off the code rather than listed by hand.

Contract: ``emitted_action_types()`` is the union of

* the types the host builds: every ``builders.<name>`` the modules under ``host/`` name (mapped to
  its type through ``ahp/protocol/builders.py``) and every dict literal under ``host/`` whose
  ``"type"`` is an action type of the model (``ahp.dialects.catalogue.ACTION_INTRODUCED_IN``);
* the types clients may dispatch (the model's types but ``host.transport.validation.HOST_ONLY``),
  which the host echoes to every subscriber once accepted, but those on channels of the kinds
  this host never has (``NO_SUCH_CHANNEL``): nobody can dispatch them, so nothing is echoed.

Read with ``ast`` (nothing is imported from ``host/`` but the two tables), so a new action the host
starts to build, or a type taken off ``HOST_ONLY``, joins the set without anyone listing it.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from ahp.dialects.catalogue import ACTION_INTRODUCED_IN
from host.transport.validation import HOST_ONLY

__all__ = ["NO_SUCH_CHANNEL", "client_dispatchable_types", "emitted_action_types", "host_built_types"]

REPO = Path(__file__).resolve().parents[4]

NO_SUCH_CHANNEL = {
    "automation": "this host has no automations: listAutomationTriggerDefinitions lists none, and runAutomation "
                  "and fetchAutomationRuns answer that there are none, so no automation channel exists",
    "automationRun": "no automation runs either (see automation): no automationRun channel exists",
}
"""Channel kinds the host never creates, each with the reason; the types clients could dispatch on
them (``automation/createRequested``, ``automation/updateRequested``, ``automationRun/cancelRequested``)
have no channel to be dispatched on, so the host never sends them."""


def _builder_types() -> dict[str, str]:
    """Builder function name → the action type it builds."""
    tree = ast.parse((REPO / "ahp" / "protocol" / "builders.py").read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for function in tree.body:
        if not isinstance(function, ast.FunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    if isinstance(key, ast.Constant) and key.value == "type" and isinstance(value, ast.Constant):
                        found.setdefault(function.name, str(value.value))
    return found


@cache
def host_built_types() -> frozenset[str]:
    """The action types some module under ``host/`` builds."""
    builders = _builder_types()
    found: set[str] = set()
    for path in (REPO / "host").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "builders":
                if node.attr in builders:
                    found.add(builders[node.attr])
            elif isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    if (isinstance(key, ast.Constant) and key.value == "type" and isinstance(value, ast.Constant)
                            and value.value in ACTION_INTRODUCED_IN):
                        found.add(str(value.value))
    return frozenset(found)


def client_dispatchable_types() -> frozenset[str]:
    """The model's action types a client may dispatch on a channel this host has (echoed by the
    host once accepted)."""
    return frozenset(kind for kind in ACTION_INTRODUCED_IN
                     if kind not in HOST_ONLY and kind.split("/", 1)[0] not in NO_SUCH_CHANNEL)


def emitted_action_types() -> frozenset[str]:
    """Every action type the host can send a client of the model's versions."""
    return host_built_types() | client_dispatchable_types()
