"""Shared fixtures for plugin tests: the vendored sample plugins (see samples/README.md)."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

SAMPLES = Path(__file__).parent / "samples"


def _make_executable(root: Path) -> None:
    for pattern in ("scripts/*.sh", "servers/*.py"):
        for script in root.glob(pattern):
            script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def samples() -> Path:
    """The read-only vendored fixtures."""
    return SAMPLES


@pytest.fixture
def toolkit_copy(tmp_path: Path) -> Path:
    """A private, writable copy of sample-toolkit whose scripts are executable."""
    root = tmp_path / "sample-toolkit"
    shutil.copytree(SAMPLES / "sample-toolkit", root)
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    _make_executable(root)
    return root


@pytest.fixture
def make_plugin(tmp_path: Path):
    """Write a plugin from a {relative path: text} mapping and return its root."""

    def make(files: dict[str, str], name: str = "demo") -> Path:
        root = tmp_path / name
        for relative, text in files.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        root.mkdir(parents=True, exist_ok=True)
        return root

    return make
