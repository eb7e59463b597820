"""A one-file MCP server for the VS Code end-to-end test: tools that ask before they run.

The test's project names it in its ``.mcp.json`` (``stamps``); a host offers its tools as
``mcp__stamps__stamp`` and ``mcp__stamps__erase``. Neither is annotated read-only and neither
proposes file ``edits``, so a host asks before each call and VS Code paints the question on its
generic confirmation card (not the terminal card nor the file card).

* ``stamp(note)`` appends ``note`` as one line to ``stamps.txt`` in the folder given as the first
  argument and says how many lines it now has;
* ``erase()`` removes ``stamps.txt``.

Usage: stamp_server.py <folder> (stdio).
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("stamps")
STAMPS = "stamps.txt"
FOLDER = Path(".")


@server.tool(title="Stamp")
def stamp(note: str) -> str:
    """Append a note as one line to stamps.txt."""
    path = FOLDER / STAMPS
    with path.open("a") as handle:
        handle.write(note + "\n")
    return f"Stamped {note!r}; {STAMPS} has {len(path.read_text().splitlines())} line(s)."


@server.tool(title="Erase stamps")
def erase() -> str:
    """Remove stamps.txt."""
    (FOLDER / STAMPS).unlink(missing_ok=True)
    return f"Erased {STAMPS}."


if __name__ == "__main__":
    FOLDER = Path(sys.argv[1]) if len(sys.argv) > 1 else FOLDER
    server.run("stdio")
