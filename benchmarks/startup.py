"""Start-up: ``agent-host serve`` until its first accepted WebSocket, against a bare server.

    .venv/bin/python benchmarks/startup.py [--repeat 5]
    valgrind --tool=callgrind --callgrind-out-file=/dev/null .venv/bin/python benchmarks/startup.py --path-only

Host: spawn ``agent-host serve --port 0`` (a fresh data directory each time), read the URL it
prints, complete a WebSocket handshake. Baseline: the same for the host's web stack bare, in a
fresh interpreter (``python -c``: Starlette with one WebSocket route on uvicorn with the
``websockets-sansio`` protocol and httptools, started as the host starts it; print the URL). Both are wall time from
spawn to handshake; median of ``--repeat`` alternating runs, and their ratio. The host's runs also
send an AHP ``initialize`` right after the handshake and time its answer: what a client waits for
before it can do anything (validated with ``ahp.dialects.v0_2.wire._handshake``'s model; the other
wire models, ``_generated``, load in a worker thread meanwhile).

Beside the wall times, the CPU time each process has used by then (user and system, read from
``/proc/PID/stat`` at the moment the handshake or the answer arrived): the machines these run on
are shared, and a loaded machine stretches the wall times several times over while the CPU a start
costs moves much less. The ratio of the host's CPU at its first answer to the bare server's at its
handshake is the figure to compare between runs on a busy machine.

``--path-only`` runs, once and in this process, the host's work on the way to its first answer
without the network: what ``agent-host serve`` imports, its config read, the host made and
started on a fresh data directory as ``serve`` starts it before it listens (the session services,
``host.session_services``, come after), the first ``initialize``'s params validated as a 0.2.0
handshake validates them. Under callgrind its instruction count is the start-up figure that no
other work on the machine moves (it leaves out uvicorn's start and the WebSocket, which the bare
server pays as well).

Both run from compiled bytecode, as an installed program does (``pip install`` compiles it, and
an editable checkout caches it on first run): everything they import is compiled into a temporary
``PYTHONPYCACHEPREFIX`` by one untimed run first (the repository is not written to, and
``__pycache__`` folders that tests left in it are not read). A third row shows the host compiling
its own modules from source on every start (the same cache less the project's modules, with
``PYTHONDONTWRITEBYTECODE=1``), the case of an environment that forbids bytecode files.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._runs import REPO, command_line, machine_note, median

TOKEN = "bench-token-0123456789"

_BARE = """
import asyncio, socket
import uvicorn
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute

async def endpoint(websocket):
    await websocket.accept()
    try:
        while True:
            await websocket.receive_text()
    except Exception:
        pass

async def main():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.setblocking(False)
    config = uvicorn.Config(Starlette(routes=[WebSocketRoute("/", endpoint)]), ws="websockets-sansio",
                            ws_per_message_deflate=False, log_level="warning", lifespan="on", access_log=False)
    server = uvicorn.Server(config)
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.001)
    print("listening on ws://127.0.0.1:%d/" % sock.getsockname()[1], flush=True)
    await task

