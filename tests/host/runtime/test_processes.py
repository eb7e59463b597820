"""Background processes of the ``shell`` tool over a real host: a call's jobs (``&``, ``nohup``,
``setsid``, a double fork) run on after the call, end when the session is disposed or the host
stops, and leave no zombie behind (the host is their subreaper and reaps them)."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from client import PROTOCOL_VERSIONS
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import idle, ready_session, serving
from tests.host.runtime.tools._support import calls, scripted, tools_config
from tests.host.state.test_durability import host_process
from tests.tools.test_processes import DAEMONS, daemon_pids, eventually, status

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="processes are checked through /proc")


def running(pid: int) -> bool:
    found = status(pid)
    return found is not None and found[0] not in ("Z", "X")


async def start_daemons(client, session: str) -> list[int]:
    chat = client.chat_of(session)
    client.send_message(chat, "start the servers")
    await client.wait_for(lambda m, e: bool((client.state(chat) or {}).get("turns")), timeout=60)
    await idle(client, chat)
    [call] = calls(client, chat)
    assert call["success"] is True, call
    text = "".join(item.get("text", "") for item in call["content"] if item.get("type") == "text")
    assert "4 background processes" in text and "still running" in text
    return call


def agent(tmp_path: Path) -> ScriptedProvider:
    return ScriptedProvider([call_tools(("shell", {"command": f"{DAEMONS}; echo started"})), reply("they run")])


async def test_a_calls_background_jobs_run_on_and_end_with_their_session(tmp_path: Path, frame_checker: FrameChecker) -> None:
    async with serving(tools_config(tmp_path, auto_approve=True), frame_checker, [scripted(agent(tmp_path))], versions=PROTOCOL_VERSIONS) as (_, client):
        session = await ready_session(client)
        other = await ready_session(client)
        await start_daemons(client, session)
        pids = daemon_pids(tmp_path)
        # The call is over; what it started in the background still runs (a server it will use next).
        assert all(running(pid) for pid in pids)
        await client.dispose_session(other)
        assert all(running(pid) for pid in pids), "another session's dispose ended them"
        await client.dispose_session(session)
        # Ended with the session, and reaped by the host: not even a zombie is left.
        assert await eventually(lambda: all(status(pid) is None for pid in pids)), [status(pid) for pid in pids]


async def test_host_stop_ends_the_background_jobs_sessions_left(tmp_path: Path, frame_checker: FrameChecker) -> None:
    async with serving(tools_config(tmp_path, auto_approve=True), frame_checker, [scripted(agent(tmp_path))], versions=PROTOCOL_VERSIONS) as (_, client):
        session = await ready_session(client)
        await start_daemons(client, session)
        pids = daemon_pids(tmp_path)
        assert all(running(pid) for pid in pids)
    assert await eventually(lambda: all(status(pid) is None for pid in pids)), [status(pid) for pid in pids]


async def test_jobs_left_running_by_a_host_killed_with_sigkill_end_when_the_next_host_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import shutil

    from tests.host.runtime.terminals.test_terminals import new_terminal, see
    from tests.host.state.test_durability import host_in, root_client

    monkeypatch.setenv("SHELL", shutil.which("bash") or "/bin/sh")  # the terminal's shell reads DAEMONS as POSIX sh
    monkeypatch.setenv("HOME", str(tmp_path))
    host = host_in(tmp_path, "")
    unrelated = None
    try:
        await host.start()
        client = await root_client(host)
        terminal = await new_terminal(client, name="daemons")
        client.dispatch(terminal, {"type": "terminal/input", "data": f"{DAEMONS}; printf 'all-%s\\n' started\n"})
        await see(client, terminal, "all-started")
        await client.close()
        pids = daemon_pids(tmp_path)
        # Not ours: the same command started outside any host carries no host's token.
        import subprocess
        unrelated = subprocess.Popen(["sleep", "300"])
        # Killed together with its guardian (the whole cgroup, say): nothing ended the jobs then,
        # the nohup'd and setsid'd ones outlive the host.
        [guardian] = [pid for pid, command in host.children().items() if "_guardian.py" in command]
        os.kill(guardian, signal.SIGKILL)
        host.kill()
        survivors = [pid for pid in pids if running(pid)]
        assert len(survivors) >= 2, [status(pid) for pid in pids]
        assert (tmp_path / "data" / "processes.json").exists()

        await host.start()
        assert await eventually(lambda: not any(running(pid) for pid in survivors), timeout=30), [status(pid) for pid in survivors]
        assert unrelated.poll() is None, "a process no host started was ended"
        host.stop()
        assert not (tmp_path / "data" / "processes.json").exists()  # a clean stop leaves nothing to end
    finally:
        host.stop()
        if unrelated is not None:
            unrelated.kill()
            unrelated.wait()


async def test_nothing_a_host_started_outlives_it_when_it_is_killed_with_sigkill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A real host process with its workspace's ``.mcp.json`` server running, a SessionStart hook's
    ``nohup`` and ``setsid`` jobs, and a terminal whose shell left one job of each kind running
    (``&``, ``nohup``, ``setsid``, a double fork), killed
    with SIGKILL (a cluster's failover, the OOM killer): the server, the shell and every job end
    within seconds, by their parent-death signal and the host's guardian (``child_processes``),
    without waiting for a next host on the data directory."""
    from tests.host.runtime.terminals.test_terminals import new_terminal, see
    from tests.host.state.test_durability import root_client
    from tests.tools.mcp.conftest import KITCHEN_SINK

    monkeypatch.setenv("SHELL", "/bin/sh")
    monkeypatch.setenv("ENV", "")
    monkeypatch.setenv("HOME", str(tmp_path))
    project, marker, hook_pids = tmp_path / "project", tmp_path / "sink-starts.txt", tmp_path / "hook-pids"
    project.mkdir()
    hook_pids.mkdir()
    plugins = hook_plugin(tmp_path / "plugins", hook_pids)
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"sink": {
        "command": sys.executable, "args": [str(KITCHEN_SINK), "stdio", "--marker", str(marker)]}}}))
    config = tmp_path / "host.toml"
    config.write_text(f'[sessions]\ndefault_directory = "{project}"\ndefault_agent = "offline"\n'
                      f'[mcp]\nstart = "session"\nstart_wait = 120\n[trust]\nfolders = ["{project}"]\n'
                      f'[plugins]\ndirectories = ["{plugins}"]\n')
    host = host_process(tmp_path / "data", config)
    pids: dict[str, int] = {}
    try:
        await host.start()
        client = await root_client(host)
        session = await client.create_session()
        await client.subscribe(session)
        await client.wait_for(lambda m, e: any((tool.get("_meta") or {}).get("mcpServer") == "sink"
                                               for tool in (client.state(session) or {}).get("serverTools") or []), timeout=60)
        terminal = await new_terminal(client, name="daemons")
        client.dispatch(terminal, {"type": "terminal/input", "data": f"{DAEMONS}; printf 'all-%s\\n' started\n"})
        await see(client, terminal, "all-started")
        await client.close()
        [server] = [int(line) for line in marker.read_text().split()]
        # Every live child of the host (the server, the terminal's shell, the guardian) and every job.
        pids = {command: pid for pid, command in host.children().items() if running(pid)}
        assert server in pids.values() and len(pids) >= 3, pids
        pids.update({f"job {name}": pid for name, pid in zip(("&", "nohup", "setsid", "double fork"), daemon_pids(project))})
        pids.update({f"hook's job {n}": pid for n, pid in enumerate(await hook_jobs(hook_pids, 2))})
        assert all(running(pid) for pid in pids.values()), {name: status(pid) for name, pid in pids.items()}

        host.kill()
        assert await eventually(lambda: not any(running(pid) for pid in pids.values()), timeout=5), {
            name: status(pid) for name, pid in pids.items() if running(pid)}
    finally:
        host.stop()
        for pid in pids.values():
            if running(pid):
                os.kill(pid, signal.SIGKILL)


