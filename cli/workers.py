"""``agent-host serve --workers N``: N host processes on one port, one host, every core of one machine.

The parent (this module) holds the data directory's lock, binds the one listening socket, starts
an embedded ``nats-server`` (``host.cluster.nats_server``, JetStream under ``<data dir>/jetstream``,
its Go code on one thread: it shares the cores with the workers;
``--cluster URL`` uses that server instead) and runs N children, each an ``agent-host serve
--cluster`` of its own on ``<data dir>/workers/<i>`` (its SQLite files, its ``host.lock``) holding
leases under its own name (``<machine>-<hash of that folder>``: stable per worker index, so a
restarted worker takes its sessions back at once). It prints one URL and publishes it in the data
directory's ``host.json``, as ``serve`` does, once every worker accepts connections.

**One port: a listening socket handed to the children**, not ``SO_REUSEPORT``. The parent binds
and listens once and each child inherits the descriptor (``--listen-fd``, ``pass_fds``) and
accepts on it. Why: ``--port 0`` gives one port known before any worker starts (with
``SO_REUSEPORT`` each child would have to bind a port chosen elsewhere, a race); no other process
of the same user can join the port and take a share of the connections (``SO_REUSEPORT`` lets any
socket of the same user bind it too); a connection waiting in the queue when a worker dies is
accepted by another worker (a ``SO_REUSEPORT`` socket's queue dies with its process); a busy worker
accepts less, as it polls the socket less often. The cost: the kernel does not spread the
accepts evenly, so a burst of connections may favour the idlest worker.

**Supervision.** A worker that exits while the host runs is started again (after 1 s, longer
while it keeps dying at start: at most 30 s between tries) and logged. SIGINT (Ctrl-C) or SIGTERM
to the parent stops every worker (SIGTERM, SIGKILL after 20 s: each closes its connections and
writes its snapshots), then the NATS server, last, as the workers write to it until they end. The
children run in sessions of their own (a terminal's Ctrl-C reaches only the parent, which decides
the order), and each watches a pipe only the parent holds open: should the parent die without
stopping them (SIGKILL), the pipe's end stops them, and the NATS server is sent SIGTERM
(``PR_SET_PDEATHSIG``, Linux).

**Security, as ``serve``.** The workers accept the same token (handed to them in the environment,
never on a command line) and the named tokens of the data directory's ``tokens.json`` (``agent-host
token``; a revoked one ends its connections on every worker); the NATS server listens on 127.0.0.1 on a port it picks and asks for a
token of its own (random, written to a file only the user can read, given to the workers in the
environment), so no other user of the machine can read or write the log; its monitoring port
(also 127.0.0.1, used to learn it is ready) shows no message contents.

SIGHUP (sent by a client that finds the config file changed) is answered in ``host.json``: the
workers keep the config they started with until the host is started again.

Exit codes as ``serve``'s: 0 after a clean stop, 2 when the NATS server or a worker cannot start.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cli import shared_host
from host.cluster.nats_server import EmbeddedNats, EmbeddedNatsError
from host.transport.server import listening_socket

__all__ = ["WORKERS_FOLDER", "WorkerSet", "run"]

logger = logging.getLogger(__name__)

WORKERS_FOLDER = "workers"
"""``<data dir>/workers/<i>``: each worker's own data directory."""

STOP_GRACE = 20.0
"""Seconds a worker has to stop after SIGTERM before it is killed."""

READY_LINE = "agent-host listening on "


@dataclass
class Worker:
    """One child ``agent-host serve --cluster`` and what the parent knows of it."""

    index: int
    data_dir: Path
    process: asyncio.subprocess.Process | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    starts: int = 0