asyncio.run(main())
"""
"""The baseline: the host's web stack bare (Starlette on uvicorn, its ``websockets-sansio``
WebSocket protocol and httptools, started on a bound socket as ``host.transport.server`` does),
one WebSocket route that accepts."""


def _environment(bytecode_cache: str, *, compile_every_time: bool = False) -> dict[str, str]:
    """Bytecode read from (and written to) ``bytecode_cache`` only: a ``__pycache__`` left in the
    checkout by an earlier run (tests write them) is never read, so the compiling row compiles."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    env["PYTHONPYCACHEPREFIX"] = bytecode_cache
    if compile_every_time:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """CPU time (user and system) process ``pid`` has used so far (Linux: ``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def _time_to_handshake(command: list[str], env: dict[str, str], *, initialize: bool = False) -> tuple[float, float, float]:
    """Seconds from spawn to the handshake and, with ``initialize``, to the answer to an AHP
    ``initialize`` sent right after it (the handshake's time again without); and the CPU seconds
    the process had used at that second moment."""
    from websockets.sync.client import connect

    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=REPO, env=env)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip().split(" ")[-1]
        with connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"}) as ws:
            handshake = answered = time.perf_counter() - start
            if initialize:
                ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "channel": "ahp-root://", "protocolVersions": ["0.2.0"], "clientId": "startup-bench",
                    "initialSubscriptions": ["ahp-root://"]}}))
                reply = json.loads(ws.recv(timeout=30))
                answered = time.perf_counter() - start
                assert reply.get("id") == 1 and "result" in reply, reply
            cpu = _cpu_seconds(process.pid)
    finally:
        process.terminate()
        process.wait(10)
    return handshake, answered, cpu


def _start_path() -> None:
    """``--path-only``: the host's start-up work up to its first answer, in this process (above)."""
    import asyncio

    from cli import main as command

    command._no_pydantic_plugins()  # as `agent-host` does before its first model
    from cli import serve  # noqa: F401  (what `agent-host serve` imports)
    from cli.config import load
    from host.service import AgentHost
    from host.transport.dialects import dialect_for_version

    with tempfile.TemporaryDirectory() as data_dir:
        args = command._parser(["serve"]).parse_args(["serve", "--port", "0", "--data-dir", data_dir])
        config = load(args, {"host": "127.0.0.1", "port": 0, "data_dir": data_dir, "token": TOKEN}, None, None)
        host = AgentHost(config)

        async def start() -> None:
            await host.start(sessions_later=True)  # as serve starts it: the sessions' part once it listens
            await host.stop()

        asyncio.run(start())
        dialect_for_version("0.2.0").params("initialize", {
            "channel": "ahp-root://", "protocolVersions": ["0.2.0"], "clientId": "startup-bench",
            "initialSubscriptions": ["ahp-root://"]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--path-only", action="store_true", help="the start-up work once in this process, for callgrind")
    args = parser.parse_args()
    if args.path_only:
        _start_path()
        return
    host_runs, answered_runs, bare_runs, cold_runs = [], [], [], []
    host_cpu, bare_cpu = [], []

    def host(data_dir: str, env: dict[str, str]) -> tuple[float, float, float]:
        return _time_to_handshake(
            [str(REPO / ".venv" / "bin" / "agent-host"), "serve", "--port", "0", "--data-dir", data_dir],
            {**env, "AGENT_HOST_TOKEN": TOKEN}, initialize=True)

    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as dependencies_only:
        warm = _environment(cache)
        with tempfile.TemporaryDirectory() as data_dir:
            host(data_dir, warm)  # untimed: fills the bytecode cache
        _time_to_handshake([sys.executable, "-c", _BARE], warm)
        # The same cache without the project's own modules, never written to: they compile every time.
        shutil.copytree(cache, dependencies_only, dirs_exist_ok=True)
        project = Path(dependencies_only) / REPO.relative_to(REPO.anchor)
        for compiled in project.iterdir() if project.is_dir() else ():
            if compiled.name != ".venv":  # the dependencies live there
                shutil.rmtree(compiled)
        cold = _environment(dependencies_only, compile_every_time=True)
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as data_dir:
                handshake, answered, cpu = host(data_dir, warm)
                host_runs.append(handshake)
                answered_runs.append(answered)
                host_cpu.append(cpu)
            bare, _, cpu = _time_to_handshake([sys.executable, "-c", _BARE], warm)
            bare_runs.append(bare)
            bare_cpu.append(cpu)
            with tempfile.TemporaryDirectory() as data_dir:
                cold_runs.append(host(data_dir, cold)[0])
    host_s, bare_s, cold_s = median(host_runs), median(bare_runs), median(cold_runs)
    print(f"start-up to first WebSocket, median of {args.repeat}; {machine_note()}")
    print(f"command: {command_line()}")
    print(f"{'agent-host serve':<40}{host_s:>8.3f} s   (runs {min(host_runs):.3f}-{max(host_runs):.3f})")
    print(f"{'bare Starlette + uvicorn server':<40}{bare_s:>8.3f} s   (runs {min(bare_runs):.3f}-{max(bare_runs):.3f})")
    print(f"{'ratio host / bare':<40}{host_s / bare_s:>8.2f}")
    print(f"{'agent-host serve, compiling its modules':<40}{cold_s:>8.3f} s")
    print(f"{'agent-host serve, initialize answered':<40}{median(answered_runs):>8.3f} s   (runs {min(answered_runs):.3f}-{max(answered_runs):.3f})")
    print(f"{'CPU: host at initialize answered':<40}{median(host_cpu):>8.3f} s   (runs {min(host_cpu):.3f}-{max(host_cpu):.3f})")
    print(f"{'CPU: bare server at its handshake':<40}{median(bare_cpu):>8.3f} s   (runs {min(bare_cpu):.3f}-{max(bare_cpu):.3f})")
    print(f"{'CPU ratio host / bare':<40}{median(host_cpu) / median(bare_cpu):>8.2f}")


if __name__ == "__main__":
    main()
