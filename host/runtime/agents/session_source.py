"""Session cassettes as a provider source: each session replays, records, or both, one file per session.

``SessionCassetteSource`` serves the turns of a ``ProviderAgent`` from session cassettes
(``providers.session_cassette``):

* **replay** (``live=None``): a ``kind = "replay"`` agent whose model's ``cassette`` is a session
  cassette. Each session replays the file from its turn 1 (any number of sessions side by side,
  each with its own position). Turn ``N`` of the session (its chats' turns counted in the order they
  start: a sub-agent's turn is one) is served by turn ``N`` of the file and the title request by its title; strict by default (a request that differs ends the turn with
  an error naming the turn, the call and a diff). A session going past the recorded turns gets an
  error saying the cassette is used up, never a silent restart at turn 1.
* **record** (``replay=False``): ``serve --record``: each session's calls go through the real SDK
  and are written to ``cassette_for(session, model)`` after every call (a session continued
  later, in another host run, appends its new turns to the same file).
* **both** (``new_episodes``): turns the file has are replayed, later ones recorded and appended.

The turn's working directory (``workdir``) is what ``${cwd}`` stands for, in what is written and
in what is compared. Errors reach the turn loop as ``providers.ProviderError`` subclasses
(``ReplayDivergedError``, ``RecordingEnded``, ``ReplayedCancelError``), so a client sees them as
the turn's error. What each session sent is kept (``sent(session)``) for tests to assert on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import providers
from host.runtime.agents.replay import RecordingEnded
from host.runtime.agents.sources import API_BY_KIND, make_provider
from providers import Provider, ProviderError

__all__ = ["SessionCassetteSource", "LiveProvider", "ReplayDivergedError", "ReplayedCancelError", "portable_base_url"]

logger = logging.getLogger(__name__)

SESSIONS_KEPT = 512
"""Sessions whose cassette a source keeps in memory."""


class ReplayDivergedError(ProviderError):
    """What the host sent differs from the recording (strict replay)."""

    error_type = "replay_diverged"


class ReplayedCancelError(ProviderError):
    """The recorded turn was cancelled here; the replayed one is cancelled at the same point."""

    error_type = "replayed_cancel"


@dataclass(frozen=True)
class LiveProvider:
    """The real provider a recording source calls."""

    kind: str
    api_key: str | None
    base_url: str | None = None


@dataclass
class _Session:
    path: Path
    cassette: Any
    """A ``providers.session_cassette.SessionCassette``."""
    recorded_turns: int
    """Turns the file had when this session opened it (what a ``new_episodes`` source replays)."""
    turn: int = 0
    sent: list[dict[str, Any]] = field(default_factory=list)


def portable_base_url(url: str | None) -> str | None:
    """The base URL as a cassette keeps it: a loopback server's port dropped (it changes every run)."""
    if not url:
        return None
    parts = urlsplit(url)
    if parts.hostname in ("127.0.0.1", "localhost", "::1") and parts.port is not None:
        return urlunsplit(parts._replace(netloc=parts.hostname))
    return url


