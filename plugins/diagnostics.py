"""Diagnostics and load states for plugin and directory loading.

Contract:
- Loading never raises for bad input. Every problem found in a plugin's files becomes a
  :class:`Diagnostic` carrying its path: the plugin (or directory) name, the file relative to
  the container root, and the key path inside that file. ``str(diagnostic)`` renders it as
  ``plugin X ==> skills/y/SKILL.md ==> frontmatter ==> key: message``.
- Severity decides the effect: ``info`` (ignored on purpose, e.g. an LSP config),
  ``warning`` (unknown keys; never changes the load state), ``problem`` (something was
  skipped or dropped; the container becomes ``degraded``) and ``fatal`` (nothing can be
  trusted; the container becomes ``error`` and exposes nothing).
- :class:`LoadState` is the AHP ``CustomizationLoadState``: ``loading`` | ``loaded`` |
  ``degraded{message}`` | ``error{message}``. It is derived from diagnostics by
  :func:`load_state_from`, so the wire message always lists every problem in one string.
- Messages never contain tracebacks or library error text verbatim beyond a parser's
  position ("line 5, column 3").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

__all__ = ["Severity", "Diagnostic", "LoadState", "load_state_from"]


class Severity(str, Enum):
    """How much a diagnostic matters to the container's load state."""

    INFO = "info"
    WARNING = "warning"
    PROBLEM = "problem"
    FATAL = "fatal"


@dataclass(frozen=True)
class Diagnostic:
    """One finding while loading a container, located by a path of segments."""

    severity: Severity
    container: str
    """Plugin or directory name, shown first in the rendered path."""
    file: str | None
    """File (or folder) relative to the container root, POSIX separators; None = the container."""
    keys: tuple[str, ...]
    """Path inside the file, e.g. ("frontmatter", "globs") or ("mcpServers", "ghost", "args")."""
    message: str
    container_kind: Literal["plugin", "directory"] = "plugin"

    @property
    def location(self) -> str:
        """The ``plugin X ==> file ==> key`` part of the rendering."""
        parts = [f"{self.container_kind} {self.container}"]
        if self.file:
            parts.append(self.file)
        parts.extend(self.keys)
        return " ==> ".join(parts)

    def __str__(self) -> str:
        return f"{self.location}: {self.message}"


LoadKind = Literal["loading", "loaded", "degraded", "error"]


@dataclass(frozen=True)
class LoadState:
    """AHP ``CustomizationLoadState``; ``message`` is set for degraded and error only."""

    kind: LoadKind
    message: str | None = None

    def to_wire(self) -> dict[str, Any]:
        """The exact AHP shape, e.g. ``{"kind": "degraded", "message": "..."}``."""
        if self.kind in ("degraded", "error"):
            return {"kind": self.kind, "message": self.message or ""}
        return {"kind": self.kind}

    def with_problems(self, problems: Iterable[str]) -> LoadState:
        """Fold run-time problems (e.g. an MCP server that failed to start) into this state.

        ``error`` stays ``error``; otherwise any problem makes the state ``degraded`` with all
        messages (parse-time first) joined into one string, as AHP allows a single message.
        """
        extra = [p for p in problems if p]
        if self.kind == "error" or not extra:
            return self
        messages = ([self.message] if self.kind == "degraded" and self.message else []) + extra
        return LoadState("degraded", "; ".join(messages))


def load_state_from(diagnostics: Iterable[Diagnostic]) -> LoadState:
    """Derive the container's state: any fatal -> error, any problem -> degraded, else loaded."""
    diags = list(diagnostics)
    fatal = [str(d) for d in diags if d.severity is Severity.FATAL]
    if fatal:
        return LoadState("error", "; ".join(fatal))
    problems = [str(d) for d in diags if d.severity is Severity.PROBLEM]
    if problems:
        return LoadState("degraded", "; ".join(problems))
    return LoadState("loaded")
