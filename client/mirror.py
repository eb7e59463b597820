"""The client's local replica of host state: confirmed state plus optimistic actions.

Pure bookkeeping: no asyncio, no sockets, no clock, no uuid. Times arrive as ``now``
arguments (epoch ms) and are remembered with each pending action, so re-folding the
pending queue after a rebase reproduces exactly the view the caller saw before.

Per channel the mirror keeps:

* ``confirmed``: the state the host has acknowledged (snapshot + accepted envelopes);
* ``seq``: the highest ``serverSeq`` already reflected in ``confirmed``;
* ``pending``: this client's dispatched-but-unacknowledged actions, ``(clientSeq,
  action, now)`` in dispatch order.

Invariants:

* ``state(channel)`` is always the pending actions folded, in order, over ``confirmed``
  ("server wins": foreign actions land in ``confirmed`` first and our pending ones are
  replayed on top of them).
* An envelope whose ``origin`` is ours and names a pending ``clientSeq`` resolves that
  action: accepted envelopes become confirmed, rejected ones (``rejectionReason``) are
  dropped without ever touching state, and the reason is recorded.
* An envelope with ``rejectionReason`` is never applied, whoever it belongs to.
* An accepted envelope with ``serverSeq <= seq`` of its channel is already reflected
  (snapshot taken later, duplicate, out of order) and is not applied again; except that
  envelopes right after one another with the same ``serverSeq`` and different actions are all
  applied (a host that projects one action of its own model into several of this client's
  version sends them so).
* Envelopes for channels the mirror does not hold only advance ``last_server_seq``.
* Every dispatched action gets exactly one outcome: accepted, rejected, or lost (its
  channel was dropped or the connection went away before the host answered).
* Which reducers fold the states is the negotiated version's (``client.versions.mirror_model``):
  the model's own (``ahp.state``) for 0.9.0 and later, the 0.2.0 dialect's for a caller that asked
  for it. It is chosen while the mirror is empty (``use``) and never mixed.
* Reducers are never handed our stored dicts to keep: they must not mutate inputs
  (``ahp.state`` guarantees it) and the mirror never mutates what they return.
* Streamed text costs O(1) per token: the confirmed state holds consecutive text appends to one
  target as a run (``ahp.state.appends.AppendingState``, as the host's store does), reduced as one
  joined append when the state is read. Reading the state after every token therefore still copies
  the text; a reader that draws at its own pace (the chat client, once per wake-up) pays once per
  draw, not once per token.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ahp.state.appends import AppendingState
from client.versions import MODEL, MirrorModel

__all__ = ["ActionOutcome", "Mirror", "Reducer", "ChannelKind"]

Reducer = Callable[[str, dict[str, Any], dict[str, Any], int], dict[str, Any]]
"""``reduce(kind, state, action, now) -> new state`` (the shape of ``ahp.state.reduce``)."""

ChannelKind = Callable[[str], "str | None"]
"""``channel_kind(uri) -> 'root' | 'session' | ... | None`` (``ahp.state.channel_kind``)."""

OutcomeStatus = Literal["accepted", "rejected", "lost"]

# Outcomes are kept so late ``outcome()`` calls still answer; bounded so a client
# that runs for days does not grow without limit.
_MAX_REMEMBERED_OUTCOMES = 4096


@dataclass(frozen=True)
class ActionOutcome:
    """What became of one action this client dispatched."""

    client_seq: int
    """The ``clientSeq`` the action was dispatched with."""
    channel: str
    """The channel it was dispatched to."""
    action: dict[str, Any]
    """The action payload as dispatched."""
    status: OutcomeStatus
    """accepted (echoed), rejected (echo carried a reason) or lost (never answered)."""
    reason: str | None = None
    """The host's ``rejectionReason``, or why the action was given up as lost."""
    server_seq: int | None = None
    """``serverSeq`` of the echo; None when lost."""

    @property
    def accepted(self) -> bool:
        """True when the host applied the action."""
        return self.status == "accepted"


@dataclass
class _Pending:
    client_seq: int
    action: dict[str, Any]
    now: int


@dataclass
class _Channel:
    confirmed: AppendingState
    seq: int
    pending: list[_Pending] = field(default_factory=list)
    # Cached optimistic view when actions are pending; None means "re-fold on next read".
    view: dict[str, Any] | None = None
    # The actions applied from envelopes at ``seq`` (none after a snapshot): a following envelope
    # with the same serverSeq and another action is the next action of one projected change.
    at_seq: list[dict[str, Any]] = field(default_factory=list[Any])

    @property
    def kind(self) -> str:
        return self.confirmed.kind


