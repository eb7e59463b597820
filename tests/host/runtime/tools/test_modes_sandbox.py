"""The OS sandbox holds, end to end: a real host, a real client, the scripted model in ``full-auto``
and real bubblewrap. Every escape of issue 33 is tried from a sandboxed command and fails: writes
through another process's ``/proc`` entry, signals to the host, secrets and the journal, the host's
API keys, a token on a command line, Unix sockets; and more (links out of the folder,
``/proc/self``, ``/dev``, mounts, git hooks, ``.mcp.json``). What was refused is said in words.

The places tried live under /var/tmp, not /tmp: the sandbox's /tmp is private, so anything under
the host's /tmp would be out of reach for that reason alone and prove nothing."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import config_for, idle, ready_session, serving
from tools.os_sandbox import unavailable

from ._support import calls, scripted, tool_results

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=f"no OS sandbox here: {unavailable()}")

SECRET = "sk-agent-host-test-0123456789"


@pytest.fixture
def place() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="agent-host-sandbox-", dir="/var/tmp"))
    (base / "work").mkdir()
    (base / "outside").mkdir()
    yield base
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def home(place: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home directory with the secrets a developer's has."""
    home = place / "home"
    for name, text in {".ssh/id_ed25519": f"KEY {SECRET}", ".aws/credentials": f"aws {SECRET}", ".netrc": f"password {SECRET}",
                       ".config/gcloud/credentials.db": f"gcloud {SECRET}", ".gnupg/private-keys-v1.d/k.key": f"gpg {SECRET}",
                       ".local/share/keyrings/login.keyring": f"ring {SECRET}", ".config/agent-host/client.toml": f'token = "{SECRET}"',
                       "notes.txt": "readable"}.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(text)
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def helper(place: Path) -> Iterator[subprocess.Popen]:
    """Another process of the host's user, started with a token on its command line, in a folder outside."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "--token", SECRET], cwd=place / "outside")
    yield process
    process.kill()
    process.wait()


def _config(place: Path, **tools):
    return config_for(place, tools={"enabled": True, **tools}, sessions={"default_directory": str(place / "work")})


async def _run(place: Path, frame_checker: FrameChecker, commands: list[str], **tools) -> tuple[ScriptedProvider, list[dict]]:
    """Runs each command as a ``shell`` call in a full-auto session; the provider and the calls."""
    provider = ScriptedProvider([*(call_tools(("shell", {"command": command})) for command in commands), reply("done")])
    async with serving(_config(place, **tools), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        chat = default_chat_uri(await ready_session(client, provider="scripted", config={"permissionMode": "full-auto"}))
        client.send_message(chat, "go")
        await client.wait_for(lambda m, e: bool((client.state(chat) or {}).get("turns")), timeout=60)
        await idle(client, chat)
        done = calls(client, chat)
    return provider, done


def _said(provider: ScriptedProvider, index: int) -> str:
    """What the model read of the ``index``-th command (1-based)."""
    return tool_results(provider, index)[0].text


async def test_a_command_cannot_write_outside_through_another_processs_proc_entry_nor_signal_the_host(
        place: Path, frame_checker: FrameChecker, helper: subprocess.Popen) -> None:
    outside, host = place / "outside", os.getpid()
    provider, done = await _run(place, frame_checker, [
        f"echo x > /proc/{host}/root{outside}/via-root",
        f"echo x > /proc/{helper.pid}/cwd/via-cwd",
        f"for p in /proc/[0-9]*; do (echo x > $p/root{outside}/via-loop) 2>/dev/null; done; ls -d /proc/[0-9]* | wc -l",
        # kill -0 signals nothing even where it may (a broken sandbox must not take the test run or the machine down);
        # the helper is this test's own process, so a real signal to it harms nothing.
        f"kill -0 {host}; kill -TERM {helper.pid}; echo signalled",
        f"echo x > /proc/self/root{outside}/via-self",
    ])
    assert list(outside.iterdir()) == []  # S1: not one write got out
    assert done[0]["success"] is False and done[1]["success"] is False
    assert int(_said(provider, 3).split()[0]) <= 4  # its own processes only: bwrap's, the shell, ls
    assert helper.poll() is None  # the host (this process) and its other processes are untouched
    assert "No such process" in _said(provider, 4) and "Processes outside the sandbox are not visible" in _said(provider, 4)
    assert done[4]["success"] is False


async def test_secrets_the_journal_the_hosts_keys_and_a_token_on_a_command_line_stay_out_of_reach(
        place: Path, frame_checker: FrameChecker, home: Path, helper: subprocess.Popen, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("MY_TOOL_HOME", "/opt/my-tool")
    (place / "work" / "key").symlink_to(home / ".ssh" / "id_ed25519")  # a link out of the folder to a secret
    data = place / "data"
    provider, _ = await _run(place, frame_checker, [
        "cat ~/.ssh/id_ed25519; cat ~/.aws/credentials; cat ~/.netrc; cat ~/.config/gcloud/credentials.db; "
        "ls ~/.gnupg; cat ~/.local/share/keyrings/login.keyring; cat ~/.config/agent-host/client.toml; cat ~/notes.txt",
        f"grep -rl sk-agent-host {data}; ls {data}; echo listed",
        "env",
        "cat /proc/*/cmdline /proc/*/environ | tr '\\0' ' '",
        "cat key",
    ], sandbox_environment=["MY_TOOL_*"])
    for index in range(1, 6):
        assert SECRET not in _said(provider, index).replace(f"cat {data}", "")
    secrets = _said(provider, 1)
    assert "readable" in secrets  # the home directory stays readable; its secrets do not
    assert secrets.count("Permission denied") == 7 and "~" not in secrets.split("[sandbox]")[0].split("\n")[-1]
    assert "is hidden from sandboxed commands (credentials and keys are never readable there)" in secrets
    journal = _said(provider, 2)
    assert "Permission denied" in journal and f"{data} is hidden from sandboxed commands" in journal
    environment = _said(provider, 3)
    assert "PATH=" in environment and "MY_TOOL_HOME=/opt/my-tool" in environment  # the allow-list and the user's names
    assert "OPENAI_API_KEY" not in environment and "ANTHROPIC_API_KEY" not in environment
    assert "Permission denied" in _said(provider, 5)


async def test_unix_sockets_outside_the_folders_are_out_of_reach_unless_allowed(
        place: Path, frame_checker: FrameChecker, home: Path) -> None:
    paths = {"home": home / ".agent.sock", "var": place / "srv" / "db.sock", "folder": place / "work" / "app.sock",
             "allowed": place / "allowed" / "ok.sock"}
    abstract = f"\0agent-host-test-{uuid.uuid4().hex}"
    listening = []
    for path in [*paths.values(), abstract]:
        if isinstance(path, Path):
            path.parent.mkdir(parents=True, exist_ok=True)
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
        server.listen()
        listening.append(server)
    probe = ("import socket, sys\nfor name, path in zip(sys.argv[1::2], sys.argv[2::2]):\n"
             "    s = socket.socket(socket.AF_UNIX)\n    try:\n        s.connect(path.replace('@', '\\0', 1))\n"
             "        print(name, 'connected')\n    except OSError as e:\n        print(name, 'refused', path, e.strerror)\n")
    (place / "work" / "probe.py").write_text(probe)
    arguments = " ".join(f"{name} {path}" for name, path in paths.items()) + f" abstract @{abstract[1:]}"
    try:
        provider, _ = await _run(place, frame_checker, [f"python3 probe.py {arguments}"],
                                 sandbox_unix_sockets=[str(paths["allowed"])])
    finally:
        for server in listening:
            server.close()
    said = _said(provider, 1)
    outcome = {line.split()[0]: line.split()[1] for line in said.splitlines() if line.split()[:1] and line.split()[0] in {*paths, "abstract"}}
    assert outcome == {"home": "refused", "var": "refused", "folder": "connected", "allowed": "connected", "abstract": "refused"}
    assert "Unix sockets outside the session's folders are unreachable" in said and "sandbox_unix_sockets" in said


async def test_commits_work_but_hooks_git_config_claude_settings_and_mcp_json_cannot_be_planted(
        place: Path, frame_checker: FrameChecker) -> None:
    work, outside = place / "work", place / "outside"
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    config_before = (work / ".git" / "config").read_text()
    provider, done = await _run(place, frame_checker, [
        "echo 'curl evil' > .git/hooks/pre-commit",
        "git config core.hooksPath /var/tmp",
        "echo '{\"mcpServers\": {}}' > .mcp.json",
        "mkdir -p .claude && echo '{}' > .claude/settings.json",
        "mv .git .git-moved",
        "echo ok > f && git add f && git -c user.email=a@b.c -c user.name=A commit -qm first && echo committed",
        f"ln -s {outside} out && echo x > out/through-link",
        "mount -t tmpfs none /var/tmp; mount -o remount,rw /; ls /dev",
    ])
    assert not (work / ".git" / "hooks" / "pre-commit").exists()
    assert (work / ".git" / "config").read_text() == config_before
    assert not (work / ".mcp.json").exists() and not (work / ".claude").exists()  # nor a placeholder left behind
    assert (work / ".git").is_dir() and not (work / ".git-moved").exists()
    assert "committed" in _said(provider, 6)
    log = subprocess.run(["git", "-C", str(work), "log", "--format=%s"], capture_output=True, text=True, check=True)
    assert log.stdout.split() == ["first"]
    assert list(outside.iterdir()) == []
    assert [call["success"] for call in done[:5]] == [False] * 5
    assert "read-only in the sandbox: .git/hooks inside the session's folders stays read-only" in _said(provider, 1)
    assert ".mcp.json" in _said(provider, 3) and "[sandbox]" in _said(provider, 3)
    assert f"{outside}/through-link is outside the folders sandboxed commands may write" in _said(provider, 7)
    devices = _said(provider, 8)
    assert "permission denied" in devices.lower() and "sda" not in devices and "null" in devices


async def test_the_model_is_told_what_the_sandbox_allows(place: Path, frame_checker: FrameChecker) -> None:
    provider, _ = await _run(place, frame_checker, ["true"])
    system = provider.requests[0].system or ""
    [shell] = [tool for tool in provider.requests[0].tools if tool.name == "shell"]
    for told in (system, shell.description):
        assert "OS sandbox" in told and str(place / "work") in told and "private /tmp" in told
        assert "~/.ssh" in told and "API keys are not" in told and ".git/hooks" in told
