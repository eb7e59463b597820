"""Shared action dispatch for the channel reducers: lives in :mod:`ahp.state._dispatch`."""

from __future__ import annotations

from ahp.state._dispatch import dispatch

__all__ = ["dispatch"]
