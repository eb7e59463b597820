"""Fixtures: private copies of the sample plugins and workspace, and a host configured with them."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parents[3] / "plugins" / "samples"


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Path:
    """The three sample plugins, copied, with their scripts executable."""
    root = tmp_path / "plugins"
    for name in ("sample-toolkit", "sample-degraded", "sample-broken"):
        shutil.copytree(SAMPLES / name, root / name)
    for script in [*root.glob("*/scripts/*.sh"), *root.glob("*/servers/*.py")]:
        script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return root


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A working directory with the sample workspace folders and a few files."""
    root = tmp_path / "work"
    shutil.copytree(SAMPLES / "workspace-dirs", root)
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('hi')\n", encoding="utf-8")
    (root / "README.md").write_text("# demo\n", encoding="utf-8")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    return root


@pytest.fixture
def hook_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the sample hooks write; TMPDIR is private so the broken plugin's marker is observable."""
    private = tmp_path / "tmp"
    private.mkdir()
    log = tmp_path / "hooks.log"
    monkeypatch.setenv("SAMPLE_TOOLKIT_HOOK_LOG", str(log))
    monkeypatch.setenv("TMPDIR", str(private))
    return log
