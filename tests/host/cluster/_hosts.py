"""What the cluster's process tests share: host processes started with ``agent-host serve --cluster``
on a real nats-server (``cluster_host``, and ``processes`` for the two or three of a test, stopped at the
end and checked for what they must never print), a client of one of them subscribed to the root
(``root_client``), the waits until a process lists a session (``until_listed``) and until clients
saw a session's turns end (``until_turns_ended``), and readings of what a client mirrors
(``unclocked``, ``titles``, ``statuses``)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

from ahp.state import default_chat_uri
from cli.serve_process import ServeProcess
from client import AhpClient
from host.cluster.nats_server import EmbeddedNats
from tests.conftest import TOKEN

ROOT = "ahp-root://"
REPO = Path(__file__).resolve().parents[3]


def unclocked(state: dict[str, Any] | None) -> dict[str, Any]:
    """A mirrored state without ``modifiedAt`` (each mirror's own clock reading)."""
    state = dict(state or {})
    state.pop("modifiedAt", None)
    if isinstance(state.get("summary"), dict):
        state["summary"] = {key: value for key, value in state["summary"].items() if key != "modifiedAt"}
    return state


def offline_config(tmp_path: Path) -> Path:
    """A host config whose sessions run the offline agent, at once, in ``tmp_path``."""
    config = tmp_path / "host.toml"
    config.write_text(f'[sessions]\ndefault_agent = "offline"\noffline_delay = 0\ndefault_directory = "{tmp_path}"\n')
    return config


def titles(session: dict[str, Any] | None) -> list[str]:
    """The titles of a session's catalogue entries (the model's ``chats``)."""
    return [str(chat.get("title")) for chat in (session or {}).get("chats") or []]


def statuses(session: dict[str, Any] | None) -> list[int]:
    """The statuses of a session's catalogue entries."""
    return [int(chat.get("status") or 0) for chat in (session or {}).get("chats") or []]


async def until_listed(client: AhpClient, session: str) -> None:
    """Wait (10 s at most) until ``client``'s process lists ``session``; the caller's next
    assertion or subscribe fails if it never does."""
    for _ in range(200):
        if session in [s["resource"] for s in await client.list_sessions()]:
            return
        await asyncio.sleep(0.05)


async def until_turns_ended(clients: Iterable[AhpClient], session: str, count: int) -> None:
    """Wait (30 s at most for each client) until every client's mirror holds ``count`` turns in the
    session's default chat and the session's catalogue entry for that chat is idle again (an action
    after the turn's end)."""
    chat = default_chat_uri(session)
    for client in clients:
        await client.wait_for(lambda m, e, c=client: len((c.state(chat) or {}).get("turns") or []) == count
                              and statuses(c.state(session)) == [1], timeout=30)


async def root_client(process: ServeProcess) -> AhpClient:
    """A client of ``process`` (the newest AHP it speaks), subscribed to the root channel."""
    client = await AhpClient.connect(process.url)
    await client.initialize(subscriptions=[ROOT])
    return client


def cluster_host(data_dir: Path, config: Path, nats_url: str) -> ServeProcess:
    """``agent-host serve --cluster URL`` as its own process."""
    return ServeProcess(["--data-dir", str(data_dir), "--config", str(config), "--cluster", nats_url], token=TOKEN)


NAMES = ("one", "two", "three")
"""The data directories of a test's processes, under its temporary directory, in starting order."""


@contextlib.asynccontextmanager
async def processes(tmp_path: Path, nats_server: EmbeddedNats, count: int = 2, never_printed: tuple[str, ...] = ("Traceback",), *,
                    config: Path | None = None, started: int | None = None) -> AsyncIterator[tuple[ServeProcess, ...]]:
    """``count`` processes of the cluster on ``nats_server``, their sessions on the offline agent (or
    as ``config`` says), started one after the other (``one`` first: it writes the root channel);
    only the first ``started`` of them when that is given (the test starts the others later:
    processes joining a running cluster). Once stopped, none printed any of ``never_printed`` (in
    any of its runs, if the test started one again)."""
    config = config or offline_config(tmp_path)
    hosts = tuple(cluster_host(tmp_path / name, config, nats_server.url) for name in NAMES[:count])
    try:
        for host in hosts[:started]:
            await host.start()
        yield hosts
    finally:
        printed = "".join([host.stop() for host in hosts])
    assert not [words for words in never_printed if words in printed], printed
