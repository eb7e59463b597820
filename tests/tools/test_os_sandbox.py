"""The bubblewrap command line, the environment and the placeholders of the OS sandbox (what a command inside
meets is tried with real bubblewrap and a real host in tests/host/runtime/tools/test_modes_sandbox.py), and why a
platform cannot sandbox, said so a user knows what to do."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tools import os_sandbox
from tools.os_sandbox import SECRETS, Confined, OsSandbox


def test_the_session_folders_are_bound_writable_after_the_private_tmp_and_the_network_is_cut() -> None:
    argv = OsSandbox((Path("/tmp/work"), Path("/srv/shared"), Path("/tmp/work")), network=False).command(["/bin/sh", "-c", "ls"])
    assert argv[:3] == ["bwrap", "--ro-bind", "/"]
    tmpfs = argv.index("--tmpfs")
    binds = [i for i, word in enumerate(argv) if word == "--bind"]
    assert [argv[i + 1] for i in binds] == ["/tmp/work", "/srv/shared"]  # each once, in order
    assert all(i > tmpfs for i in binds)  # a folder under /tmp stays visible over the private /tmp
    assert "--unshare-net" in argv and argv[-4:] == ["--", "/bin/sh", "-c", "ls"]
    assert "--unshare-net" not in OsSandbox((Path("/w"),), network=True).command(["true"])


def test_the_command_gets_its_own_processes_and_no_capabilities() -> None:
    argv = OsSandbox((Path("/w"),)).command(["true"])
    for flag in ("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"):
        assert flag in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL" and argv[argv.index("--proc") + 1] == "/proc"


def test_the_environment_is_built_from_the_allow_list_and_the_users_names() -> None:
    host = {"PATH": "/bin", "HOME": "/h", "LANG": "C", "LC_ALL": "C", "TERM": "xterm", "OPENAI_API_KEY": "sk-1",
            "AWS_SECRET_ACCESS_KEY": "s", "CARGO_HOME": "/c", "CARGO_TARGET_DIR": "/t", "SSH_AUTH_SOCK": "/run/a"}
    env = OsSandbox((Path("/w"),), environment=("CARGO_*",)).environ(host, {"PAGER": "cat"})
    assert env == {"PATH": "/bin", "HOME": "/h", "LANG": "C", "LC_ALL": "C", "TERM": "xterm", "CARGO_HOME": "/c",
                   "CARGO_TARGET_DIR": "/t", "PAGER": "cat"}


def test_secrets_are_hidden_but_not_a_session_folder_the_user_chose_inside_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".netrc").write_text("x")
    (home / "elsewhere").mkdir()
    (home / ".aws").symlink_to(home / "elsewhere")  # a link: both the name and where it leads are hidden
    hidden = OsSandbox((tmp_path / "w",), home=home, hidden=(tmp_path / "data",)).hidden_paths()
    assert {home / ".ssh", home / ".netrc", home / ".aws", home / "elsewhere", tmp_path / "data"} <= set(hidden)
    assert len(hidden) >= len(SECRETS)
    argv = OsSandbox((tmp_path / "w",), home=home).command(["true"])
    assert argv[argv.index(str(home / ".ssh")) - 3:argv.index(str(home / ".ssh"))] == ["--perms", "0000", "--tmpfs"]
    assert argv[argv.index(str(home / ".netrc")) - 2:argv.index(str(home / ".netrc"))] == ["--ro-bind", "/dev/null"]
    inside = OsSandbox((home / ".config" / "agent-host" / "project",), home=home).hidden_paths()
    assert home / ".config" / "agent-host" not in inside and home / ".ssh" in inside


def test_missing_protected_names_get_placeholders_that_release_removes(tmp_path: Path) -> None:
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    (tmp_path / ".git" / "config").write_text("[core]\n")
    confined = OsSandbox((tmp_path,)).confine(["true"])
    assert set(confined.placeholders) == {tmp_path / ".claude", tmp_path / ".mcp.json"}
    assert ["--bind", str(tmp_path / ".git"), str(tmp_path / ".git")] == confined.argv[confined.argv.index(str(tmp_path / ".git")) - 1:][:3]
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".mcp.json").write_text("")
    confined.release()
    assert not (tmp_path / ".claude").exists() and not (tmp_path / ".mcp.json").exists()
    # Something put there since (not the sandbox: it cannot write them) is kept.
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text("{}")
    (tmp_path / ".mcp.json").write_text("{}")
    Confined(["true"], (tmp_path / ".claude", tmp_path / ".mcp.json")).release()
    assert (tmp_path / ".claude" / "settings.json").exists() and (tmp_path / ".mcp.json").read_text() == "{}"


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_placeholder_keeps_a_sandboxed_command_from_creating_mcp_json(tmp_path: Path) -> None:
    confined = OsSandbox((tmp_path,)).confine(["/bin/sh", "-c", "echo '{}' > .mcp.json; mkdir .claude/x; echo done"])
    ran = subprocess.run(confined.argv, cwd=tmp_path, env=dict(os.environ), capture_output=True, text=True, check=False)
    confined.release()
    assert "done" in ran.stdout and "Permission denied" in ran.stderr and "Read-only file system" in ran.stderr
    assert sorted(os.listdir(tmp_path)) == []


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
