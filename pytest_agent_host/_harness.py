"""A real agent host on 127.0.0.1 port 0 in a background thread, and a blocking client to drive it.

``HostHarness.start(config, source)`` runs an ``AgentHost`` and an ``AhpClient`` on an event loop
of their own, so a plain (synchronous) test drives them; ``source`` (optional) replaces the
provider source of the agent named ``recorded`` (how recording modes write one fixed cassette).
``HostHarness.session(cwd)`` opens a session on that agent; ``ReplaySession.send(text)`` sends a
message and waits for its turn to end, and raises ``ReplayFailed`` (an ``AssertionError``) when the
turn ended because the replay diverged from its cassette or used it up, with the host's message
(the turn, the model call and a diff). What the model was sent is in ``ReplaySession.requests``.
The client speaks the model's versions (AHP 1.0.0): a session's turns are those of its default chat.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ahp.state import default_chat_uri
from client import AhpClient
from host.config import HostConfig
from host.service import AgentHost
from host.transport.server import RunningHost, start_host
from pytest_agent_host import AGENT

__all__ = ["HostHarness", "ReplaySession", "Turn", "ReplayFailed"]

_REPLAY_ERRORS = frozenset({"replay_diverged", "recording_ended"})
T = TypeVar("T")


class ReplayFailed(AssertionError):
    """A turn ended because its requests differ from the cassette or the cassette is used up."""


@dataclass(frozen=True)
class Turn:
    """A finished turn as the client sees it (the model's ``Turn``: AHP 1.0.0)."""

    state: dict[str, Any]

    @property
    def status(self) -> str:
        """``complete``, ``error`` or ``cancelled``."""
        return str(self.state.get("state"))

    @property
    def text(self) -> str:
        """The answer's text (its markdown parts, joined)."""
        return "".join(str(p.get("content", "")) for p in self.state.get("responseParts") or [] if p.get("kind") == "markdown")

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return [p["toolCall"] for p in self.state.get("responseParts") or [] if p.get("kind") == "toolCall"]

    @property
    def error(self) -> dict[str, Any] | None:
        """The error the turn ended with (its final ``error`` part), or None."""
        parts = self.state.get("responseParts") or []
        last = parts[-1] if parts else None
        error = last.get("error") if isinstance(last, dict) and last.get("kind") == "error" else None
        return error if isinstance(error, dict) else None


class HostHarness:
    """See the module docstring."""

    def __init__(self, *, recording: bool = False) -> None:
        self.recording = recording
        """Whether the agent records (then a test has one session: a cassette holds one)."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="agent-host test host", daemon=True)
        self._thread.start()
        self.host: AgentHost | None = None
        self._running: RunningHost | None = None
        self.client: AhpClient | None = None
        self.sessions: list[ReplaySession] = []

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 120) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def start(self, config: HostConfig, source: Any = None) -> None:
        self.run(self._start(config, source))

    async def _start(self, config: HostConfig, source: Any) -> None:
        token = secrets.token_urlsafe(16)
        self.host = AgentHost(config)
        if source is not None:
            self.host.agents[AGENT].source = source  # type: ignore[attr-defined]
        self._running = await start_host(self.host, token=token)
        self.client = await AhpClient.connect(self._running.url.split("?")[0], token=token)
        await self.client.initialize(subscriptions=["ahp-root://"])

    @property
    def source(self) -> Any:
        assert self.host is not None
        return self.host.agents[AGENT].source  # type: ignore[attr-defined]

    def session(self, cwd: str | Path, model: str | None = None) -> ReplaySession:
        """A new session working in ``cwd`` on the agent (its default model, or ``model``)."""
        if self.recording and self.sessions:
            raise RuntimeError("a cassette records one session: this test already opened one (use one test per session)")
        session = ReplaySession(self, self.run(self._create(str(cwd), model)))
        self.sessions.append(session)
        return session

    async def _create(self, cwd: str, model: str | None) -> str:
        assert self.client is not None
        client = self.client
        session = await client.create_session(provider=AGENT, model=model, working_directory=Path(cwd).resolve().as_uri())
        await client.wait_for(lambda m, e: (client.state(session) or {}).get("lifecycle") in ("ready", "failed"), timeout=60)
        state = client.state(session) or {}
        if state.get("lifecycle") != "ready":
            raise RuntimeError(f"the test host could not create the session: {state.get('creationError') or state}")
        return session

    def stop(self) -> None:
        try:
            self.run(self._stop(), timeout=60)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(30)
            self._loop.close()

    async def _stop(self) -> None:
        if self.client is not None:
            await self.client.close()
        if self._running is not None:
            await self._running.stop()


class ReplaySession:
    """One session on the test host; see the module docstring."""

    def __init__(self, harness: HostHarness, uri: str) -> None:
        self._harness = harness
        self.uri = uri

    def send(self, text: str, *, timeout: float = 60, check: bool = True) -> Turn:
        """Send ``text`` and wait for its turn to end. With ``check``, a turn that ended because the
        replay diverged or the cassette was used up raises ``ReplayFailed`` with the host's message."""
        __tracebackhide__ = True
        turn = Turn(self._harness.run(self._send(text, timeout), timeout + 10))
        error = turn.error or {}
        if check and error.get("errorType") in _REPLAY_ERRORS:
            raise ReplayFailed(str(error.get("message")))
        return turn

    async def _send(self, text: str, timeout: float) -> dict[str, Any]:
        client = self._harness.client
        assert client is not None
        chat = default_chat_uri(self.uri)
        turn_id = client.send_message(chat, text)

        def ended(_m: Any, _e: Any) -> bool:
            state = client.state(chat) or {}
            return any(t["id"] == turn_id for t in state.get("turns") or [])

        await client.wait_for(ended, timeout=timeout)
        return next(t for t in (client.state(chat) or {})["turns"] if t["id"] == turn_id)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every model request this session made, as the cassette stores it (``${cwd}`` for the
        folder): ``{"turn": N or None for the title, "call": k, "path": ..., "body": {...}}``."""
        return list(self._harness.source.sent(self.uri))

    def messages(self, turn: int, call: int = -1) -> list[dict[str, Any]]:
        """The messages of one model request: turn ``turn``'s call ``call`` (its last by default)."""
        calls = [r for r in self.requests if r["turn"] == turn]
        if not calls:
            raise AssertionError(f"turn {turn} made no model request (turns with requests: {sorted({r['turn'] for r in self.requests if r['turn']})})")
        body = calls[call]["body"] or {}
        return list(body.get("messages") or body.get("input") or [])

    def assert_sent(self, text: str, *, turn: int | None = None) -> None:
        """Assert that some model request (of ``turn``, if given) contained ``text``."""
        found = [r for r in self.requests if (turn is None or r["turn"] == turn) and text in json.dumps(r["body"], ensure_ascii=False)]
        if not found:
            where = f"turn {turn}'s" if turn is not None else "any"
            raise AssertionError(f"{text!r} was not in {where} model request ({len(self.requests)} requests made)")
