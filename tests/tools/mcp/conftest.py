"""Fixtures for MCP tests: specs for the fixture servers, a manager that is always stopped,
status/tool-change recorders to wait on, and /proc helpers to prove no process survives."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.conftest import NEVER as NEVER  # (the MCP tests take it from here with the fixtures)
from tests.polling import eventually as eventually  # (the MCP tests take it from here)
from tools.base import ToolContext
from tools.mcp import McpManager, McpServerSpec, RestartPolicy, ServerStatus

SERVERS = Path(__file__).parent / "servers"
KITCHEN_SINK = SERVERS / "kitchen_sink.py"
SILENT = SERVERS / "silent.py"
SAMPLES = Path(__file__).parents[2] / "plugins" / "samples"

FAST = RestartPolicy(initial_delay=0.01, factor=2.0, max_delay=0.05, max_restarts=2, startup_timeout=30)
"""Restarts that do not slow the suite down; two restarts before giving up."""


def kitchen_sink(name: str = "ks", *args: str, **overrides) -> McpServerSpec:
    """A stdio spec running the kitchen-sink fixture server."""
    return McpServerSpec(name=name, transport="stdio", command=sys.executable,
                         args=(str(KITCHEN_SINK), *args), **overrides)


def silent(name: str = "mute", marker: Path | None = None) -> McpServerSpec:
    """A stdio spec running a server that never answers (not even ``initialize``)."""
    return McpServerSpec(name=name, transport="stdio", command=sys.executable,
                         args=(str(SILENT), *(("--marker", str(marker)) if marker else ())))


def let_start(gate: Path, starts: int = 1) -> None:
    """Let ``starts`` more starts of the kitchen sink run with ``--gate gate`` go on (one ticket each)."""
    gate.mkdir(exist_ok=True)
    for _ in range(starts):
        (gate / uuid.uuid4().hex).touch()


def process_gone(pid: int) -> bool:
    """True once `pid` no longer exists or is only a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state == "Z"




class Recorder:
    """Collects status changes and tool-list changes so tests can wait on them."""

    def __init__(self) -> None:
        self.statuses: list[ServerStatus] = []
        self.tool_lists: list[list[str]] = []
        self._changed = asyncio.Condition()

    async def on_status(self, status: ServerStatus) -> None:
        async with self._changed:
            self.statuses.append(status)
            self._changed.notify_all()

    async def on_tools(self, tools) -> None:
        async with self._changed:
            self.tool_lists.append([tool.name for tool in tools])
            self._changed.notify_all()

    async def status(self, predicate: Callable[[ServerStatus], bool], timeout: float = 60.0) -> ServerStatus:
        """The first recorded status (past or future) matching `predicate`."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: any(map(predicate, self.statuses))), timeout)
            return next(s for s in self.statuses if predicate(s))

    async def tools(self, predicate: Callable[[list[str]], bool], timeout: float = 60.0) -> list[str]:
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: any(map(predicate, self.tool_lists))), timeout)
            return next(t for t in self.tool_lists if predicate(t))


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
async def manager(recorder: Recorder) -> AsyncIterator[McpManager]:
    mgr = McpManager(policy=FAST, on_status=recorder.on_status, on_tools_changed=recorder.on_tools)
    try:
        yield mgr
    finally:
        await mgr.stop()


@pytest.fixture
def call_ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(working_directory=tmp_path, tool_call_id="call-1")


def children_of_this_process() -> set[int]:
    """Live (non-zombie) processes whose parent is the test process."""
    me = str(os.getpid())
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me and fields[0] != "Z":
            found.add(int(entry.name))
    return found


CONTEXT_SERVER = SERVERS / "context_server.py"


def context_server(name: str = "notes", **overrides) -> McpServerSpec:
    """A stdio spec running the context fixture server (prompts, resources, roots, logging)."""
    return McpServerSpec(name=name, transport="stdio", command=sys.executable, args=(str(CONTEXT_SERVER),), **overrides)


OAUTH_SERVER = SERVERS / "oauth_server.py"


@asynccontextmanager
async def served_over_http(script: Path, *args: str) -> AsyncIterator[str]:
    """A fixture server that listens on 127.0.0.1 port 0 and prints ``PORT <n>``: started, its MCP
    endpoint URL given, and ended (with whatever it started) when the block ends."""
    process = await asyncio.create_subprocess_exec(sys.executable, str(script), *args, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.DEVNULL)
    try:
        line = await asyncio.wait_for(process.stdout.readline(), timeout=30)  # type: ignore[union-attr]  # stdout=PIPE
        assert line.startswith(b"PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


@pytest.fixture
async def oauth_server() -> AsyncIterator[str]:
    """An OAuth-protected MCP server with its own authorization server; yields its MCP endpoint URL."""
    async with served_over_http(OAUTH_SERVER) as url:
        yield url


async def play_browser(url: str) -> int:
    """What the user's browser does with an authorization URL: follow it to the redirect target
    (the fake authorization server consents at once). Returns the final HTTP status."""
    import httpx

    async with httpx.AsyncClient(follow_redirects=True, timeout=10) as browser:
        return (await browser.get(url)).status_code
