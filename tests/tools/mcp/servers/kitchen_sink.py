"""Test MCP server (stdio or streamable HTTP) built with the SDK's `MCPServer`.

Tools, each exercising one behaviour the host must handle:
* `echo(text)`            - text back, read-only annotated.
* `slow(steps)`           - reports `steps` progress notifications, then finishes.
* `ask_name()`            - elicits {name: str, age: int, subscribe: bool, colour: enum}.
* `grow()`                - adds a tool `extra` and sends tools/list_changed.
* `die()`                 - exits the process mid-call (exit code 3).
* `spawn_sleeper()`       - starts a grandchild that ignores SIGTERM-free shutdown; reports its pid.
* `spawn_daemon()`        - starts a grandchild in a session of its own (out of the server's
                            process group, as `setsid` does); reports its pid.
* `picture()`             - an image, an embedded blob, a resource link and structured content.
* `fail()`                - a result with isError.
* `hang()`                - reports progress once, then never returns (for cancellation).
* `env_var(name)`         - the value of an environment variable, or "<unset>".

Usage: kitchen_sink.py [stdio|http] [options]. With `http`, it binds 127.0.0.1 port 0 and
prints `PORT <n>` on stdout once listening. `--die-at-start` exits before serving.
`--marker FILE` appends one line per start, so tests can count restarts. `--gate DIR` makes each
start (after its marker line, before serving or dying) wait until it can take one ticket, a file
the test puts in DIR (`conftest.let_start`): the test decides when, and how many, starts go on,
however fast or slow the machine is. `--stubborn` ignores SIGTERM and keeps running after stdin
closes (only SIGKILL ends it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Literal

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp_types import BlobResourceContents, EmbeddedResource, ResourceLink, ToolAnnotations
from pydantic import BaseModel, Field

server = MCPServer("kitchen-sink")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False), title="Echo text")
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def write_text(path: str, text: str) -> str:
    """Write a file (a server that changes the user's project behind the host's back)."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return f"wrote {len(text)} characters"


@server.tool()
async def slow(steps: int, ctx: Context) -> str:
    """Report progress `steps` times."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
    return f"done after {steps} steps"


class Person(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(description="Your age", ge=0, le=150)
    subscribe: bool = Field(default=False, description="Subscribe to news?")
    colour: Literal["red", "green", "blue"] = Field(description="Favourite colour")


@server.tool()
async def ask_name(ctx: Context) -> str:
    """Ask the user who they are."""
    outcome = await ctx.elicit("Who are you?", Person)
    if outcome.action == "accept":
        person = outcome.data
        return f"hello {person.name} ({person.age}, {person.colour}, subscribe={person.subscribe})"
    return f"no answer: {outcome.action}"


def extra() -> str:
    """A tool that appears after `grow`."""
    return "extra!"


@server.tool(annotations=ToolAnnotations(destructiveHint=True))
async def grow(ctx: Context) -> str:
    """Add the `extra` tool."""
    server.add_tool(extra)
    await ctx.request_context.session.send_tool_list_changed()
    return "grown"


@server.tool()
def die() -> str:
    """Exit the server process in the middle of the call."""
    sys.stdout.flush()
    os._exit(3)


@server.tool()
def spawn_sleeper() -> str:
    """Start a grandchild process in this server's process group and report its pid."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    return str(child.pid)


@server.tool()
def spawn_daemon() -> str:
    """Start a grandchild that leaves this server's process group and session, and report its pid."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    return str(child.pid)


@server.tool()
def picture() -> list:
    """Mixed content."""
    return [
        "caption",
        Image(data=b"\x89PNG fake", format="png"),
        EmbeddedResource(type="resource", resource=BlobResourceContents(uri="mem://blob", mimeType="application/pdf", blob="JVBERi0=")),
        ResourceLink(type="resource_link", name="readme", uri="file:///tmp/readme.md", mimeType="text/markdown"),
    ]


@server.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("this tool always fails")


@server.tool()
async def hang(ctx: Context) -> str:
    """Reports that it started, then never finishes."""
    import anyio

    await ctx.report_progress(0, None, "hanging")
    await anyio.sleep_forever()
    return "unreachable"


@server.tool()
def env_var(name: str) -> str:
    """One environment variable of the server process."""
    return os.environ.get(name, "<unset>")


def main() -> None:
    args = sys.argv[1:]
    if "--marker" in args:
        marker = args[args.index("--marker") + 1]
        with open(marker, "a") as handle:
            handle.write(f"{os.getpid()}\n")
    if "--gate" in args:
        take_a_ticket(args[args.index("--gate") + 1])
    if "--die-at-start" in args:
        sys.stderr.write("kitchen-sink: refusing to start (asked to die)\n")
        sys.exit(7)
    if "--stubborn" in args:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args and args[0] == "http":
        serve_http()
    else:
        server.run("stdio")
    if "--stubborn" in args:
        time.sleep(600)


def take_a_ticket(gate: str) -> None:
    """Wait until a ticket lies in the folder ``gate``, and take it (renaming is atomic: of two
    starts that see the same ticket, one gets it and the other waits for the next)."""
    while True:
        for name in sorted(os.listdir(gate)):
            if name.endswith(".taken"):
                continue
            try:
                os.rename(os.path.join(gate, name), os.path.join(gate, f"{name}.{os.getpid()}.taken"))
            except FileNotFoundError:
                continue
            return
        time.sleep(0.02)  # (nothing to be notified by; the test's tickets are files)


def serve_http() -> None:
    import anyio
    import uvicorn

    async def run() -> None:
        config = uvicorn.Config(server.streamable_http_app(), host="127.0.0.1", port=0, log_level="warning")
        http = uvicorn.Server(config)

        async def announce() -> None:
            while not http.started:
                await anyio.sleep(0.01)
            port = http.servers[0].sockets[0].getsockname()[1]
            print(f"PORT {port}", flush=True)

        async with anyio.create_task_group() as group:
            group.start_soon(announce)
            await http.serve()

    anyio.run(run)


if __name__ == "__main__":
    main()
