"""``AhpClient``: an asyncio AHP client with a local state mirror.

Contract:

* One live connection at a time (``resume`` swaps it for a new one). Everything the host
  sends is handled by that connection's single reader, in arrival order: responses
  resolve their request (snapshots they carry are installed before the next frame is
  looked at), ``action`` envelopes feed the ``Mirror``, every notification is fanned out
  to the event queues, and then pending ``wait_for`` predicates are re-checked.
* ``dispatch`` is synchronous: it assigns the next ``clientSeq`` (one counter for all
  channels, from 1, kept across ``resume``), applies the action optimistically and queues
  ``dispatchAction``; messages leave in submission order.
* When the connection is lost, in-flight requests, waiters and event streams fail at
  once with the same ``ConnectionClosedError`` (or ``HostProtocolError``). Pending
  actions stay pending until ``resume`` (a replay may confirm them; the rest are
  resolved as lost and rolled back) or ``close`` (all lost). Nothing is re-sent behind
  the caller's back.
* ``initialize`` offers ``PROTOCOL_VERSIONS`` (1.0.0, then 0.9.0) unless told otherwise; the host
  picks the newest it serves (a host without 1.0.0 answers 0.9.0). The mirror then folds with the
  negotiated version's reducers: the model's own (``ahp.state``), where a session's turns live on its
  chat channels (``ahp-chat://...``). An answer in a version that was not offered is a
  ``HostProtocolError``; a host that serves none of them gets ``UnsupportedVersionError``, whose
  message says what it serves. Callers that read the 0.2.0 dialect's shapes (tests of the host's
  0.2.0 projection) offer ``LEGACY_VERSIONS`` by name.
* The conveniences (``send_message``, ``cancel_turn``, ``create_session``) build the actions and
  URIs of the negotiated version.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ahp.dialects.negotiation import accepts
from ahp.protocol import builders
from ahp.state import channel_kind, chat_uri, default_chat_uri
from ahp.state.clock import iso_timestamp, parse_timestamp
from client._connection import Connection, FrameHook, RequestHandler
from client.errors import (
    AhpClientError,
    AhpError,
    AhpTimeout,
    ConnectionClosedError,
    HostProtocolError,
    NotSubscribedError,
    UnsupportedVersionError,
)
from client.events import EventQueue, EventStream, Notification
from client.mirror import ActionOutcome, Mirror, Reducer
from client.versions import PROTOCOL_VERSIONS, is_model_version, mirror_model, unsupported_message

__all__ = ["AhpClient", "ResumeResult", "ROOT_CHANNEL", "Predicate"]

ROOT_CHANNEL = "ahp-root://"
"""The root channel URI; also the ``channel`` of connection-level commands."""

Predicate = Callable[[Mirror, "Notification | None"], bool]
"""``predicate(mirror, event)``; ``event`` is the notification just received, else None."""

_UNSUPPORTED_PROTOCOL_VERSION = -32005

_LOST_ON_DISCONNECT = "the connection was lost before the host confirmed this action"
_MAYBE_IN_SNAPSHOT = "the connection was lost; the host's fresh snapshot may or may not include this action"


@dataclass(frozen=True)
class ResumeResult:
    """How ``resume`` brought the mirror up to date."""

    kind: Literal["replay", "snapshot", "initialize"]
    """replay: missed envelopes applied; snapshot: states replaced; initialize: fallback handshake."""
    dropped: list[str] = field(default_factory=list)
    """Channels the host could not resume (``missing`` or no snapshot), now unsubscribed."""
    replayed: list[dict[str, Any]] = field(default_factory=list[Any])
    """The envelopes applied from a replay, in order (empty for the other kinds)."""
    lost: list[ActionOutcome] = field(default_factory=list)
    """Our dispatched actions the host never confirmed; they were rolled back."""


def _epoch_ms() -> int:
    return int(time.time() * 1000)


class AhpClient:
    """A connected AHP client. Create it with ``await AhpClient.connect(url)``."""

    def __init__(
        self,
        url: str,
        *,
        token: str | None,
        client_id: str,
        origin: str | None,
        frame_hook: FrameHook | None,
        clock: Callable[[], int],
        request_timeout: float,
        open_timeout: float = 10.0,
        reducer: Reducer | None = None,
    ) -> None:
        # Use ``connect``; the constructor does no I/O and leaves the client unconnected.
        self.url = url
        """The host's WebSocket URL; ``resume`` reconnects to it."""
        self._token = token
        self._client_id = client_id
        self._origin = origin
        self._frame_hook = frame_hook
        self._clock = clock
        self.request_timeout = request_timeout
        """Seconds a request may wait for its response before ``AhpTimeout``."""
        self._open_timeout = open_timeout
        self.mirror = Mirror(client_id, reduce=reducer)
        """The local replica of every subscribed channel's state."""
        self._conn: Connection | None = None
        self._failure: BaseException | None = ConnectionClosedError("the client is not connected")
        self._closed = False
        self._client_seq = 0
        self._protocol_version: str | None = None
        self._init_options: tuple[tuple[str, ...], str | None] | None = None
        self._subscriptions: dict[str, None] = {}  # ordered set: stateful and stateless
        self._queues: list[EventQueue] = []
        self._waiters: list[tuple[Predicate, asyncio.Future[Notification | None]]] = []
        self._handlers: dict[str, RequestHandler] = {}
        self._frame_event: Notification | None = None  # the notification of the frame being handled
        self.initialize_result: dict[str, Any] | None = None
        """The last ``InitializeResult`` (defaultDirectory, telemetry, ...)."""

    # -- lifecycle ---------------------------------------------------------------

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        token: str | None = None,
        client_id: str | None = None,
        origin: str | None = None,
        frame_hook: FrameHook | None = None,
        clock: Callable[[], int] | None = None,
        request_timeout: float = 30.0,
        open_timeout: float = 10.0,
        reducer: Reducer | None = None,
    ) -> AhpClient:
        """Open a WebSocket to ``url``; call ``initialize`` (or ``resume``) next.

        ``token`` travels as ``Authorization: Bearer``; ``origin`` is the HTTP Origin header;
        ``frame_hook(frame, answered_method)`` sees every frame the host sends;
        ``clock()`` gives epoch ms to the reducers; ``reducer`` overrides the negotiated
        version's reducer (tests only).
        """
        client = cls(
            url,
            token=token,
            client_id=client_id or str(uuid.uuid4()),
            origin=origin,
            frame_hook=frame_hook,
            clock=clock or _epoch_ms,
            request_timeout=request_timeout,
            open_timeout=open_timeout,
            reducer=reducer,
        )
        client._attach(await client._open())
        return client

    async def initialize(
        self,
        subscriptions: Iterable[str] = (),
        protocol_versions: Sequence[str] = PROTOCOL_VERSIONS,
        locale: str | None = None,
    ) -> dict[str, Any]:
        """Handshake offering ``protocol_versions`` (newest first; by default ``PROTOCOL_VERSIONS``, the
        model's versions); installs the returned snapshots and returns the ``InitializeResult``.

        Raises ``UnsupportedVersionError`` when the host serves none of the offered versions.
        """
        subscriptions = list(subscriptions)
        versions = tuple(protocol_versions)
        params: dict[str, Any] = {
            "channel": ROOT_CHANNEL,
            "protocolVersions": list(versions),
            "clientId": self._client_id,
        }
        if subscriptions:
            params["initialSubscriptions"] = subscriptions
        if locale is not None:
            params["locale"] = locale

        def install(result: Any) -> None:
            if not isinstance(result, dict) or not isinstance(result.get("protocolVersion"), str):
                raise HostProtocolError("the host's initialize result lacks protocolVersion")
            if not any(accepts(offered, result["protocolVersion"]) or offered == result["protocolVersion"]
                       for offered in versions):
                raise HostProtocolError(f"the host answered in AHP {result['protocolVersion']}, "
                                        f"which this client did not offer ({', '.join(versions)})")
            try:
                self.mirror.use(mirror_model(result["protocolVersion"]))
            except ValueError as exc:
                raise HostProtocolError(str(exc)) from None
            self._protocol_version = result["protocolVersion"]
            self.initialize_result = result
            self.mirror.note_server_seq(int(result.get("serverSeq", 0)))
            for channel in subscriptions:
                self._subscriptions[channel] = None
            for snapshot in _snapshots(result.get("snapshots")):
                self._install(snapshot)

        try:
            result: dict[str, Any] = await self._live().request("initialize", params, timeout=self.request_timeout,
                                                                on_result=install)  # install refuses anything else
        except AhpError as error:
            if error.code != _UNSUPPORTED_PROTOCOL_VERSION:
                raise
            raise UnsupportedVersionError(error.code, unsupported_message(self.url, versions, error.data),
                                          error.data) from None
        self._init_options = (versions, locale)
        return result

    def move_to(self, url: str, token: str | None) -> None:
        """The host now listens at ``url`` (it was started again, or another process of its
        cluster serves this client now): the next ``resume`` goes there. Its ``reconnect`` says
        the version this client negotiated (``_meta.protocolVersion``), which a host process that
        never saw the client cannot know otherwise."""
        self.url = url
        self._token = token

    async def resume(self) -> ResumeResult:
        """Reconnect to the same URL and catch up with ``reconnect`` (or re-``initialize``).

        The new connection's first message is ``reconnect{clientId, lastSeenServerSeq,
        subscriptions}``. A replay is applied envelope by envelope (and reported as
        events with ``replayed=True``); a snapshot result replaces the mirrored states.
        Channels in ``missing`` or without a snapshot are dropped and reported. On a
        JSON-RPC error the client falls back to ``initialize`` with its subscriptions.
        Actions still pending afterwards were never confirmed and are rolled back.
        """
        if self._closed:
            raise ConnectionClosedError("the client was closed")
        old = self._conn
        new = await self._open()
        self._attach(new)
        if old is not None:
            await old.close()  # not current any more: its end is not reported as a loss
        subscriptions = list(self._subscriptions)
        params: dict[str, Any] = {
            "channel": ROOT_CHANNEL,
            "clientId": self._client_id,
            "lastSeenServerSeq": self.server_seq,
            "subscriptions": subscriptions,
        }
        if self._protocol_version is not None:
            params["_meta"] = {"protocolVersion": self._protocol_version}
        outcome: dict[str, Any] = {}

        def apply(result: Any) -> None:
            outcome.update(self._apply_reconnect(result, subscriptions))

        try:
            await new.request("reconnect", params, timeout=self.request_timeout, on_result=apply)
        except AhpError:
            return await self._reinitialize(subscriptions)
        reason = _LOST_ON_DISCONNECT if outcome["kind"] == "replay" else _MAYBE_IN_SNAPSHOT
        lost = self.mirror.lose_pending(reason)
        self._check_waiters(None)
        return ResumeResult(outcome["kind"], outcome["dropped"], outcome["replayed"], lost)

    async def close(self) -> None:
        """Close the connection; event streams end and further calls fail."""
        self._closed = True
        conn, self._conn = self._conn, None
        self._end(ConnectionClosedError("the client was closed"), clean=True)
        if conn is not None:
            await conn.close()

    async def __aenter__(self) -> AhpClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # -- properties --------------------------------------------------------------

    @property
    def client_id(self) -> str:
        """Stable id sent in ``initialize``/``reconnect`` and found in our echoes' ``origin``."""
        return self._client_id

    @property
    def server_seq(self) -> int:
        """The last ``serverSeq`` seen (the value ``resume`` reports as lastSeenServerSeq)."""
        return self.mirror.last_server_seq

    @property
    def protocol_version(self) -> str | None:
        """The version the host chose in ``initialize``; None before the handshake."""
        return self._protocol_version

    @property
    def speaks_model(self) -> bool:
        """True when the negotiated version's states are the model's (0.9.0 and later: chats)."""
        return self._protocol_version is not None and is_model_version(self._protocol_version)

    @property
    def subscriptions(self) -> list[str]:
        """Channels this client is subscribed to (stateful and stateless), in order."""
        return list(self._subscriptions)

    @property
    def is_connected(self) -> bool:
        """True while the current connection is open."""
        return self._conn is not None and self._conn.is_open

    def state(self, channel: str) -> dict[str, Any] | None:
        """The mirrored (optimistic) state of a channel; None if not mirrored."""
        return self.mirror.state(channel)

    # -- JSON-RPC ----------------------------------------------------------------

    async def request(self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float | None = None) -> Any:
        """Send a request; returns its result, raises ``AhpError`` on an error response."""
        return await self._live().request(
            method, dict(params or {}), timeout=timeout if timeout is not None else self.request_timeout
        )

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send a notification; returns once it is written to the socket."""
        await self._live().send_notification(method, dict(params or {}))

    def on_request(self, method: str, handler: RequestHandler | None) -> None:
        """Answer host-to-client requests for ``method`` with ``await handler(params)``.

        Raise ``AhpError`` in the handler to answer with an error; pass None to remove.
        Methods without a handler are answered -32601. Applies to later connections too.
        """
        if handler is None:
            self._handlers.pop(method, None)
        else:
            self._handlers[method] = handler

    # -- subscriptions and actions ----------------------------------------------

    async def subscribe(self, channel: str) -> dict[str, Any] | None:
        """Subscribe; installs the snapshot and returns the state (None when stateless)."""

        def install(result: Any) -> None:
            self._subscriptions[channel] = None
            if isinstance(result, dict) and isinstance(result.get("snapshot"), dict):
                self._install(result["snapshot"])

        await self._live().request("subscribe", {"channel": channel}, timeout=self.request_timeout, on_result=install)
        return self.mirror.state(channel)

    async def unsubscribe(self, channel: str) -> None:
        """Stop receiving a channel and forget its mirrored state."""
        self._subscriptions.pop(channel, None)
        self.mirror.drop(channel, "unsubscribed before the host confirmed this action")
        await self.notify("unsubscribe", {"channel": channel})

    def dispatch(self, channel: str, action: Mapping[str, Any]) -> int:
        """Apply ``action`` optimistically, send ``dispatchAction``; returns its clientSeq."""
        conn = self._live()
        if channel not in self.mirror:
            raise NotSubscribedError(f"subscribe to {channel} before dispatching to it")
        self._client_seq += 1
        seq = self._client_seq
        action = dict(action)
        self.mirror.apply_local(channel, seq, action, self._clock())
        conn.send_notification("dispatchAction", {"channel": channel, "clientSeq": seq, "action": action}, track=False)
        self._check_waiters(None)
        return seq

    async def outcome(self, client_seq: int, timeout: float = 10.0) -> ActionOutcome:
        """Wait until the host accepted or rejected the action (or it was lost)."""
        await self.wait_for(lambda mirror, _event: mirror.outcome(client_seq) is not None, timeout)
        result = self.mirror.outcome(client_seq)
        assert result is not None  # the predicate just held
        return result

    # -- events ------------------------------------------------------------------

    def subscribe_events(self) -> EventQueue:
        """A queue receiving every later notification; ``None`` marks the end of the stream."""
        queue: EventQueue = asyncio.Queue()
        if not self.is_connected:
            queue.put_nowait(None)
        else:
            self._queues.append(queue)
        return queue

    def unsubscribe_events(self, queue: EventQueue) -> None:
        """Stop feeding a queue from ``subscribe_events``."""
        if queue in self._queues:
            self._queues.remove(queue)

    def events(self) -> EventStream:
        """An async iterator over later notifications (ends on ``close``, raises on loss)."""
        return EventStream(self.subscribe_events(), lambda: None if self._closed else self._failure, self.unsubscribe_events)

    async def wait_for(self, predicate: Predicate, timeout: float = 10.0) -> Notification | None:
        """Resolve once ``predicate(mirror, event)`` holds; returns the event that made it true.

        Checked now (with ``event=None``), after every frame from the host (with the
        notification it carried, else None) and after every local dispatch.
        Raises ``AhpTimeout``, or the connection's error if it is lost meanwhile.
        """
        if predicate(self.mirror, None):
            return None
        self._live()
        future: asyncio.Future[Notification | None] = asyncio.get_running_loop().create_future()
        waiter = (predicate, future)
        self._waiters.append(waiter)
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise AhpTimeout(f"the awaited condition did not hold within {timeout:g} s") from None
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    # -- conveniences --------------------------------------------------------------

    async def ping(self) -> Any:
        """Round-trip a ``ping``; the host answers null."""
        return await self.request("ping", {"channel": ROOT_CHANNEL})

    async def create_session(
        self,
        channel: str | None = None,
        *,
        agent: str | Mapping[str, Any] | None = None,
        provider: str | None = None,
        model: str | Mapping[str, Any] | None = None,
        working_directory: str | None = None,
        fork: Mapping[str, Any] | None = None,
        subscribe: bool = True,
        meta: Mapping[str, Any] | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> str:
        """Create a session and subscribe to it; returns its channel.

        Unless ``channel`` is given, the URI is fresh: ``ahp-session:/<uuid4>`` in 0.2.0,
        ``<provider>:/<uuid4>`` in the model's versions (without ``provider``, the URI the host gave
        the session on its default agent, found in ``listSessions``). In the model's versions the
        session's default chat (``default_chat_uri``) is subscribed too.

        ``agent`` is an agent URI or an ``AgentSelection``; ``model`` a model id or a
        ``ModelSelection``; ``fork`` is ``{session, turnId}``; ``meta`` is sent as the params'
        ``_meta`` (e.g. ``{"oneShot": true}`` for a script's session); ``config`` the session config
values chosen up front (``{"permissionMode": "plan"}``). Returns the channel.
        """
        ident = str(uuid.uuid4())
        minted = channel is None
        if channel is None:
            channel = f"{provider}:/{ident}" if self.speaks_model and provider is not None else f"ahp-session:/{ident}"
        params: dict[str, Any] = {"channel": channel}
        if provider is not None:
            params["provider"] = provider
        if model is not None:
            params["model"] = {"id": model} if isinstance(model, str) else dict(model)
        if agent is not None:
            params["agent"] = {"uri": agent} if isinstance(agent, str) else dict(agent)
        if working_directory is not None:
            params["workingDirectory"] = working_directory
        if fork is not None:
            params["fork"] = dict(fork)
        if meta is not None:
            params["_meta"] = dict(meta)
        if config:
            params["config"] = dict(config)
        await self.request("createSession", params)
        if minted and self.speaks_model and provider is None:
            channel = await self._session_named(ident)
        if subscribe:
            await self.subscribe(channel)
            if self.speaks_model:
                await self.subscribe(default_chat_uri(channel))
        return channel

    async def create_chat(
        self,
        session: str,
        chat: str | None = None,
        *,
        fork: tuple[str, str] | None = None,
        subscribe: bool = True,
    ) -> str:
        """A new chat in ``session`` (0.9.0 and later): a side chat, or with ``fork=(chat, turnId)``
        one that starts with that chat's turns up to and including ``turnId``. Unless given, the URI
        is a new one of ``session``'s, named as the model and VS Code name a chat
        (``ahp-chat://<side|fork>-<hex>/<session, base64url>``, ``ahp.state.chat_uri``).
        Subscribes to it; returns its URI."""
        self._need_model("chats")
        chat = chat or chat_uri(session, f"{'side' if fork is None else 'fork'}-{uuid.uuid4().hex}")
        params: dict[str, Any] = {"channel": session, "chat": chat}
        if fork is not None:
            params["source"] = {"kind": "fork", "chat": fork[0], "turnId": fork[1]}
        await self.request("createChat", params)
        if subscribe:
            await self.subscribe(chat)
        return chat

    async def dispose_chat(self, chat: str) -> None:
        """Remove a chat from its session on the host and forget it locally."""
        self._need_model("chats")
        await self.request("disposeChat", {"channel": chat})
        self._subscriptions.pop(chat, None)
        self.mirror.drop(chat, "the chat was disposed")

    def chats(self, session: str) -> list[dict[str, Any]]:
        """The mirrored session's chat catalogue (``ChatSummary`` items, in the host's order);
        empty when the session is not mirrored or the version has no chats."""
        state = self.mirror.state(session) if self.speaks_model else None
        chats = (state or {}).get("chats")
        return [c for c in chats if isinstance(c, dict)] if isinstance(chats, list) else []

    async def dispose_session(self, channel: str) -> None:
        """Dispose a session on the host and forget it locally."""
        await self.request("disposeSession", {"channel": channel})
        self._subscriptions.pop(channel, None)
        self.mirror.drop(channel, "the session was disposed")

    async def list_sessions(self, filter: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """The host's session summaries (``listSessions`` items)."""
        params: dict[str, Any] = {"channel": ROOT_CHANNEL}
        if filter is not None:
            params["filter"] = dict(filter)
        result = await self.request("listSessions", params)
        return list(result.get("items", [])) if isinstance(result, dict) else []

    async def fetch_turns(
        self, channel: str, before: str | None = None, limit: int | None = None, *, cursor: str | None = None
    ) -> dict[str, Any]:
        """Older turns of a chat (a session's default chat when ``channel`` is a session):
        ``{turns (oldest first), hasMore}``, in the negotiated version's shapes.

        In the model's versions (0.9.0, 1.0.0) ``fetchTurns`` takes ``{channel, cursor}`` and
        answers nothing: before its answer the host sends ``chat/turnsLoaded``, which puts the page
        ahead of the turns the chat's state holds. So the chat must be subscribed; ``cursor``
        defaults to the mirrored state's ``turnsNextCursor`` (without one the host loads its next
        older page, if any); the page returned is the turns the mirror gained, and ``hasMore``
        says whether the state still names a ``turnsNextCursor``. ``before``/``limit`` are 0.2.0's
        and are refused there. In 0.2.0 the host answers the page before turn ``before`` itself."""
        if not self.speaks_model:
            if cursor is not None:
                raise AhpClientError(f"fetchTurns has no cursor in AHP {self._protocol_version}: page with before= and limit=")
            params: dict[str, Any] = {"channel": channel}
            if before is not None:
                params["before"] = before
            if limit is not None:
                params["limit"] = limit
            turns: dict[str, Any] = await self.request("fetchTurns", params)
            return turns
        if before is not None or limit is not None:
            raise AhpClientError(f"fetchTurns takes a cursor in AHP {self._protocol_version}, not before= or limit= (AHP 0.2.0's): "
                                 "leave them out to load the page before the chat's turnsNextCursor")
        chat = self.chat_of(channel)
        if chat not in self._subscriptions or self.mirror.state(chat) is None:
            raise NotSubscribedError(f"subscribe to {chat} before fetching its older turns: the host sends them to the "
                                     "chat's subscribers (chat/turnsLoaded)")
        held = self.mirror.state(chat) or {}
        cursor = cursor if cursor is not None else held.get("turnsNextCursor")
        first = next((t.get("id") for t in held.get("turns") or () if isinstance(t, dict)), None)
        await self.request("fetchTurns", {"channel": chat, **({"cursor": cursor} if cursor is not None else {})})
        now = self.mirror.state(chat) or {}
        turns_now = [t for t in now.get("turns") or () if isinstance(t, dict)]
        ids = [t.get("id") for t in turns_now]
        loaded = turns_now[: ids.index(first)] if first in ids else ([] if first is not None else turns_now)
        return {"turns": loaded, "hasMore": now.get("turnsNextCursor") is not None}

    def send_message(self, channel: str, text: str, attachments: Sequence[Mapping[str, Any]] | None = None) -> str:
        """Start a turn with a user message; returns the fresh turn id.

        In the model's versions ``channel`` is a chat (a session's URI means its default chat).
        """
        turn_id = str(uuid.uuid4())
        message: dict[str, Any] = {"text": text}
        if attachments:
            message["attachments"] = [dict(a) for a in attachments]
        if not self.speaks_model:
            self.dispatch(channel, {"type": "session/turnStarted", "turnId": turn_id, "userMessage": message})
            return turn_id
        started_at = iso_timestamp(self._clock()) or "1970-01-01T00:00:00.000Z"
        message["origin"] = {"kind": "user"}  # a client may only send a user's message
        self.dispatch(self.chat_of(channel), builders.chat_turn_started(turn_id=turn_id, started_at=started_at, message=message))
        return turn_id

    def cancel_turn(self, channel: str, turn_id: str) -> int:
        """Cancel a running turn; returns the clientSeq of the dispatched action."""
        if not self.speaks_model:
            return self.dispatch(channel, {"type": "session/turnCancelled", "turnId": turn_id})
        chat = self.chat_of(channel)
        active = (self.mirror.state(chat) or {}).get("activeTurn")
        started = active.get("startedAt") if isinstance(active, dict) and active.get("id") == turn_id else None
        started_ms = parse_timestamp(started)
        duration = max(0, self._clock() - started_ms) if started_ms is not None else 0
        return self.dispatch(chat, builders.chat_turn_cancelled(turn_id=turn_id, duration=duration))

    def chat_of(self, channel: str) -> str:
        """The chat a message to ``channel`` goes to: a chat itself, or a session's default chat."""
        return default_chat_uri(channel) if channel_kind(channel) == "session" else channel

    # -- internals -----------------------------------------------------------------

    def _need_model(self, what: str) -> None:
        if not self.speaks_model:
            raise AhpClientError(f"{what} need AHP {PROTOCOL_VERSIONS[-1]} or later; this connection speaks "
                                 f"{self._protocol_version or 'nothing yet'} (initialize with PROTOCOL_VERSIONS)")

    async def _session_named(self, ident: str) -> str:
        for item in await self.list_sessions():
            resource = item.get("resource") if isinstance(item, dict) else None
            if isinstance(resource, str) and resource.endswith(f":/{ident}"):
                return resource
        raise HostProtocolError(f"the host created session {ident} but does not list it")

    async def _open(self) -> Connection:
        opened: list[Connection] = []

        def on_notification(method: str, params: dict[str, Any]) -> None:
            # A connection ``resume`` replaced may still deliver a few frames; the replay
            # on the new one covers them, so they are not applied or reported twice.
            if opened and opened[0] is self._conn:
                self._on_notification(method, params)

        conn = await Connection.open(
            self.url,
            token=self._token,
            origin=self._origin,
            open_timeout=self._open_timeout,
            frame_hook=self._frame_hook,
            on_notification=on_notification,
            after_frame=lambda: self._check_waiters(self._frame_event),
            on_closed=self._on_connection_closed,
            request_handlers=self._handlers,
        )
        opened.append(conn)  # before the reader first runs: no await since it was created
        return conn

    def _attach(self, conn: Connection) -> None:
        self._conn = conn
        self._failure = None
        self._frame_event = None

    def _live(self) -> Connection:
        conn = self._conn
        if conn is not None and conn.is_open:
            return conn
        raise self._failure or ConnectionClosedError("the client is not connected")

    def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "action":
            self._apply_envelope(params)
        self._emit(Notification(method, params))

    def _apply_envelope(self, envelope: dict[str, Any]) -> None:
        try:
            self.mirror.apply_envelope(envelope, self._clock())
        except ValueError as exc:
            raise HostProtocolError(f"the host sent a malformed action envelope: {exc}") from None

    def _emit(self, event: Notification) -> None:
        self._frame_event = event
        for queue in list(self._queues):
            queue.put_nowait(event)

    def _check_waiters(self, event: Notification | None) -> None:
        self._frame_event = None
        for predicate, future in list(self._waiters):
            if future.done():
                continue
            try:
                if predicate(self.mirror, event):
                    future.set_result(event)
            except Exception as exc:  # a broken predicate fails its own wait, nothing else
                future.set_exception(exc)

    def _on_connection_closed(self, conn: Connection, failure: BaseException) -> None:
        if conn is not self._conn:
            return  # an old connection replaced by ``resume``
        self._end(failure, clean=False)

    def _end(self, failure: BaseException, *, clean: bool) -> None:
        if self._failure is not None and not clean:
            return
        self._failure = failure
        if clean:
            # After a loss, pending actions wait for ``resume``: a replay may still
            # confirm or skip them. A deliberate close settles them now.
            self.mirror.lose_pending("the client was closed before the host confirmed this action")
        for _predicate, future in self._waiters:
            if not future.done():
                future.set_exception(failure)
        queues, self._queues = self._queues, []
        for queue in queues:
            queue.put_nowait(None)

    def _install(self, snapshot: Any) -> str:
        if not isinstance(snapshot, dict) or not isinstance(snapshot.get("resource"), str) or "state" not in snapshot:
            raise HostProtocolError("the host sent a malformed snapshot")
        channel: str = snapshot["resource"]
        try:
            self.mirror.install_snapshot(channel, snapshot["state"], int(snapshot.get("fromSeq", 0)))
        except ValueError as exc:
            raise HostProtocolError(f"the host sent a snapshot for {channel}: {exc}") from None
        self._subscriptions[channel] = None
        return channel

    def _apply_reconnect(self, result: Any, subscriptions: list[str]) -> dict[str, Any]:
        if not isinstance(result, dict) or result.get("type") not in ("replay", "snapshot"):
            raise HostProtocolError("the host's reconnect result is neither a replay nor a snapshot")
        dropped: list[str] = []
        if result["type"] == "replay":
            for channel in result.get("missing") or []:
                if channel in self._subscriptions or channel in self.mirror:
                    self._forget(channel, "the host could not resume this channel")
                    dropped.append(channel)
            actions = result.get("actions") or []
            if not isinstance(actions, list):
                raise HostProtocolError("the host's reconnect replay has no list of actions")
            for envelope in actions:
                self._apply_envelope(envelope)
                self._emit(Notification("action", envelope, replayed=True))
                self._check_waiters(self._frame_event)
            return {"kind": "replay", "dropped": dropped, "replayed": list(actions)}
        stateful_before = set(self.mirror.channels)
        installed = {self._install(s) for s in _snapshots(result.get("snapshots"))}
        for channel in subscriptions:
            if channel in stateful_before and channel not in installed:
                self._forget(channel, "the host sent no snapshot for this channel")
                dropped.append(channel)
        return {"kind": "snapshot", "dropped": dropped, "replayed": []}

    async def _reinitialize(self, subscriptions: list[str]) -> ResumeResult:
        versions, locale = self._init_options or (PROTOCOL_VERSIONS, None)
        stateful_before = set(self.mirror.channels)
        lost = self.mirror.clear(_LOST_ON_DISCONNECT)
        self._subscriptions.clear()
        await self.initialize(subscriptions, versions, locale)
        dropped = [c for c in subscriptions if c in stateful_before and c not in self.mirror]
        for channel in dropped:
            self._subscriptions.pop(channel, None)
        return ResumeResult("initialize", dropped, [], lost)

    def _forget(self, channel: str, reason: str) -> None:
        self._subscriptions.pop(channel, None)
        self.mirror.drop(channel, reason)


def _snapshots(value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise HostProtocolError("the host sent snapshots that are not a list")
    return value