class Mirror:
    """Confirmed + optimistic state for every channel this client mirrors."""

    def __init__(
        self,
        client_id: str,
        *,
        reduce: Reducer | None = None,
        channel_kind: ChannelKind | None = None,
        model: MirrorModel = MODEL,
    ) -> None:
        self.client_id = client_id
        """Envelopes whose ``origin.clientId`` equals this are our own echoes."""
        self._model = model
        self._reduce: Reducer = reduce or model.reduce
        self._channel_kind: ChannelKind = channel_kind or model.channel_kind
        self._fixed = reduce is not None
        self._channels: dict[str, _Channel] = {}
        self._last_server_seq = 0
        self._outcomes: OrderedDict[int, ActionOutcome] = OrderedDict()
        self.rejections: list[ActionOutcome] = []
        """Every host rejection of our actions, oldest first."""

    # -- reading ---------------------------------------------------------------

    @property
    def last_server_seq(self) -> int:
        """The highest ``serverSeq`` seen in any envelope, snapshot or handshake."""
        return self._last_server_seq

    @property
    def channels(self) -> list[str]:
        """Channels with mirrored state, in the order they were installed."""
        return list(self._channels)

    def __contains__(self, channel: object) -> bool:
        return channel in self._channels

    def state(self, channel: str) -> dict[str, Any] | None:
        """The optimistic view (pending over confirmed); None if not mirrored. Do not mutate."""
        ch = self._channels.get(channel)
        if ch is None:
            return None
        if not ch.pending:
            return ch.confirmed.state
        if ch.view is None:
            view = ch.confirmed.state
            for p in ch.pending:
                view = self._apply(ch.kind, view, p.action, p.now)
            ch.view = view
        return ch.view

    def confirmed_state(self, channel: str) -> dict[str, Any] | None:
        """The host-acknowledged state, without pending actions; None if not mirrored."""
        ch = self._channels.get(channel)
        return None if ch is None else ch.confirmed.state

    def channel_seq(self, channel: str) -> int | None:
        """The highest ``serverSeq`` reflected in the channel's confirmed state."""
        ch = self._channels.get(channel)
        return None if ch is None else ch.seq

    def pending(self, channel: str | None = None) -> list[tuple[int, dict[str, Any]]]:
        """Unacknowledged ``(clientSeq, action)`` pairs of one channel, or of all channels."""
        chans = self._channels.values() if channel is None else [self._channels.get(channel)]
        out = [(p.client_seq, p.action) for ch in chans if ch is not None for p in ch.pending]
        return sorted(out, key=lambda pair: pair[0])

    def outcome(self, client_seq: int) -> ActionOutcome | None:
        """The outcome of a dispatched action, or None while it is still pending."""
        return self._outcomes.get(client_seq)

    # -- writing ---------------------------------------------------------------

    def use(self, model: MirrorModel) -> None:
        """Fold with ``model`` from now on (the version a handshake negotiated). Only an empty
        mirror may change how it folds; a ``reduce`` given to the constructor is kept."""
        if model is self._model:
            return
        if self._channels:
            raise ValueError("the mirror holds channels folded another way; clear it first")
        self._model = model
        self._channel_kind = model.channel_kind
        if not self._fixed:
            self._reduce = model.reduce

    def note_server_seq(self, server_seq: int) -> None:
        """Record a ``serverSeq`` learnt outside an envelope (e.g. ``InitializeResult``)."""
        if server_seq > self._last_server_seq:
            self._last_server_seq = server_seq

    def install_snapshot(self, channel: str, state: dict[str, Any], from_seq: int) -> None:
        """Replace the channel's confirmed state; pending actions are kept and re-folded."""
        kind = self._kind_of(channel)
        ch = self._channels.get(channel)
        if ch is None:
            self._channels[channel] = _Channel(self._model.holder(kind, state, self._apply), seq=from_seq)
        else:
            ch.confirmed.state, ch.seq, ch.view, ch.at_seq = state, from_seq, None, []
        self.note_server_seq(from_seq)

    def drop(self, channel: str, reason: str = "the channel was dropped") -> list[ActionOutcome]:
        """Forget a channel; its pending actions are resolved as lost and returned."""
        ch = self._channels.pop(channel, None)
        if ch is None:
            return []
        return [self._resolve(channel, p, "lost", reason, None) for p in ch.pending]

    def lose_pending(self, reason: str) -> list[ActionOutcome]:
        """Resolve every pending action on every channel as lost (e.g. the socket died)."""
        lost: list[ActionOutcome] = []
        for name, ch in self._channels.items():
            lost += [self._resolve(name, p, "lost", reason, None) for p in ch.pending]
            if ch.pending:
                ch.pending, ch.view = [], None
        return sorted(lost, key=lambda o: o.client_seq)

    def apply_local(self, channel: str, client_seq: int, action: Mapping[str, Any], now: int) -> None:
        """Apply one of our own actions optimistically and queue it until the echo.

        Raises KeyError if the channel is not mirrored and ValueError if ``client_seq``
        does not increase (the host pops echoes in clientSeq order).
        """
        ch = self._channels.get(channel)
        if ch is None:
            raise KeyError(channel)
        if ch.pending and client_seq <= ch.pending[-1].client_seq:
            raise ValueError(f"clientSeq {client_seq} does not follow {ch.pending[-1].client_seq}")
        action = dict(action)
        ch.pending.append(_Pending(client_seq, action, now))
        if ch.view is not None:
            ch.view = self._apply(ch.kind, ch.view, action, now)

    def apply_envelope(self, envelope: Mapping[str, Any], now: int) -> ActionOutcome | None:
        """Feed one ActionEnvelope; returns the outcome if it resolved one of our actions.

        Raises ValueError on an envelope missing ``channel``, ``action`` or ``serverSeq``.
        """
        try:
            channel = envelope["channel"]
            action = envelope["action"]
            server_seq = envelope["serverSeq"]
        except (KeyError, TypeError) as exc:
            raise ValueError(f"action envelope lacks {exc}") from None
        if not isinstance(action, dict) or not isinstance(server_seq, (int, float)):
            raise ValueError("action envelope has a malformed action or serverSeq")
        server_seq = int(server_seq)
        reason = envelope.get("rejectionReason")
        self.note_server_seq(server_seq)

        ch = self._channels.get(channel)
        if ch is None:
            return None
        outcome = None
        origin = envelope.get("origin")
        if isinstance(origin, Mapping) and origin.get("clientId") == self.client_id:
            index = _find_pending(ch.pending, origin.get("clientSeq"))
            if index is not None:
                entry = ch.pending.pop(index)
                ch.view = None
                status: OutcomeStatus = "rejected" if reason is not None else "accepted"
                outcome = self._resolve(channel, entry, status, reason, server_seq)
                if status == "rejected":
                    self.rejections.append(outcome)
        if reason is not None:
            return outcome
        if server_seq > ch.seq or (server_seq == ch.seq and ch.at_seq and action not in ch.at_seq):
            ch.confirmed.apply(action, now)
            if server_seq > ch.seq:
                ch.at_seq = []
            ch.at_seq.append(action)
            ch.seq = server_seq
            ch.view = None
        return outcome

    def clear(self, reason: str = "the mirror was reset") -> list[ActionOutcome]:
        """Forget every channel; pending actions are resolved as lost and returned."""
        lost = self.lose_pending(reason)
        self._channels.clear()
        return lost

    # -- internals -------------------------------------------------------------

    def _resolve(
        self, channel: str, entry: _Pending, status: OutcomeStatus, reason: str | None, seq: int | None
    ) -> ActionOutcome:
        outcome = ActionOutcome(entry.client_seq, channel, entry.action, status, reason, seq)
        self._outcomes[entry.client_seq] = outcome
        while len(self._outcomes) > _MAX_REMEMBERED_OUTCOMES:
            self._outcomes.popitem(last=False)
        return outcome

    def _apply(self, kind: str, state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
        return self._reduce(kind, state, action, now)

    def _kind_of(self, channel: str) -> str:
        kind = self._channel_kind(channel)
        if kind is None:
            raise ValueError(f"{channel!r} is not a state-bearing AHP channel")
        return kind


def _find_pending(pending: list[_Pending], client_seq: Any) -> int | None:
    for i, p in enumerate(pending):
        if p.client_seq == client_seq:
            return i
    return None
