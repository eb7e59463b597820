"""Changesets: the files a session's tools changed, per session and per turn, with keep, undo and
per-turn checkpoints (``ChangesetService``; shapes and URIs in ``host.resources.changesets.model``)."""

from .service import ChangesetService

__all__ = ["ChangesetService"]
