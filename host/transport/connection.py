"""One client connection: the AHP handshake, subscriptions and the client→host methods.

A ``ClientConnection`` is transport-agnostic: it receives whole text messages (``receive``) and
puts outgoing ones on a bounded queue that the transport drains (``outbox``), or, when the
transport offers it (``direct``), hands them straight to the transport's buffer. The JSON-RPC work
is done by ``host.transport.rpc``; this module adds AHP's rules:

* before ``initialize`` / ``reconnect`` only ``ping`` is answered (-32600 otherwise);
* ``initialize`` negotiates the protocol version (``ahp.dialects.negotiation``: -32005 listing
  every served version, then the connection closes) and binds the connection to that version's
  dialect (``host.transport.dialects``); from then on the dialect decides which methods exist, checks
  params against the version's shapes (-32602 with the offending field, never a library's text),
  shapes results, snapshots and the replay, and translates what the store fans out. The
  connection itself is the same for every version;
* a channel the client names is what its dialect says it is in the store (``internal_channels``:
  a 0.2.0 ``ahp-session:/<id>`` is the internal session and its default chat, subscribed and
  unsubscribed together);
* ``dispatchAction``: unknown channel → dropped silently; refused (by the dialect, which lifts
  the action into the store's model, or by ``host.transport.validation``) → a rejection envelope to this
  connection only; accepted → applied and echoed to every subscriber with its ``origin``.
  ``clientSeq`` is only echoed in ``origin``: a client that sends the same one many times (VS
  Code starts with seven ``clientSeq: 0``) gets each action applied and echoed;
* what a connection may do is its token's level (``host.transport.access``): a method its level
  does not allow is answered ``PermissionDenied`` naming both levels, an action it may not
  dispatch gets a rejection envelope saying the same, and the connection stays usable. A named
  token revoked while the connection is open ends it (close code 1008) at its next message, or
  when the transport's watch of the token file notices (``revoked``). An accepted action's
  ``origin`` carries the named token's ``tokenName``, and an answered confirmation records who
  answered in the tool call's ``_meta`` (``access.recorded_answer``);
* a client that cannot keep up is cut off rather than slowing the host or growing memory without
  bound: each frame it is sent reports its backlog to the host-wide ``host.transport.outbound.OutboundBudget``,
  which cuts it off past ``[server] max_queued_bytes_per_client`` or, when all clients together
  pass ``[server] max_queued_bytes``, the clients that hold the most first. It gets close code 1013
  and a reason, and can ``reconnect`` and be replayed;
* a client whose version cannot say a change to a channel it mirrors (an older dialect,
  ``host.state.fanout.Resync``) is closed with ``RESYNC_CLOSE_CODE`` (4000) and a reason; its
  ``reconnect`` is answered with fresh snapshots, so no mirror stays stale.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, cast

from ahp.dialects.negotiation import (
    SERVED_VERSIONS,
    MalformedVersion,
    Negotiated,
    accepts,
    negotiate,
    unsupported_error_data,
    unsupported_message,
)
from ahp.state.channels import session_of_default_chat
from host.errors import ErrorCode, ProtocolViolation, RpcError
from host.runtime.customizations.completions import TRIGGER_CHARACTERS
from host.service import AgentHost
from host.state.store import ROOT
from host.transport.access import action_refusal, method_refusal, recorded_answer
from host.transport.dialects import DEFAULT_VERSION, Dialect, dialect_for, dialect_for_version
from host.transport.outbound import OutboundBudget
from host.transport.rpc import RpcEndpoint
from host.transport.tokens import FULL, HOST_GRANT, Grant
from host.transport.validation import check_client_action

__all__ = ["RESYNC_CLOSE_CODE", "ClientConnection"]

logger = logging.getLogger(__name__)

REMEMBERED_CLIENTS = 10_000
"""Clients whose negotiated version the host remembers for their ``reconnect``."""


def _after_start(host: AgentHost, handlers: dict[str, Callable[[Any], Awaitable[Any]]]) -> dict[str, Callable[[Any], Awaitable[Any]]]:
    """``handlers``, each first waiting until the host's sessions have started (``AgentHost.started``:
    ``agent-host serve`` starts them once it listens, ``host.session_services``); only the handshake
    is answered sooner."""

    def waiting(handler: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
        async def handle(params: Any) -> Any:
            if not host.sessions_started:
                await host.started()
            return await handler(params)
        return handle

    return {method: waiting(handler) for method, handler in handlers.items()}


_HANDSHAKE: Dialect = dialect_for(Negotiated("0.2.0", "0.2.0"))
"""Checks ``initialize`` and ``reconnect`` params before a version is known (their shapes are
the same in every served version; 0.2.0's dialect, whose ``InitializeParams`` is generated on its
own for the first ``initialize``, so that the newer dialects stay out of the start)."""


_REVOKED = 1008
RESYNC_CLOSE_CODE = 4000
"""The close code of a connection whose mirror of a channel the host could not keep in step (see
``ClientConnection.resync``): reconnect, and the answer is fresh snapshots."""


class ClientConnection:
    def __init__(self, host: AgentHost, *, on_cut_off: Callable[[int, str], None] | None = None,
                 budget: OutboundBudget | None = None, grant: Grant = HOST_GRANT,
                 still_valid: Callable[[Grant], bool] | None = None) -> None:
        self.host = host
        self.grant = grant
        """The token this connection was opened with, and its level."""
        self._still_valid = still_valid
        """Whether ``grant`` still holds (the token file's), asked before each message."""
        self.outbox: asyncio.Queue[str | None] = asyncio.Queue()
        self.outbox_chars = 0
        """Characters of the frames in ``outbox`` (the transport that drains it subtracts them)."""
        self._forwards: set[asyncio.Future[None]] = set()
        """Dispatches forwarded to the process that runs their session, not answered yet."""
        self.direct: Callable[[str], int] | None = None
        """Set by a transport that takes frames synchronously: ``direct(text)`` returns the bytes
        waiting for the socket, or -1 once the connection is gone; ``outbox`` is unused then."""
        self.direct_backlog: Callable[[], int] | None = None
        """With ``direct``: the bytes waiting for the socket now."""
        server = host.config.server
        self._budget = budget or OutboundBudget(total=server.max_queued_bytes, per_client=server.max_queued_bytes_per_client)
        self.client_id: str | None = None
        self.protocol_version: str | None = None
        self.dialect: Dialect | None = None
        """This connection's protocol version, from ``initialize`` (or ``reconnect``) on."""
        self.subscriptions: set[str] = set()
        """The channels this client subscribed to, as it names them."""
        self._internal: dict[str, list[str]] = {}
        """Each of ``subscriptions`` → the store channels it stands for."""
        self._renamed: dict[str, Any] = {}
        """Subscriptions to a store channel under another name → their translator (``Renamed``)."""
        self._on_cut_off = on_cut_off
        self.cut_off_reason: tuple[int, str] | None = None
        """The close code and reason once the budget cut this client off."""
        self.close_requested = False
        self.rpc = RpcEndpoint(
            self.send,
            _after_start(host, {
                "reconnect": self._reconnect,
                "subscribe": self._subscribe,
                "createSession": self._create_session,
                "disposeSession": self._dispose_session,
                "listSessions": self._list_sessions,
                "fetchTurns": self._fetch_turns,
                "createChat": self._create_chat,
                "disposeChat": self._dispose_chat,
                "resourceRead": self._resource_read,
                "authenticate": self._authenticate,
                "resourceList": self._resource_list,
                "resourceResolve": self._resource_resolve,
                "resourceWrite": self._resource_write,
                "resourceMkdir": self._resource_mkdir,
                "resourceDelete": self._resource_delete,
                "resourceCopy": self._resource_copy,
                "resourceMove": self._resource_move,
                "resourceRequest": self._resource_request,
                "createResourceWatch": self._create_resource_watch,
                "completions": self._completions,
                "createTerminal": self._create_terminal,
                "disposeTerminal": self._dispose_terminal,
                "invokeChangesetOperation": self._invoke_changeset_operation,
                "resolveSessionConfig": self._resolve_session_config,
                "sessionConfigCompletions": self._session_config_completions,
                "listAutomationTriggerDefinitions": self._list_automation_trigger_definitions,
                "fetchAutomationRuns": self._fetch_automation_runs,
                "runAutomation": self._run_automation,
            }) | {"initialize": self._initialize, "ping": self._ping},
            _after_start(host, {
                "unsubscribe": self._unsubscribe,
                "dispatchAction": self._dispatch_action,
                "setClientManagedSettingsPermissions": self._set_client_managed_settings_permissions,
            }),
            gate=self._gate,
        )

    @property
    def translator(self) -> object | None:
        """What the store groups this subscriber by (``host.state.fanout.Translator``): its dialect."""
        return self.dialect.translator if self.dialect is not None else None

    # -- transport side ------------------------------------------------------------------------

    def send(self, text: str) -> None:
        """Queue a frame for the client (the store calls this during fan-out)."""
        if self.cut_off_reason is not None:
            return
        if self.direct is not None:
            backlog = self.direct(text)
            # Only a backlog larger than the last report needs one (``host.transport.outbound``): at a
            # client's pace, one in a few frames.
            if backlog > self._budget.reported.get(self, 0):
                self._budget.note(self, backlog)
            return
        self.outbox.put_nowait(text)
        self.outbox_chars += len(text)
        self._budget.note(self, self.outbox_chars)

    def backlog(self) -> int:
        """Bytes waiting for this client now (``host.transport.outbound.Outbound``)."""
        if self.direct_backlog is not None:
            return self.direct_backlog()
        return self.outbox_chars

    def cut_off(self, code: int, reason: str) -> None:
        """The budget cut this client off: drop what waits; the transport closes with ``code``
        and ``reason`` (``on_cut_off``)."""
        self.cut_off_reason = (code, reason)
        while not self.outbox.empty():
            self.outbox.get_nowait()
        self.outbox_chars = 0
        if self._on_cut_off is not None:
            self._on_cut_off(code, reason)

    async def receive(self, text: str | bytes) -> None:
        await self.rpc.receive(text)

    def closed(self) -> None:
        """The socket is gone: drop subscriptions and release what this client held."""
        self._budget.forget(self)
        self.rpc.close()
        if self.client_id is not None and self._acts:
            self.host.client_resources.detach(self.client_id, self.rpc.call)
        self.host.store.unsubscribe_all(self)
        self.subscriptions.clear()
        self._internal.clear()
        services = self.host.services_built
        if services is not None:  # (else no watch exists)
            services.watches.release_idle(closed_owner=self)
        if self.client_id is not None and self._acts:
            self.host.client_disconnected(self.client_id)

    # -- gate and params -----------------------------------------------------------------------

    def resync(self, reason: str, server_seq: int) -> None:
        """The host changed a channel this client mirrors, at ``server_seq``, in a way its protocol
        version has no action for (``host.state.fanout.Resync``): end the connection, so that the
        client reconnects; a ``reconnect`` that has not seen ``server_seq`` is answered with
        fresh snapshots (``host.resync_from``), never a replay that would leave the mirror stale."""
        if self.cut_off_reason is not None:
            return
        if self.client_id is not None:
            pending = self.host.resync_from
            pending[self.client_id] = max(server_seq, pending.pop(self.client_id, 0))
            while len(pending) > REMEMBERED_CLIENTS:
                pending.pop(next(iter(pending)))
        logger.info("closing a %s connection for a fresh snapshot: %s", self.protocol_version, reason)
        self.cut_off(RESYNC_CLOSE_CODE, reason.encode()[:120].decode(errors="ignore"))

    def revoked(self) -> None:
        """The token of this connection was revoked: end the connection."""
        logger.info("closing a connection of revoked %s", self.grant.describe())
        self.cut_off(_REVOKED, f"token {self.grant.name!r} was revoked")

    def _gate(self, method: str, is_request: bool) -> RpcError | None:
        if self._still_valid is not None and not self._still_valid(self.grant):
            self.revoked()
            return RpcError(ErrorCode.PERMISSION_DENIED, f"Token {self.grant.name!r} was revoked; connect with another token.")
        if self.client_id is None or self.dialect is None:
            if method not in ("initialize", "reconnect", "ping"):
                return ProtocolViolation.invalid_request(f"Send initialize (or reconnect) before {method}.")
            return None
        refusal = self.dialect.gate(method, is_request)
        if refusal is None and method != "dispatchAction":  # (refused with a rejection envelope instead)
            refusal = method_refusal(self.grant, method)
        return refusal

    def _params(self, method: str, params: Any) -> dict[str, Any]:
        return (self.dialect or _HANDSHAKE).params(method, params)

    # -- handshake -----------------------------------------------------------------------------

    async def _initialize(self, params: Any) -> dict[str, Any]:
        params = self._params("initialize", params)
        if self.client_id is not None:
            raise ProtocolViolation.invalid_request("This connection is already initialized.")
        offered = params["protocolVersions"]
        try:
            negotiated = negotiate(offered)
        except MalformedVersion as error:
            raise ProtocolViolation.invalid_params(f"Invalid initialize params: {error}.") from None
        if negotiated is None:
            self.close_requested = True
            raise RpcError(ErrorCode.UNSUPPORTED_PROTOCOL_VERSION, unsupported_message(offered), unsupported_error_data())
        client_id, dialect = params["clientId"], dialect_for(negotiated)
        subscriptions = params.get("initialSubscriptions") or []
        if not self.host.sessions_started and any(dialect.internal_channels(self.host, channel) != [ROOT]
                                                  for channel in subscriptions):
            await self.host.started()  # a session's snapshot: as it is once the sessions have started
        self._bind(client_id, dialect)
        self._remember_version(client_id, negotiated.version)
        store = self.host.store
        wanted: list[tuple[str, list[str]]] = []
        for channel in subscriptions:
            # A channel that does not exist (or this version cannot see) is left out.
            internal = dialect.internal_channels(self.host, channel)
            if internal:
                wanted.append((channel, internal))
        # As ``subscribe``: a cluster's process may hold others' chats without their streamed text.
        await store.hold([name for _, internal in wanted for name in internal])
        snapshots = await self._snapshots(wanted)
        result = dialect.initialize_result({
            "protocolVersion": negotiated.version,
            "serverSeq": store.seq,
            "snapshots": snapshots,
            "defaultDirectory": self.host.default_directory.as_uri(),
            "completionTriggerCharacters": list(TRIGGER_CHARACTERS),
        })
        self._present(client_id)
        return result

    @property
    def _acts(self) -> bool:
        """Whether this client takes part as a client of its sessions (serves its resources, holds
        its roles): a token that may change nothing does not, since a clientId is only what a
        client calls itself and a full client's could be borrowed."""
        return self.grant.level == FULL

    def _present(self, client_id: str) -> None:
        if self._acts:
            self.host.client_resources.attach(client_id, self.rpc.call)
            self.host.client_connected(client_id)

    def _bind(self, client_id: str, dialect: Dialect) -> None:
        self.client_id = client_id
        self.dialect = dialect
        self.protocol_version = dialect.version

    def _remember_version(self, client_id: str, version: str) -> None:
        versions = self.host.client_versions
        versions.pop(client_id, None)
        versions[client_id] = version
        while len(versions) > REMEMBERED_CLIENTS:
            versions.pop(next(iter(versions)))

    async def _reconnect(self, params: Any) -> dict[str, Any]:
        params = self._params("reconnect", params)
        if self.client_id is not None and self.client_id != params["clientId"]:
            raise ProtocolViolation.invalid_request("This connection is already bound to another clientId.")
        if self.dialect is None:
            known = self.host.client_versions.get(params["clientId"]) or _stated_version(params)
            self._bind(params["clientId"], dialect_for_version(known or DEFAULT_VERSION))
        dialect = self.dialect
        assert dialect is not None and self.client_id is not None
        store = self.host.store
        wanted = [uri for uri in params["subscriptions"] if isinstance(uri, str)]
        resumable: dict[str, list[str]] = {}
        for uri in wanted:
            internal = dialect.internal_channels(self.host, uri)
            if internal:
                resumable[uri] = internal
        missing = [uri for uri in wanted if uri not in resumable]
        since, channels = int(params["lastSeenServerSeq"]), [c for internal in resumable.values() for c in internal]
        await store.hold(channels)  # a cluster's process may hold others' chats without their streamed text
        # A networked log reads from the stream (store.answers_later): awaited, then subscribed in one step.
        replayed = await store.replay_settled(since, channels) if store.answers_later else store.replay(since, channels)
        self._present(self.client_id)
        shown = dialect.replayed(self.host, replayed) if replayed is not None else None
        if since < self.host.resync_from.get(self.client_id, 0):
            shown = None  # what it missed includes a change its version cannot say (``resync``)
        self.host.resync_from.pop(self.client_id, None)
        if shown is None:
            snapshots = await self._snapshots(list(resumable.items()))
            return {"type": "snapshot", "snapshots": snapshots}
        for uri, internal in resumable.items():
            self._register(uri, internal)
        return {"type": "replay", "actions": shown, "missing": missing}

    async def _ping(self, params: Any) -> None:
        return None

    # -- subscriptions -------------------------------------------------------------------------

    async def _snapshots(self, wanted: list[tuple[str, list[str]]]) -> list[dict[str, Any]]:
        """Subscribe to each ``(channel, internal)`` of ``wanted``; their snapshots in this
        connection's shapes. Sessions restored at start are resumed first (their trust question
        is in the snapshot), then, over a networked log, the store waits until none of this
        process's actions on the channels waits for its number (``Store.settle``): the subscribing
        follows in the same step, so that none reaches the client twice (snapshot and frame)."""
        for _, internal in wanted:
            self._resume(internal)
        await self.host.store.settle([uri for _, internal in wanted for uri in internal])
        return [self._subscribe_now(channel, internal, resume=False) for channel, internal in wanted]

    def _subscribe_now(self, channel: str, internal: list[str], resume: bool = True) -> dict[str, Any]:
        """Subscribe to the store channels ``channel`` stands for, in one synchronous step, and
        return its snapshot in this connection's shapes."""
        assert self.dialect is not None
        snapshots = self._register(channel, internal, resume)
        return self.dialect.snapshot(self.host, channel, snapshots)

    def _resume(self, internal: list[str]) -> None:
        """A session restored at start is resumed by a client's subscribing (``AgentHost.resumed``)."""
        for uri in internal:
            self.host.resumed(uri, self.client_id or "")

    def _register(self, channel: str, internal: list[str], resume: bool = True) -> list[dict[str, Any]]:
        """Subscribe to the store channels ``channel`` stands for (resumed first unless ``resume``
        is false: the caller did); their store snapshots."""
        assert self.dialect is not None
        self.subscriptions.add(channel)
        self._internal[channel] = internal
        if resume:  # a session restored at start is resumed: its trust question is in the snapshot
            self._resume(internal)
        services = self.host.services_built
        snapshots = []
        for uri in internal:
            translator = self.dialect.translator_for(self.host, channel, uri) if len(internal) == 1 else None
            if translator is not None:
                self._renamed[channel] = translator
            snapshots.append(self.host.store.subscribe(uri, self, translator))
            if services is not None:
                services.watches.subscribed(uri)
        return snapshots

    async def _subscribe(self, params: Any) -> dict[str, Any]:
        params = self._params("subscribe", params)
        channel = params["channel"]
        assert self.dialect is not None
        internal = self.dialect.internal_channels(self.host, channel)
        if internal is None:
            name = self.dialect.internal_uri(self.host, channel)
            if isinstance(name, str) and name not in self.host.store and (
                    self.host.changesets.materialize(name) or self.host.materialize_annotations(name)):
                internal = self.dialect.internal_channels(self.host, channel)
        if not internal:
            if isinstance(channel, str) and (channel.startswith("ahp-session:") or self.host.store.kind(channel) == "session"
                                             or self.host.session_uri(channel) is not None):
                raise RpcError(ErrorCode.SESSION_NOT_FOUND, f"No session {channel}.")
            raise RpcError(ErrorCode.NOT_FOUND, f"Nothing to subscribe to at {channel}.")
        await self.host.store.hold(internal)  # a cluster's process may hold others' chats without their streamed text
        [snapshot] = await self._snapshots([(channel, internal)])
        return {"snapshot": snapshot}

    def channel_removed(self, uri: str) -> None:
        """The store removed ``uri`` (a disposed session or chat): the subscriptions standing for
        it end here, so that a client that creates and disposes sessions for weeks does not
        accumulate them (it need not unsubscribe from what is gone)."""
        for name, internal in list(self._internal.items()):
            if uri in internal:
                del self._internal[name]
                self._renamed.pop(name, None)
                self.subscriptions.discard(name)

    async def _unsubscribe(self, params: Any) -> None:
        channel = params.get("channel") if isinstance(params, dict) else None
        if isinstance(channel, str):
            renamed = self._renamed.pop(channel, None)
            for uri in self._internal.pop(channel, [channel]):
                if renamed is not None:
                    self.host.store.unsubscribe(uri, self, renamed)
                elif not any(uri in others for name, others in self._internal.items() if name not in self._renamed):
                    self.host.store.unsubscribe(uri, self)
            self.subscriptions.discard(channel)
            self.host.watches.release_idle()  # the last subscriber releases a watch (§11)

    # -- actions -------------------------------------------------------------------------------

    async def _dispatch_action(self, params: Any) -> None:
        if not isinstance(params, dict):
            return
        channel = params.get("channel")
        client_seq = params.get("clientSeq")
        store = self.host.store
        assert self.dialect is not None
        internal = self.dialect.internal_uri(self.host, channel) if isinstance(channel, str) else None
        if (not isinstance(channel, str) or not isinstance(internal, str) or internal not in store
                or not self.dialect.sees_kind(store.kind(internal))):
            return  # PROTOCOL.md §3: an unknown channel is dropped without an echo
        if not isinstance(client_seq, int) or isinstance(client_seq, bool):
            logger.info("dropped dispatchAction without an integer clientSeq from %s", self.client_id)
            return
        origin: dict[str, Any] = {"clientId": self.client_id, "clientSeq": client_seq}
        if self.grant.name is not None:
            origin["tokenName"] = self.grant.name
        action = params.get("action")
        client_id = self.client_id or ""
        forbidden = action_refusal(self.grant, action.get("type") if isinstance(action, dict) else None)
        if forbidden is not None:
            # No rejection observer hears of it (internal=[]): a refused denial by a tool's owner
            # would end the call, and a clientId is only what a client calls itself.
            store.reject(channel, action if isinstance(action, dict) else {}, origin, forbidden, self, internal=[])
            return
        envelopes, reason = self.dialect.lift(self.host, channel, action, client_id)
        if reason is None and envelopes:
            target, first = envelopes[0]
            reason = _refusal(self.host, target, first, client_id)
        if reason is not None:
            # The rejection echoes the action as this client sent it, in its own version.
            store.reject(channel, action if isinstance(action, dict) else {}, origin, reason, self,
                         internal=self._internal_form(channel, action))
            return
        if not envelopes:
            # Nothing to change in the store (a no-op in the client's version): the client still
            # gets its echo, and nobody else needs it.
            store.echo(channel, action, origin, self)
            return
        for index, (target, lifted) in enumerate(envelopes):
            if index:
                later = _refusal(self.host, target, lifted, client_id)
                if later is not None:
                    logger.info("part of %s from %s refused: %s", (action or {}).get("type"), self.client_id, later)
                    return
            if store.kind(target) == "chat":
                lifted = recorded_answer(lifted, store.state(target) or {}, self.grant, client_id)
            owner = store.owner_elsewhere(target) if store.answers_later else None
            if owner is not None:  # another process runs the session: it dispatches, as if here
                forwarded = asyncio.ensure_future(self._forward(owner, target, lifted, origin, channel, action, told=not index))
                self._forwards.add(forwarded)
                forwarded.add_done_callback(self._forwards.discard)
                continue
            refused = self._told_refused(channel, action, origin) if store.answers_later and not index else None
            store.dispatch(target, lifted, origin, refused)

    async def _forward(self, owner: str, target: str, lifted: dict[str, Any], origin: dict[str, Any], channel: str,
                       action: Any, told: bool) -> None:
        """Forward a dispatch to the process that runs its session; its echo comes back through the
        log; a refusal there is told to this client as one here would be."""
        reason = await self.host.store.forward(owner, target, lifted, origin)
        if reason is not None and told:
            self._told_refused(channel, action, origin)(reason)

    def _told_refused(self, channel: str, action: Any, origin: dict[str, Any]) -> Callable[[str], None]:
        """What the store calls if its log refuses this client's action (a networked log: another
        process runs the session, or the log cannot be reached): the client gets its rejection, the
        action as it sent it. The store's rejection observers hear of it from the store."""
        sent = action if isinstance(action, dict) else {}
        return lambda reason: self.host.store.reject(channel, sent, origin, reason, self, internal=[])

    def _internal_form(self, channel: str, action: Any) -> list[tuple[str, Any]] | None:
        """A refused action as the store's model has it, for the rejection observers."""
        take_up = getattr(self.dialect, "take_up", None)
        if take_up is None:
            return None
        try:
            up = take_up(self.host, channel, action)
        except Exception:  # only for observers: a malformed action has no internal form
            return None
        return list(up.envelopes) or None

    async def _set_client_managed_settings_permissions(self, params: Any) -> None:
        # VS Code 1.139.1 sends it after initialize (in no schema): which of the client's managed
        # settings the host may change. This host changes none of a client's settings.
        logger.debug("client %s: setClientManagedSettingsPermissions %r", self.client_id, params)

    # -- sessions ------------------------------------------------------------------------------

    async def _create_session(self, params: Any) -> None:
        params = self._params("createSession", params)
        channel = params.get("channel")
        if params.get("provider") is None and isinstance(channel, str) and not channel.startswith("ahp-session:"):
            scheme = channel.split(":", 1)[0]
            if scheme in self.host.agents:  # a 0.9.0 session URI names its provider
                params = {**params, "provider": scheme}
        self.host.create_session(params, self.client_id or "")
        return None

    async def _dispose_session(self, params: Any) -> None:
        params = self._params("disposeSession", params)
        if await self._on_owner("disposeSession", params, self.host.session_uri(params["channel"])):
            return None
        self.host.dispose_session(params["channel"])
        return None

    async def _create_chat(self, params: Any) -> None:
        params = self._params("createChat", params)
        if await self._on_owner("createChat", params, self.host.session_uri(params.get("channel"))):
            return None
        self.host.create_chat(params, self.client_id or "")
        return None

    async def _dispose_chat(self, params: Any) -> None:
        params = self._params("disposeChat", params)
        if await self._on_owner("disposeChat", params, params["channel"]):
            return None
        self.host.dispose_chat(params["channel"])
        return None

    async def _on_owner(self, method: str, params: dict[str, Any], channel: Any) -> bool:
        """Whether another process of a cluster runs ``channel`` and answered ``method`` for this
        client there (its error raised here as it was there: ``host.service.FORWARDED_REQUESTS``)."""
        owner = self.host.owner_elsewhere(channel)
        if owner is None:
            return False
        await self.host.forward_request(owner, method, params, self.client_id or "")
        return True

    async def _list_sessions(self, params: Any) -> dict[str, Any]:
        params = self._params("listSessions", params)
        assert self.dialect is not None
        return self.dialect.list_sessions(self.host, params)

    # -- automations (0.9.0) -------------------------------------------------------------------

    async def _list_automation_trigger_definitions(self, params: Any) -> dict[str, Any]:
        self._params("listAutomationTriggerDefinitions", params)
        return {"items": []}  # this host defines no event triggers (and no automations)

    async def _fetch_automation_runs(self, params: Any) -> dict[str, Any]:
        params = self._params("fetchAutomationRuns", params)
        raise RpcError(ErrorCode.NOT_FOUND, f"This host has no automations, so there are no runs of {_named(params)} to fetch.")

    async def _run_automation(self, params: Any) -> dict[str, Any]:
        params = self._params("runAutomation", params)
        raise RpcError(ErrorCode.NOT_FOUND, f"This host has no automations, so it cannot run {_named(params)}.")

    async def _fetch_turns(self, params: Any) -> dict[str, Any]:
        params = self._params("fetchTurns", params)
        limit = params.get("limit")
        if limit is not None and (limit < 0 or limit != int(limit)):
            raise ProtocolViolation.invalid_params("fetchTurns limit must be a whole number ≥ 0.")
        assert self.dialect is not None
        await self._hold_chats_of(params.get("channel"))
        return self.dialect.fetch_turns(self.host, params)

    async def _hold_chats_of(self, name: Any) -> None:
        """Have the store hold the chats ``name`` stands for whole (a session: its chats), as
        ``fetchTurns`` reads them (``Store.hold``)."""
        assert self.dialect is not None
        internal = self.dialect.internal_channels(self.host, name) if isinstance(name, str) else None
        chats: list[str] = []
        for uri in internal or ():
            chats.append(uri)
            if self.host.store.kind(uri) == "session":
                chats.extend(self.host.session_chats(uri))
        if chats:
            await self.host.store.hold(chats)

    async def _resource_read(self, params: Any) -> dict[str, Any]:
        params = self._params("resourceRead", params)
        return await self.host.read_resource(params["uri"], params.get("encoding"))

    async def _resource_list(self, params: Any) -> dict[str, Any]:
        params = self._params("resourceList", params)
        return await self.host.resources.list(params["uri"])

    async def _resource_resolve(self, params: Any) -> dict[str, Any]:
        params = self._params("resourceResolve", params)
        return await self.host.resources.resolve(params["uri"], params.get("followSymlinks") is not False)

    async def _resource_write(self, params: Any) -> dict[str, Any]:
        params = self._params("resourceWrite", params)
        return await self.host.resources.write(params)

    async def _resource_mkdir(self, params: Any) -> dict[str, Any]:
        params = self._params("resourceMkdir", params)
        return await self.host.resources.mkdir(params["uri"])

    async def _resource_delete(self, params: Any) -> dict[str, Any]:
        params = self._params("resourceDelete", params)
        return await self.host.resources.delete(params["uri"], bool(params.get("recursive")))

    async def _resource_copy(self, params: Any) -> dict[str, Any]:
        params = self._params("resourceCopy", params)
        return await self.host.resources.copy(params["source"], params["destination"], bool(params.get("failIfExists")))

    async def _resource_move(self, params: Any) -> dict[str, Any]:
        params = self._params("resourceMove", params)
        return await self.host.resources.move(params["source"], params["destination"], bool(params.get("failIfExists")))

    async def _resource_request(self, params: Any) -> dict[str, Any]:
        params = self._params("resourceRequest", params)
        return await self.host.resources.request(params)

    async def _create_resource_watch(self, params: Any) -> dict[str, Any]:
        params = self._params("createResourceWatch", params)
        return await self.host.watches.create(params, owner=self, owner_open=lambda: not self.rpc.closed)

    async def _authenticate(self, params: Any) -> dict[str, Any]:
        params = self._params("authenticate", params)
        raise RpcError(
            ErrorCode.INVALID_PARAMS,
            f"No agent on this host declares the protected resource {params['resource']!r}.",
        )

    async def _completions(self, params: Any) -> dict[str, Any]:
        params = self._params("completions", params)
        channel = params["channel"]
        session = session_of_default_chat(channel) or self.host.session_uri(channel) or channel
        return self.host.completions(session, params["text"], params["offset"])

    # -- terminals -----------------------------------------------------------------------------

    async def _create_terminal(self, params: Any) -> None:
        params = self._params("createTerminal", params)
        claim = params.get("claim")
        if isinstance(claim, dict) and claim.get("kind") == "session":
            session = self.host.session_uri(claim.get("session"))  # a 0.2.0 client names ahp-session:/<id>
            if session is not None:
                params = {**params, "claim": {**claim, "session": session}}
        await self.host.terminals.create(params, self.client_id or "")
        return None

    async def _dispose_terminal(self, params: Any) -> None:
        params = self._params("disposeTerminal", params)
        if await self._on_owner("disposeTerminal", params, params["channel"]):
            return None
        self.host.terminals.dispose(params["channel"])
        return None

    async def _invoke_changeset_operation(self, params: Any) -> dict[str, Any]:
        params = self._params("invokeChangesetOperation", params)
        assert self.dialect is not None
        channel = self.dialect.internal_uri(self.host, params["channel"])
        params = {**params, "channel": channel} if isinstance(channel, str) else params
        owner = self.host.owner_elsewhere(channel)
        if owner is not None:
            return cast(dict[str, Any], await self.host.forward_request(owner, "invokeChangesetOperation", params, self.client_id or ""))
        return self.host.changesets.invoke(params)

    async def _resolve_session_config(self, params: Any) -> dict[str, Any]:
        params = self._params("resolveSessionConfig", params)
        return self.host.session_config.resolve(params)

    async def _session_config_completions(self, params: Any) -> dict[str, Any]:
        params = self._params("sessionConfigCompletions", params)
        return self.host.session_config.completions(params)


def _named(params: dict[str, Any]) -> str:
    automation = params.get("automation")
    return repr(automation) if isinstance(automation, str) else "that automation"


def _session_of_chat(host: Any, channel: str) -> dict[str, Any] | None:
    """The state of the session a chat channel belongs to (None for other channels)."""
    session = host.chat_summaries.session_of(channel) if host.store.kind(channel) == "chat" else None
    return host.store.state(session) if session is not None else None


def _refusal(host: Any, target: str, action: Any, client_id: str) -> str | None:
    """Why the store must not take a client's (lifted) action: ``host.transport.validation``'s rules on the
    channel's state, and a turn started with the id of one of the chat's turns older than its
    state holds (which those rules, reading the state, cannot see)."""
    store = host.store
    reason = check_client_action(store.kind(target) or "", store.state(target) or {}, action, client_id,
                                 _session_of_chat(host, target))
    if (reason is None and isinstance(action, dict) and action.get("type") == "chat/turnStarted"
            and store.older_turn_count(target) and action.get("turnId") in store.turn_ids(target)):
        reason = f"Turn id {action['turnId']} is already used in this chat; pick a new id."
    return reason


def _stated_version(params: dict[str, Any]) -> str | None:
    """The version a ``reconnect`` says its client negotiated before (``_meta.protocolVersion``,
    which our own client sends), when this host serves it (a served baseline accepts it: ``1.2.0``
    and ``0.9.2`` as well as ``1.0.0``): a process that never saw the client (a host started
    again, another process of a cluster) cannot know it otherwise, and AHP's ``reconnect`` carries
    no version of its own. None: not said, or not served (``DEFAULT_VERSION`` applies)."""
    meta = params.get("_meta")
    stated = meta.get("protocolVersion") if isinstance(meta, dict) else None
    if not isinstance(stated, str) or not any(accepts(baseline, stated) for baseline in SERVED_VERSIONS):
        return None
    return stated