class WorkerSet:
    """N workers on one listening socket, started, restarted and stopped by this process."""

    def __init__(self, count: int, data_dir: Path, sock: socket.socket, *, cluster_url: str, environ: dict[str, str],
                 config: str | None, log_level: str) -> None:
        self.data_dir = data_dir
        self.workers = [Worker(index, data_dir / WORKERS_FOLDER / str(index)) for index in range(count)]
        self.sock = sock
        self.cluster_url = cluster_url
        self.environ = environ
        self.config = config
        self.log_level = log_level
        self.stopping = False
        self._lifeline_read, self._lifeline_write = os.pipe()
        """The children inherit the read end; only this process holds the write end (see the docstring)."""
        self._tasks: list[asyncio.Task[None]] = []

    def command(self, worker: Worker) -> list[str]:
        # -P: the directory the host was started in (a project's) is not put on sys.path, so a folder
        # of it named like one of this host's packages (plugins/, tools/, cli/...) is never imported
        # in its place.
        command = [sys.executable, "-P", "-m", "cli.main", "serve", "--data-dir", str(worker.data_dir),
                   "--listen-fd", str(self.sock.fileno()), "--lifeline-fd", str(self._lifeline_read),
                   "--tokens-dir", str(self.data_dir), "--log-level", self.log_level]
        return command + (["--config", self.config] if self.config else [])

    async def start(self, timeout: float = 120.0) -> None:
        """Start every worker, the first alone (it then writes the host-wide root channel: the
        others find it running and forward their root changes to it, none racing it for the
        root); return once each accepts connections (``RuntimeError`` if one cannot start: the
        message names it)."""
        for worker in self.workers:
            worker.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        deadline = time.monotonic() + timeout
        await self._start_some(self.workers[:1], timeout)
        await self._start_some(self.workers[1:], max(1.0, deadline - time.monotonic()))

    async def _start_some(self, workers: list[Worker], timeout: float) -> None:
        tasks = [asyncio.create_task(self._supervise(worker)) for worker in workers]
        self._tasks += tasks
        all_ready: asyncio.Future[Any] = asyncio.ensure_future(asyncio.gather(*(worker.ready.wait() for worker in workers)))
        waited: list[asyncio.Future[Any]] = [all_ready, *tasks]
        done, _ = await asyncio.wait(waited, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if all_ready in done:
            return
        all_ready.cancel()
        # (Cancelled, a gather ends with the CancelledError as its exception: read here, so that
        # asyncio does not print it as "never retrieved" under the worker's own messages.)
        all_ready.add_done_callback(lambda gathered: gathered.cancelled() or gathered.exception())
        for task in done:
            task.result()  # a worker that could not start: its RuntimeError
        missing = [worker.index for worker in workers if not worker.ready.is_set()]
        raise RuntimeError(f"workers {missing} did not accept connections within {timeout:g} s; see their messages above")

    async def _supervise(self, worker: Worker) -> None:
        """Run ``worker``; start it again whenever it ends while the host runs."""
        delay = 1.0
        while not self.stopping:
            started = time.monotonic()
            worker.starts += 1
            environ = {**os.environ, **self.environ, "AGENT_HOST_CLUSTER_URL": self.cluster_url}
            worker.process = await asyncio.create_subprocess_exec(
                *self.command(worker), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, env=environ,
                pass_fds=(self.sock.fileno(), self._lifeline_read), start_new_session=True)
            reader = asyncio.create_task(self._read(worker, worker.process))
            status = await worker.process.wait()
            await reader
            if self.stopping:
                return
            if not worker.ready.is_set() and worker.starts == 1:
                raise RuntimeError(f"worker {worker.index} exited with status {status} before it accepted connections; "
                                   "see its messages above")
            lived = time.monotonic() - started
            delay = 1.0 if lived > 60 else min(delay * 2, 30.0)
            logger.warning("worker %d (pid %d) exited with status %s; starting it again in %.0f s",
                           worker.index, worker.process.pid, status, delay)
            await asyncio.sleep(delay)

    async def _read(self, worker: Worker, process: asyncio.subprocess.Process) -> None:
        """A worker's stdout: its ``listening`` line says it is ready; the rest is passed on."""
        assert process.stdout is not None
        while line := await process.stdout.readline():
            text = line.decode(errors="replace").rstrip("\n")
            if text.startswith(READY_LINE):
                worker.ready.set()
            else:
                print(f"[worker {worker.index}] {text}", file=sys.stderr, flush=True)

    async def stop(self) -> None:
        """SIGTERM to every worker this set started, SIGKILL to those still running after ``STOP_GRACE``."""
        self.stopping = True
        running = [worker.process for worker in self.workers if worker.process is not None and worker.process.returncode is None]
        for process in running:
            try:
                process.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
        if running:
            _, late = await asyncio.wait([asyncio.create_task(process.wait()) for process in running], timeout=STOP_GRACE)
            for process in running:
                if process.returncode is None:
                    logger.warning("worker pid %d did not stop within %.0f s; killing it", process.pid, STOP_GRACE)
                    process.kill()
                    await process.wait()
            del late
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        os.close(self._lifeline_write)
        os.close(self._lifeline_read)


def run(count: int, *, config: Any, data_dir: Path, identity: dict[str, str], config_path: str | None,
        log_level: str, announce: Any) -> int:
    """The parent of ``serve --workers``, the data directory's lock held (``cli.serve``)."""
    token = config.server.token or secrets.token_urlsafe(24)
    try:
        sock = listening_socket(config.server.host, config.server.port)
    except OSError as error:
        print(f"agent-host: cannot listen on {config.server.host}:{config.server.port}: {error.strerror}", file=sys.stderr)
        return 2
    nats: EmbeddedNats | None = None
    try:
        if config.cluster.url:
            cluster_url = config.cluster.url
        else:
            nats_token = secrets.token_urlsafe(24)
            try:
                nats = EmbeddedNats(data_dir, token=nats_token, die_with_parent=True).start()
            except EmbeddedNatsError as error:
                print(f"agent-host: {error}", file=sys.stderr)
                return 2
            cluster_url = f"nats://{nats_token}@127.0.0.1:{nats.port}"
        address = sock.getsockname()
        bracketed = f"[{address[0]}]" if ":" in address[0] else address[0]
        url = f"ws://{bracketed}:{address[1]}/?token={token}"
        workers = WorkerSet(count, data_dir, sock, cluster_url=cluster_url, environ={"AGENT_HOST_TOKEN": token},
                            config=config_path, log_level=log_level)
        try:
            return asyncio.run(_serve(workers, data_dir, url, identity, announce, config_path))
        except KeyboardInterrupt:
            return 0
    finally:
        sock.close()
        if nats is not None:
            nats.stop()  # last: the workers wrote to it until they ended


async def _serve(workers: WorkerSet, data_dir: Path, url: str, identity: dict[str, str], announce: Any,
                 config_path: str | None) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    published: dict[str, str] = {}

    def reload() -> None:
        """SIGHUP (a client found the config file changed: ``cli.shared_host``): the workers keep
        the config they started with; said in ``host.json`` so the client need not wait."""
        if "url" not in published:
            return
        wanted = shared_host.config_identity(config_path, {})["text"]
        shared_host.publish(data_dir, url=published["url"], config=identity, terminal=False,
                            reload={"text": wanted, "error": "serve --workers takes a changed config file when it is "
                                                             "started again: stop it (Ctrl-C) and start it"})
        logger.warning("config reload asked for: serve --workers takes a changed config when it is started again")

    loop.add_signal_handler(signal.SIGHUP, reload)  # (its default would end the parent and so the host)
    try:
        starting = asyncio.create_task(workers.start())
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait([starting, stopped], return_when=asyncio.FIRST_COMPLETED)
        if not starting.done():
            starting.cancel()
            return 0
        try:
            starting.result()
        except RuntimeError as error:
            print(f"agent-host: {error}", file=sys.stderr)
            return 2
        local = url.replace("ws://0.0.0.0:", "ws://127.0.0.1:", 1).replace("ws://[::]:", "ws://[::1]:", 1)
        shared_host.publish(data_dir, url=local, config=identity, terminal=False)
        published["url"] = local
        announce(f"agent-host listening on {url}")
        await stopped
        return 0
    finally:
        await workers.stop()
