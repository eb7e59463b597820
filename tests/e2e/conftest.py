"""End-to-end tests: the ``vscode`` marker and where their artifacts go.

The VS Code test runs only when selected (``pytest -m vscode``): it needs an install outside the
repository (``scripts/vscode-e2e/install.sh``) and takes minutes, so the plain test suite skips it
even where that install exists.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


def fresh_artifacts(name: str) -> Path:
    """``ARTIFACTS/name``, emptied of an earlier run's files."""
    folder = ARTIFACTS / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "vscode: drives the real VS Code 1.139.1 (code-server) against an agent host; run with -m vscode")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "vscode" in (config.option.markexpr or ""):
        return
    skip = pytest.mark.skip(reason="the VS Code end-to-end test runs only when selected: pytest -m vscode")
    for item in items:
        if item.get_closest_marker("vscode") is not None:
            item.add_marker(skip)