class SessionCassetteSource:
    """See the module docstring."""

    def __init__(
        self, *, cassette_for: Callable[[str, str], Path], kind: str, live: LiveProvider | None = None, replay: bool = True,
        strict: bool = True, redact: tuple[str, ...] | None = None, home: str | None = None,
    ) -> None:
        self.api = API_BY_KIND.get(kind, kind)
        self.kind = kind
        self._cassette_for = cassette_for
        self._live = live
        self._replay = replay
        self.strict = strict
        self._redact = redact or ()
        """Patterns filtered from what is recorded, besides ``DEFAULT_REDACT``."""
        self._home = home if home is not None else str(Path.home())
        self._sessions: OrderedDict[tuple[str, str], _Session] = OrderedDict()
        """The sessions in use, the least recently used first (at most ``SESSIONS_KEPT``; a recording
        session dropped from here reads its file again, and counts on from its turns)."""

    def sent(self, session: str) -> list[dict[str, Any]]:
        """What ``session`` sent, normalised as the cassette stores it: ``{"turn", "call", "path", "body"}``."""
        wanted = session.split(":/", 1)[-1]  # a client's ahp-session:/<id> is the host's <agent>:/<id>
        return [entry for (name, _), state in self._sessions.items() if name.split(":/", 1)[-1] == wanted for entry in state.sent]

    def _open(self, session: str, model: str) -> _Session:
        from providers.session_cassette import DEFAULT_REDACT, CassetteFormatError, SessionCassette, read_cassette

        key = (session, model)
        state = self._sessions.get(key)
        if state is not None:
            self._sessions.move_to_end(key)
        else:
            path = self._cassette_for(session, model)
            if path.is_file():
                try:
                    cassette = read_cassette(path)
                except CassetteFormatError as error:
                    raise RecordingEnded(str(error), provider="replay") from None
            elif self._live is None:
                raise RecordingEnded(f"The cassette {path.name} does not exist; record it first.", provider="replay")
            else:
                cassette = SessionCassette(kind=self._live.kind, base_url=portable_base_url(self._live.base_url),
                                           redact=(*DEFAULT_REDACT, *self._redact))
            # A recording host counts on from the turns already in the file (a session continued later).
            state = _Session(path, cassette, len(cassette.turns), turn=0 if self._replay else len(cassette.turns))
            self._sessions[key] = state
            while len(self._sessions) > SESSIONS_KEPT:
                self._sessions.popitem(last=False)
        return state

    @contextlib.asynccontextmanager
    async def for_turn(self, session: str, turn_id: str, model: str, *, workdir: str | None = None) -> AsyncIterator[Provider]:
        import httpx2

        from providers.session_cassette import Normaliser, write_cassette
        from providers.session_replay import SessionRecordingTransport, SessionReplayTransport

        state = self._open(session, model)
        cassette = state.cassette
        normaliser = Normaliser.for_folder(workdir, self._home, cassette.redact)
        title = turn_id.endswith("-title")
        if not title:
            state.turn += 1
        number = None if title else state.turn
        recorded = cassette.title is not None if number is None else number <= state.recorded_turns
        transport: Any
        replaying = self._replay and (recorded or self._live is None)
        if replaying:
            transport = SessionReplayTransport(cassette, turn=number, source=state.path.name, normaliser=normaliser,
                                               strict=self.strict, sent=state.sent, warn=logger.warning)
            client = httpx2.AsyncClient(transport=transport)
            # The SDKs insist on a key; replayed requests never leave the process.
            inner = make_provider(cassette.kind, api_key="replay-no-key", base_url=cassette.base_url, http_client=client)
            provider: Provider = _Translated(inner)
        else:
            assert self._live is not None
            if number is not None:
                while len(cassette.turns) < number:
                    cassette.turns.append([])
                write_cassette(state.path, cassette)

            def on_call(call: Any) -> None:
                calls = sum(1 for entry in state.sent if entry["turn"] == number)
                state.sent.append({"turn": number, "call": calls + 1, "path": call.path, "body": call.body})
                if number is None:
                    cassette.title = call
                else:
                    cassette.turns[number - 1].append(call)
                write_cassette(state.path, cassette)

            transport = SessionRecordingTransport(httpx2.AsyncHTTPTransport(), normaliser, on_call)
            client = httpx2.AsyncClient(transport=transport)
            provider = make_provider(self._live.kind, api_key=self._live.api_key, base_url=self._live.base_url, http_client=client)
        try:
            yield provider
        except asyncio.CancelledError:
            if number is not None and not replaying:
                cassette.cancelled.add(number)  # the client cancelled the turn: a replay ends it there too
                write_cassette(state.path, cassette)
            raise
        finally:
            await provider.aclose()
            await client.aclose()

    async def aclose(self) -> None:
        self._sessions.clear()


class _Translated:
    """A real SDK provider over a replay transport, whose cassette errors become turn errors."""

    def __init__(self, inner: Provider) -> None:
        self._inner = inner
        self.name = inner.name
        self.api = inner.api

    def stream(self, request: providers.ModelRequest) -> providers.ModelStream:
        inner = providers.ModelStream.open(self._inner, request)
        return inner.relayed(self._events(inner))

    async def _events(self, inner: providers.ModelStream) -> AsyncIterator[providers.StreamEvent | str]:
        from providers.session_replay import CassetteUsedUp, ReplayDiverged, ReplayedCancel

        try:
            async with contextlib.aclosing(inner):
                async for event in inner.bare():  # bare deltas passed on bare (``ModelStream.relayed``)
                    yield event
        except ReplayDiverged as error:  # BaseExceptions (see providers.cassette): keep them from killing the turn silently
            raise ReplayDivergedError(str(error), provider="replay") from None
        except ReplayedCancel as error:
            raise ReplayedCancelError(str(error), provider="replay") from None
        except CassetteUsedUp as error:
            raise RecordingEnded(str(error), provider="replay") from None

    async def aclose(self) -> None:
        await self._inner.aclose()
