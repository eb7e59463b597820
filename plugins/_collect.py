"""Collects diagnostics for one container while it loads.

Contract: a :class:`Collector` is created per container load, accumulates
:class:`~plugins.diagnostics.Diagnostic` values in discovery order, and hands out per-file
``report(severity, keys, message)`` callables so parsers need not know the container name.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from plugins.diagnostics import Diagnostic, Severity

__all__: list[str] = []

Report = Callable[[Severity, tuple[str, ...], str], None]


class Collector:
    """Diagnostics for one plugin or directory."""

    def __init__(self, container: str, root: Path, kind: Literal["plugin", "directory"] = "plugin") -> None:
        self.container = container
        self.root = root
        self.kind = kind
        self.items: list[Diagnostic] = []

    def relative(self, path: Path) -> str:
        """``path`` relative to the container root, POSIX style (absolute if outside)."""
        try:
            return path.relative_to(self.root).as_posix() or "."
        except ValueError:
            return path.as_posix()

    def add(self, severity: Severity, file: Path | str | None, keys: tuple[str, ...], message: str) -> None:
        shown = self.relative(file) if isinstance(file, Path) else file
        self.items.append(Diagnostic(severity, self.container, shown, keys, message, self.kind))

    def for_file(self, file: Path | str | None, prefix: tuple[str, ...] = ()) -> Report:
        """A reporter bound to one file and an optional key prefix."""

        def report(severity: Severity, keys: tuple[str, ...], message: str) -> None:
            self.add(severity, file, prefix + keys, message)

        return report

    def has_fatal(self) -> bool:
        return any(d.severity is Severity.FATAL for d in self.items)
