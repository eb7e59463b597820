"""Shared fixtures: a real host on 127.0.0.1 port 0, and clients whose every received frame is
checked against the schema of the version the client negotiated (ahp-0.2.0.schema.json for
0.2.0; a frame that does not validate fails the test that received it).

Property tests (Hypothesis) draw new examples on every run, except under ``HYPOTHESIS_PROFILE=ci``
(which ``.ci/run`` sets): there the same examples every run, so that a submission is judged on what
it changed, not on a rare draw that finds an old defect; a developer's run keeps exploring."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from ahp.state.channels import channel_kind
from client import AhpClient
from host.config import load_config
from host.service import AgentHost
from host.transport.server import RunningHost, start_host
from tests._serial_rewrite import install as _serialise_assertion_rewriting
from tests.wire import FrameValidator

_serialise_assertion_rewriting()  # CPython 3.11: two threads must not rewrite modules at once (tests/_serial_rewrite.py)
settings.register_profile("ci", derandomize=True, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

TOKEN = "test-token-0123456789"

NEVER = 3600.0
"""Seconds of a wait (a grace, a start timeout, a restart delay) that no test lives to see: a test
that sets it waits on an event, and only a hang would meet this clock (pytest-timeout ends it)."""

# Nothing in the test suite may reach the network: refuse any connection that is not loopback.
_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: Any) -> Any:
    if self.family in (socket.AF_INET, socket.AF_INET6):
        host = address[0]
        if host not in ("127.0.0.1", "::1", "localhost") and not str(host).startswith("127."):
            raise ConnectionRefusedError(f"tests are offline: refused a connection to {host}")
    return _real_connect(self, address)


socket.socket.connect = _loopback_only  # type: ignore[method-assign]  # the offline guard, for every test


class FrameChecker:
    """Collects schema violations seen by client frame hooks; the test fails at teardown. Each
    client's frames are checked against the schema of the version it negotiated (0.2.0's until
    its ``initialize`` is answered; ``tests/host/transport/dialects/_schemas.py`` for the newer)."""

    def __init__(self) -> None:
        self.validator = FrameValidator()
        self.failures: list[str] = []
        self.frames = 0

    def hook(self, frame: dict, answered_method: str | None) -> None:
        """Check a frame as 0.2.0's (a client that speaks nothing newer)."""
        self.frames += 1
        try:
            self.validator.check_server_frame(frame, answered_method=answered_method)
        except AssertionError as error:
            self.failures.append(str(error))

    def client_hook(self) -> Callable[[dict, str | None], None]:
        """A hook for one client: it learns the version from that client's ``initialize``."""
        version = ["0.2.0"]

        def hook(frame: dict, answered_method: str | None) -> None:
            result = frame.get("result")
            if answered_method == "initialize" and isinstance(result, dict) and isinstance(result.get("protocolVersion"), str):
                version[0] = result["protocolVersion"]
            if version[0] == "0.2.0":
                self.hook(frame, answered_method)
                return
            from tests.host.transport.dialects._schemas import FrameSchema  # jsonschema's validators, built once

            self.frames += 1
            self.failures.extend(FrameSchema.for_version(version[0]).errors(frame, answered_method, channel_kind))

        return hook


@pytest.fixture(autouse=True)
def _no_real_claude_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads the real ``~/.claude``: hosts (and the processes they start) see an empty
    Claude Code configuration folder unless the test gives one."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path_factory.getbasetemp() / "no-claude-config"))


@pytest.fixture(autouse=True)
def frame_checker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Every ``AhpClient`` a test opens checks each frame it receives against the schema
    (except in the client library's own tests, whose fake host sends deliberately odd frames)."""
    checker = FrameChecker()
    if "client" in request.node.path.relative_to(Path(__file__).parent).parts[:2]:
        yield checker
        return
    original = AhpClient.connect.__func__  # type: ignore[attr-defined]  # the classmethod's function, to wrap

    async def connect(cls: type[AhpClient], url: str, **kwargs: Any) -> AhpClient:
        kwargs.setdefault("frame_hook", checker.client_hook())
        return await original(cls, url, **kwargs)

    monkeypatch.setattr(AhpClient, "connect", classmethod(connect))
    yield checker
    assert not checker.failures, "the host sent frames that do not validate:\n" + "\n".join(checker.failures[:5])


def host_config(data_dir: Path, **sessions: Any):
    sessions.setdefault("offline_delay", 0)
    return load_config(
        None,
        overrides={"server": {"port": 0, "data_dir": str(data_dir), "token": TOKEN}, "sessions": sessions},
        environ={},
    )


@pytest.fixture
async def running_host(tmp_path: Path) -> AsyncIterator[RunningHost]:
    # The offline echo agent gives deterministic answers to sessions created without an agent.
    host = AgentHost(host_config(tmp_path / "data", default_directory=str(tmp_path), default_agent="offline"))
    running = await start_host(host, token=TOKEN)
    yield running
    await running.stop()


Connect = Callable[..., Awaitable[AhpClient]]


@pytest.fixture
async def connect(running_host: RunningHost, frame_checker: FrameChecker) -> AsyncIterator[Connect]:
    """``await connect(subscriptions=[...])`` → an initialized client of ``running_host``, in AHP 0.2.0 unless
    ``protocol_versions`` says otherwise (the tests on this fixture read 0.2.0's session shapes)."""
    clients: list[AhpClient] = []

    async def factory(*, subscriptions: tuple[str, ...] = ("ahp-root://",), initialize: bool = True,
                      protocol_versions: tuple[str, ...] = ("0.2.0",), **kwargs: Any) -> AhpClient:
        kwargs.setdefault("token", TOKEN)
        client = await AhpClient.connect(running_host.url.split("?")[0], **kwargs)
        clients.append(client)
        if initialize:
            await client.initialize(subscriptions=list(subscriptions), protocol_versions=protocol_versions)
        return client

    yield factory
    for client in clients:
        await client.close()


def _release_fifo(path: Path) -> None:
    """Let whoever is stuck opening or reading ``path`` go: a writer appears, then leaves (EOF)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:  # nobody is reading it (ENXIO), or it is gone
        pass


@pytest.fixture
def make_fifo() -> Iterator[Callable[[Path], Path]]:
    """``make_fifo(path)`` creates a named pipe nobody writes to. A reader that blocks on it is let
    go after 5 s (and at teardown), so code that wrongly opens it fails its test instead of hanging
    the suite."""
    made: list[Path] = []
    timers: list[threading.Timer] = []

    def make(path: Path) -> Path:
        os.mkfifo(path)
        made.append(path)
        for delay in (5.0, 10.0, 20.0):  # a reader that opens it again later is let go again
            timer = threading.Timer(delay, _release_fifo, (path,))
            timer.daemon = True
            timer.start()
            timers.append(timer)
        return path

    yield make
    for timer in timers:
        timer.cancel()
    for path in made:
        _release_fifo(path)
