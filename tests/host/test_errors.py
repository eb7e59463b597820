"""host.errors: every exception class the host defines derives from ``AgentHostError`` (the tree its
docstring draws), except the one the docstring names as left outside."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import host.errors
from host.errors import AgentHostError

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = {"host.transport.agui.interrupts.AnswerError", "host.runtime.agents.replay.RecordingEnded",
           "host.runtime.agents.session_source.ReplayDivergedError", "host.runtime.agents.session_source.ReplayedCancelError",
           "host.transport.agui.runs._Refused"}
"""Named in the tree as left outside, and a private signal that never leaves its module."""


def _exception_classes() -> list[str]:
    found = []
    for path in sorted((ROOT / "host").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and (node.name.endswith(("Error", "Failed", "Ended")) or any(
                    isinstance(base, ast.Name) and base.id in {"Exception", "ValueError"} for base in node.bases)):
                found.append(f"{module}.{node.name}")
    return found


def test_every_host_exception_is_under_the_root_and_drawn_in_its_tree() -> None:
    classes = _exception_classes()
    assert len(classes) >= 10
    outside = []
    for qualified in classes:
        module, name = qualified.rsplit(".", 1)
        cls = getattr(importlib.import_module(module), name)
        if isinstance(cls, type) and issubclass(cls, BaseException) and not issubclass(cls, AgentHostError):
            outside.append(qualified)
        elif isinstance(cls, type) and issubclass(cls, AgentHostError) and module != "host.errors":
            assert name in (host.errors.__doc__ or ""), f"{qualified} is missing from the tree in host/errors.py"
    assert sorted(outside) == sorted(OUTSIDE)
