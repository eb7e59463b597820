"""Children started through ``child_processes`` by a real process that is then killed with SIGKILL:
the child itself (its parent-death signal, through ``setpriv`` or the Python step) and what it left
running (a shell's background job, a ``setsid`` daemon: the guardian) end within seconds; while the
process lives, nothing is touched. And a command that cannot start raises as the plain call does."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import child_processes
from tests.polling import eventually

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signals and /proc are Linux's")

# A stand-in for a host: registers an entry for the guardian, starts a shell with that entry in its
# environment (its background job and a setsid daemon inherit it) and a plain sleep that carries
# none (only its parent-death signal ends it), prints their pids, then waits to be killed.
PARENT = """
import asyncio, json, os, sys, time
import child_processes
if sys.argv[1] == "python":
    child_processes._setpriv = None  # as on a machine without setpriv
child_processes.sweep_on_death("CHILD_PROCESSES_TEST=" + sys.argv[2])
folder = sys.argv[3]
shell = child_processes.popen(
    ["sh", "-c", "sleep 300 & echo $! > job.pid; setsid sh -c 'echo $$ > daemon.pid; exec sleep 300' & exec sleep 300"],
    cwd=folder, env={**os.environ, "CHILD_PROCESSES_TEST": sys.argv[2] + ".1"}, start_new_session=True)
async def plain():
    return await child_processes.create_subprocess_exec("sleep", "300")
bare = asyncio.run(plain())
while not all(os.path.exists(os.path.join(folder, name)) and open(os.path.join(folder, name)).read().strip()
              for name in ("job.pid", "daemon.pid")):
    time.sleep(0.01)
pids = {"shell": shell.pid, "bare": bare.pid,
        **{name: int(open(os.path.join(folder, name + ".pid")).read()) for name in ("job", "daemon")}}
print(json.dumps(pids), flush=True)
time.sleep(300)
"""


def running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")




@pytest.mark.parametrize("way", ["setpriv", "python"])
async def test_a_childs_whole_family_ends_when_its_process_is_killed_with_sigkill(tmp_path: Path, way: str) -> None:
    if way == "setpriv" and child_processes._find_setpriv() is None:
        pytest.skip("no setpriv with --pdeathsig here")
    parent = subprocess.Popen([sys.executable, "-c", PARENT, way, f"t{os.getpid()}{way}", str(tmp_path)],
                              stdout=subprocess.PIPE, text=True, cwd=Path(child_processes.__file__).parents[1])
    pids: dict[str, int] = {}
    try:
        assert parent.stdout is not None
        pids = json.loads(parent.stdout.readline())
        # The guardian looks at its parent once a second: a second and more later, all still run.
        await asyncio.sleep(1.3)
        assert {name: running(pid) for name, pid in pids.items()} == dict.fromkeys(pids, True)

        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        assert await eventually(lambda: not any(running(pid) for pid in pids.values()), timeout=5), {
            name: running(pid) for name, pid in pids.items()}
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait(10)
        for pid in pids.values():
            if running(pid):
                os.kill(pid, signal.SIGKILL)


def test_the_child_is_the_command_itself_with_its_pid_and_exit_status(tmp_path: Path) -> None:
    child = child_processes.popen(["sh", "-c", "echo $$; exit 7"], stdout=subprocess.PIPE, text=True)
    said, _ = child.communicate(timeout=30)
    assert (int(said), child.returncode) == (child.pid, 7)
    assert child_processes.run(["sh", "-c", "exit 3"], timeout=30).returncode == 3


async def test_an_asyncio_child_reads_and_writes_its_pipes() -> None:
    child = await child_processes.create_subprocess_exec("cat", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    out, _ = await asyncio.wait_for(child.communicate(b"through"), 30)
    assert (out, child.returncode) == (b"through", 0)


def test_a_command_that_cannot_start_raises_as_the_plain_call_would(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as missing:
        child_processes.popen(["no-such-command-7f3a"])
    assert missing.value.filename == "no-such-command-7f3a"
    with pytest.raises(FileNotFoundError):
        child_processes.popen(["./server"], cwd=tmp_path)  # relative to the working directory given
    script = tmp_path / "server"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(PermissionError):
        child_processes.popen(["./server"], cwd=tmp_path)
    with pytest.raises(FileNotFoundError):  # the call's own error for a working directory that is not there
        child_processes.popen(["true"], cwd=tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError):  # looked for on the PATH of the environment given
        child_processes.popen(["sh", "-c", "true"], env={"PATH": str(tmp_path)})


def test_an_entry_for_the_guardian_is_one_line_naming_a_variable() -> None:
    with pytest.raises(ValueError, match="NAME=VALUE"):
        child_processes.sweep_on_death("NO_EQUALS_SIGN")
