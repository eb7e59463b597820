"""Reads METHODS.md (the shared AHP checklist) when it is available on this machine.

The checklist lives outside the repository (``/work/shared/ahp/METHODS.md``); tests that
cross-check against it skip when it is absent, while literal-count tests always run.
"""

from __future__ import annotations

import re
from pathlib import Path

CHECKLIST = Path("/work/shared/ahp/METHODS.md")
_ITEM = re.compile(r"^- \[ \] `([^`]+)` · ([^·]+?) ·\s*([^·]+?)(?: ·|$)")


def checklist_sections() -> dict[str, list[tuple[str, str, str]]]:
    """``{section heading: [(name, direction-or-dispatcher, tier), ...]}`` from METHODS.md."""
    sections: dict[str, list[tuple[str, str, str]]] = {}
    current = None
    for line in CHECKLIST.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            current = line[3:].strip()
            sections[current] = []
            continue
        match = _ITEM.match(line)
        if match and current is not None:
            sections[current].append(tuple(part.strip() for part in match.groups()))
    return sections
