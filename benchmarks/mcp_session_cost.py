"""What a session's MCP servers cost in memory, and what lazy start and idle stop save.

    .venv/bin/python benchmarks/mcp_session_cost.py [--sessions 5]

Each session of this host runs its own MCP server processes (sharing one process between sessions
would mix their working directories, environments and elicitations, so the host does not). This
script measures what that costs with a small stdio server written on the official ``mcp`` SDK's
``MCPServer`` (FastMCP before mcp 2), the way most Python MCP servers are: it starts a real host in-process with that server in
``[mcp]``, opens ``--sessions`` sessions with ``[mcp] start = "session"`` and reports the resident
memory (RSS, from ``/proc``) of the server processes the host spawned: in total and per session.
It then does the same with the default ``start = "first-turn"``, where sessions that have not run
a turn spawn nothing. Linux only (it reads ``/proc``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SERVER = textwrap.dedent(
    """
    from mcp.server.mcpserver import MCPServer

    app = MCPServer("notes")

    @app.tool()
    def add_note(text: str) -> str:
        \"\"\"Remember a note.\"\"\"
        return f"noted: {text}"

    app.run()
    """
)


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def _rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as handle:
                for line in handle:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


async def measure(sessions: int, start: str, workdir: Path) -> tuple[int, float]:
    from client import AhpClient
    from host.config import load_config
    from host.service import AgentHost
    from host.transport.server import start_host

    script = workdir / "notes_server.py"
    script.write_text(SERVER)
    config = load_config(None, overrides={
        "server": {"port": 0, "data_dir": str(workdir / f"data-{start}"), "token": "bench"},
        "sessions": {"default_directory": str(workdir), "default_agent": "offline"},
        "mcp": {"servers": {"notes": {"command": sys.executable, "args": [str(script)]}}, "start": start},
    }, environ={})
    running = await start_host(AgentHost(config), token="bench")
    client = await AhpClient.connect(running.url.split("?")[0], token="bench")
    try:
        await client.initialize(subscriptions=["ahp-root://"], protocol_versions=("0.2.0",))
        uris = [await client.create_session() for _ in range(sessions)]
        if start == "session":
            await client.wait_for(lambda m, e: all(
                any((t.get("_meta") or {}).get("mcpServer") == "notes" for t in (client.state(u) or {}).get("serverTools") or [])
                for u in uris), timeout=60)
        else:
            await asyncio.sleep(2)
        pids = _descendants(os.getpid())
        return len(pids), _rss_mb(pids)
    finally:
        await client.close()
        await running.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for start in ("session", "first-turn"):
            count, rss = await measure(args.sessions, start, Path(tmp))
            per = rss / args.sessions
            print(f'start = "{start}": {args.sessions} sessions, {count} server processes, {rss:.0f} MB RSS ({per:.0f} MB per session)')


if __name__ == "__main__":
    asyncio.run(main())
