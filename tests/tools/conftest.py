"""Fixtures for tools tests: a working directory with a sibling outside it, and a context."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.base import ToolContext
from tools.content import InMemoryContentStore


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """`<tmp>/work` is the session working directory; `<tmp>/outside` is not allowed."""
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("top secret\n")
    return work


@pytest.fixture
def store() -> InMemoryContentStore:
    return InMemoryContentStore()


@pytest.fixture
def ctx(workspace: Path, store: InMemoryContentStore) -> ToolContext:
    return ToolContext(working_directory=workspace, content_store=store)