def hook_plugin(root: Path, pids: Path) -> Path:
    """A plugin whose SessionStart hook leaves two jobs running: a ``nohup`` one and a ``setsid``
    one (a session of its own, out of the hook's process group); each writes its pid."""
    plugin = root / "daemonizer"
    (plugin / ".plugin").mkdir(parents=True)
    (plugin / ".plugin" / "plugin.json").write_text('{"name": "daemonizer", "version": "1.0.0"}')
    (plugin / "hooks").mkdir()
    command = (f"nohup sleep 300 > /dev/null 2>&1 & echo $! > {pids}/nohup-$$.pid; "
               f"setsid sh -c 'echo $$ > {pids}/setsid-'$$'.pid; exec sleep 300' > /dev/null 2>&1 < /dev/null &")
    import json

    (plugin / "hooks" / "hooks.json").write_text(json.dumps(
        {"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": command}]}]}}))
    return root


async def hook_jobs(pids: Path, count: int) -> list[int]:
    assert await eventually(lambda: len([p for p in pids.glob("*.pid") if p.read_text().strip()]) >= count, timeout=20)
    return [int(p.read_text()) for p in sorted(pids.glob("*.pid"))]


async def test_what_a_hook_leaves_running_ends_with_its_session_and_with_the_host(tmp_path: Path, frame_checker: FrameChecker) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    config = tools_config(tmp_path, auto_approve=True)
    config = config.model_copy(update={"plugins": config.plugins.model_copy(
        update={"directories": [str(hook_plugin(tmp_path / "plugins", pids))]})})
    async with serving(config, frame_checker, [scripted(ScriptedProvider([]))], versions=PROTOCOL_VERSIONS) as (_, client):
        session = await ready_session(client)
        first = await hook_jobs(pids, 2)
        # The hook has finished; what it started in the background runs on, out of its group.
        assert all(running(pid) for pid in first)
        other = await ready_session(client)
        both = await hook_jobs(pids, 4)
        second = [pid for pid in both if pid not in first]
        await client.dispose_session(session)
        assert await eventually(lambda: not any(running(pid) for pid in first)), [status(pid) for pid in first]
        assert all(running(pid) for pid in second), "another session's hook jobs were ended"
        assert other
    # The host stopped: the other session's hook jobs went with it.
    assert await eventually(lambda: not any(running(pid) for pid in second)), [status(pid) for pid in second]
