"""Process families on real processes: jobs daemonised with ``&``, ``nohup``, ``setsid`` and a double
fork are found by their token and ended together; a subreaper reaps the orphans it adopted and
leaves the children other code waits for alone."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.polling import eventually
from tools import processes
from tools.pty import PtyProcess

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="families are found through /proc")

DAEMONS = (
    "sleep 300 & echo $! > amp.pid; "
    "nohup sleep 300 > /dev/null 2>&1 & echo $! > nohup.pid; "
    "setsid sh -c 'echo $$ > setsid.pid; exec sleep 300' & "
    "(sh -c 'sleep 300 & echo $! > double.pid' &); "
    "while [ ! -s double.pid ] || [ ! -s setsid.pid ]; do sleep 0.01; done"
)
"""One of each kind of background job: plain, nohup, setsid, double fork (its parent exits). The
setsid one says its own pid: under job control ``setsid`` forks again (a group leader cannot
start a session), so ``$!`` would name the parent that exits."""


def daemon_pids(directory: Path) -> list[int]:
    return [int((directory / f"{name}.pid").read_text()) for name in ("amp", "nohup", "setsid", "double")]


def status(pid: int) -> tuple[str, int] | None:
    """(state, parent) of ``pid``, or None once it no longer exists at all."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return fields[0], int(fields[1])


def ended(pid: int) -> bool:
    """Gone, or a zombie some other process must reap (init, without a subreaper here)."""
    found = status(pid)
    return found is None or (found[0] in ("Z", "X") and found[1] != os.getpid())




@pytest.fixture
def subreaper():
    assert processes.become_subreaper()
    yield
    processes.stop_being_subreaper()


async def run_to_exit(command: str, directory: Path) -> PtyProcess:
    process = await PtyProcess.spawn(["/bin/sh", "-c", command], cwd=directory, env=os.environ)
    assert await asyncio.wait_for(process.wait(), 10) == 0
    return process


async def test_every_kind_of_background_job_is_a_member_and_ends_with_its_family(tmp_path: Path, subreaper: None) -> None:
    process = await run_to_exit(DAEMONS, tmp_path)
    try:
        pids = daemon_pids(tmp_path)
        assert set(pids) <= process.background(), "a daemonised job was not found"
        # Orphaned, they were re-parented to this process (the subreaper), not to init.
        assert all((status(pid) or ("", 0))[1] == os.getpid() for pid in pids)
        await process.terminate(0.5)
        assert process.members() == set()
        # Ended and reaped: no zombie is left in the process table.
        assert await eventually(lambda: all(status(pid) is None for pid in pids)), [status(pid) for pid in pids]
    finally:
        process.close()


async def test_a_job_ignoring_sigterm_and_sighup_is_killed_after_the_grace(tmp_path: Path, subreaper: None) -> None:
    process = await run_to_exit("setsid sh -c 'trap \"\" TERM HUP; echo $$ > stubborn.pid; sleep 300' & "
                                "while [ ! -s stubborn.pid ]; do sleep 0.01; done", tmp_path)
    try:
        stubborn = int((tmp_path / "stubborn.pid").read_text())
        started = time.monotonic()
        await process.terminate(0.3)
        assert time.monotonic() - started >= 0.3
        assert await eventually(lambda: status(stubborn) is None)
    finally:
        process.close()


async def test_another_familys_processes_are_not_members(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = await run_to_exit("setsid sleep 300 & echo $! > setsid.pid", tmp_path / "a")
    second = await run_to_exit("setsid sleep 300 & echo $! > setsid.pid", tmp_path / "b")
    try:
        mine = int((tmp_path / "a" / "setsid.pid").read_text())
        theirs = int((tmp_path / "b" / "setsid.pid").read_text())
        assert mine in first.background() and theirs not in first.background()
        await first.terminate(0.2)
        assert await eventually(lambda: ended(mine))
        assert not ended(theirs)
    finally:
        await second.terminate(0.2)
        first.close()
        second.close()


async def test_reaping_leaves_a_child_its_owner_waits_for_alone(subreaper: None) -> None:
    child = subprocess.Popen(["/bin/sh", "-c", "exit 3"], start_new_session=True)
    assert await eventually(lambda: (status(child.pid) or ("Z",))[0] == "Z")
    processes.reap_orphans()
    # Its owner still gets its real exit status.
    assert child.wait(timeout=5) == 3


async def test_a_daemon_that_ends_on_its_own_leaves_no_zombie_behind(tmp_path: Path, subreaper: None) -> None:
    process = await run_to_exit("setsid sh -c 'echo $$ > quick.pid; exec sleep 0.5' & "
                                "while [ ! -s quick.pid ]; do sleep 0.01; done", tmp_path)
    process.close()
    quick = int((tmp_path / "quick.pid").read_text())
    assert status(quick)[1] == os.getpid()  # adopted by this subreaper
    processes.reap_orphans()  # the host's periodic pass: sees it alive, one of its own families
    assert await eventually(lambda: (status(quick) or ("Z",))[0] == "Z")
    processes.reap_orphans()
    assert status(quick) is None, "the daemon's zombie was left in the process table"
