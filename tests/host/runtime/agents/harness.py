"""Helpers for end-to-end agent tests: a real host on 127.0.0.1 port 0 with given agents, a
real ``AhpClient`` whose every frame is schema-checked, and readers for what the client saw."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from client import LEGACY_VERSIONS, AhpClient
from host.config import HostConfig, load_config
from host.runtime.agents import Agent
from host.service import AgentHost
from host.transport.server import RunningHost, start_host
from tests.conftest import TOKEN, FrameChecker

CASSETTES = Path(__file__).resolve().parents[4] / "cassettes"


def config_for(tmp_path: Path, *, toml: str | None = None, environ: dict[str, str] | None = None, **overrides: Any) -> HostConfig:
    path = None
    if toml is not None:
        tmp_path.mkdir(parents=True, exist_ok=True)
        path = tmp_path / "host.toml"
        path.write_text(toml, encoding="utf-8")
    sections: dict[str, dict[str, Any]] = {
        "server": {"port": 0, "data_dir": str(tmp_path / "data"), "token": TOKEN},
        "sessions": {"default_directory": str(tmp_path), "offline_delay": 0},
        # The test's own folder is trusted, so its hooks and .mcp.json run as the test means them to;
        # workspace trust itself is tested in tests/host/runtime/test_trust.py (pass trust={"folders": []}).
        "trust": {"folders": [str(tmp_path)]},
    }
    for key, value in overrides.items():
        sections.setdefault(key, {}).update(value)
    return load_config(path, overrides=sections, environ=environ or {})


@asynccontextmanager
async def serving(
    config: HostConfig, checker: FrameChecker, agents: Sequence[Agent] | None = None, *,
    versions: Sequence[str] = LEGACY_VERSIONS,
) -> AsyncIterator[tuple[RunningHost, AhpClient]]:
    """A running host whose session services have started (a test may read them directly), and one
    initialized client subscribed to the root channel, offering ``versions`` (``PROTOCOL_VERSIONS``:
    what a real client negotiates, 1.0.0). Its frames are checked against the negotiated version's
    schema.

    The default is still the 0.2.0 dialect: the files on this harness read the 0.2.0 session
    shapes (``session/*`` actions, turns on the session channel, ``summary``), and move onto the
    model one by one (``PROTOCOL_VERSIONS`` and ``run_chat_turn``)."""
    host = AgentHost(config, agents=agents)
    running = await start_host(host, token=TOKEN)
    # The session services start once the host listens (a client's requests but ``initialize``
    # wait for them by themselves; a test that reads them directly would not).
    await running.host.started()
    client = await AhpClient.connect(running.url.split("?")[0], token=TOKEN, frame_hook=checker.client_hook())
    try:
        await client.initialize(subscriptions=["ahp-root://"], protocol_versions=tuple(versions))
        yield running, client
    finally:
        await client.close()
        await running.stop()


async def ready_session(client: AhpClient, **kwargs: Any) -> str:
    session = await client.create_session(**kwargs)
    await client.wait_for(lambda m, e: (client.state(session) or {}).get("lifecycle") in ("ready", "creationFailed"))
    return session


class Recorder:
    """Every action the client received for one session, in order."""

    def __init__(self, client: AhpClient, session: str) -> None:
        self.client = client
        self.session = session
        self.queue = client.subscribe_events()
        self.actions: list[dict[str, Any]] = []

    def drain(self) -> list[dict[str, Any]]:
        while not self.queue.empty():
            note = self.queue.get_nowait()
            if note is None:  # the client closed: everything before it has been read
                break
            if note.method == "action" and note.params["channel"] == self.session:
                self.actions.append(note.params["action"])
        return self.actions

    def types(self) -> list[str]:
        return [a["type"] for a in self.drain()]

    def compact(self) -> list[Any]:
        """Types with runs of the same streaming action joined: ``("session/delta", text)``."""
        out: list[Any] = []
        for action in self.drain():
            kind = action["type"]
            if kind in ("session/delta", "session/reasoning", "session/toolCallDelta"):
                key = action.get("partId") or action.get("toolCallId")
                if out and isinstance(out[-1], tuple) and out[-1][0] == kind and out[-1][1] == key:
                    out[-1] = (kind, key, out[-1][2] + action["content"])
                else:
                    out.append((kind, key, action["content"]))
            else:
                out.append(kind)
        return out


async def run_turn(client: AhpClient, session: str, text: str, attachments: list[dict] | None = None, timeout: float = 20) -> dict[str, Any]:
    """Send a message and wait until that turn is finished in the client's mirror."""
    turn_id = client.send_message(session, text, attachments)
    await client.wait_for(lambda m, e: any(t["id"] == turn_id for t in (client.state(session) or {}).get("turns") or []), timeout=timeout)
    return next(t for t in client.state(session)["turns"] if t["id"] == turn_id)


async def run_chat_turn(client: AhpClient, channel: str, text: str, timeout: float = 20) -> dict[str, Any]:
    """In the model's versions: send a message to ``channel`` (a chat, or a session's default
    chat) and wait until that turn is finished in the chat's mirror; the turn."""
    chat = client.chat_of(channel)
    turn_id = client.send_message(chat, text)
    await client.wait_for(lambda m, e: any(t["id"] == turn_id for t in (client.state(chat) or {}).get("turns") or []), timeout=timeout)
    return next(t for t in client.state(chat)["turns"] if t["id"] == turn_id)


async def idle(client: AhpClient, session: str) -> None:
    """Wait until no turn is running and the activity is cleared (of a 0.2.0 session, or of a
    chat in the model's versions: pass the chat)."""
    await client.wait_for(
        lambda m, e: (client.state(session) or {}).get("activeTurn") is None
        and "activity" not in (client.state(session) or {}).get("summary", {})
        and "activity" not in (client.state(session) or {})
    )
