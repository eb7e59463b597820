"""The bubblewrap command line, and why a platform cannot sandbox, said so a user knows what to do."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tools import os_sandbox
from tools.os_sandbox import OsSandbox


def test_the_session_folders_are_bound_writable_after_the_private_tmp_and_the_network_is_cut() -> None:
    argv = OsSandbox((Path("/tmp/work"), Path("/srv/shared"), Path("/tmp/work")), network=False).command(["/bin/sh", "-c", "ls"])
    assert argv[:3] == ["bwrap", "--ro-bind", "/"]
    tmpfs = argv.index("--tmpfs")
    binds = [i for i, word in enumerate(argv) if word == "--bind"]
    assert [argv[i + 1] for i in binds] == ["/tmp/work", "/srv/shared"]  # each once, in order
    assert all(i > tmpfs for i in binds)  # a folder under /tmp stays visible over the private /tmp
    assert "--unshare-net" in argv and argv[-4:] == ["--", "/bin/sh", "-c", "ls"]
    assert "--unshare-net" not in OsSandbox((Path("/w"),), network=True).command(["true"])


@pytest.fixture
def fresh_probe():
    os_sandbox.unavailable.cache_clear()
    yield
    os_sandbox.unavailable.cache_clear()


def test_macos_has_no_sandbox_and_says_seatbelt_is_not_implemented(monkeypatch, fresh_probe) -> None:
    monkeypatch.setattr(os_sandbox.sys, "platform", "darwin")
    reason = os_sandbox.unavailable()
    assert "Seatbelt is not implemented" in reason and 'sandbox = "off"' in reason


def test_a_missing_bwrap_names_the_package_to_install(monkeypatch, fresh_probe) -> None:
    monkeypatch.setattr(os_sandbox.sys, "platform", "linux")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    reason = os_sandbox.unavailable()
    assert "bubblewrap (bwrap) is not installed" in reason and "apt-get install bubblewrap" in reason


def test_bwrap_that_cannot_make_namespaces_says_so(monkeypatch, fresh_probe) -> None:
    monkeypatch.setattr(os_sandbox.sys, "platform", "linux")
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/bwrap")
    failed = subprocess.CompletedProcess([], 1, b"", b"bwrap: No permissions to creating new namespace\n")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: failed)
    reason = os_sandbox.unavailable()
    assert "No permissions to creating new namespace" in reason and "user namespaces" in reason
