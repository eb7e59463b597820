"""Changesets: the files a session's tools changed, per session and per turn, with keep, undo and
per-turn checkpoints (``ChangesetService``; shapes and URIs in ``host.resources.changesets.model``)."""

from typing import TYPE_CHECKING

from ahp.lazy import lazy_exports

# Loaded on first use (PEP 562): the newer dialects need only ``model``'s shapes at start.
_WHERE = {
    "ChangesetService": "service",
}

if TYPE_CHECKING:
    from .service import ChangesetService

__all__ = ["ChangesetService"]

__getattr__ = lazy_exports(__name__, _WHERE)
