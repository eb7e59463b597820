"""End-to-end tests: the ``vscode`` marker (select with ``-m vscode``) and where their artifacts go."""

from __future__ import annotations

from pathlib import Path

import pytest

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "vscode: drives the real VS Code 1.139.1 (code-server) against an agent host")


def pytest_report_header(config: pytest.Config) -> str:
    return f"vscode end-to-end artifacts (screenshots, logs, wire): {ARTIFACTS}/"
