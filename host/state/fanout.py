"""Fan-out: sending a channel's envelopes and notifications to this process's subscribers, each in
the shapes of its protocol version.

A channel's subscribers sit in groups on the channel (``host.state.channels.Channel``): those that
take the store's own shapes (``subscribers``) and, for every other protocol version, those that
share one ``Translator`` (``translated``: a connection's dialect, ``host.transport.dialects``).
This module is the only one that changes those groups or sends to them (the store only asks each
group's translator, before it reduces an action, whether it wants the states around it). It does
no I/O and knows nothing of the log: the store hands it envelopes already numbered, with the frame
the log serialised.

Invariants:

* **One serialisation per envelope.** Every subscriber that takes the store's own shapes gets the
  very frame the log serialised (``ahp.jsonrpc.action_frame``, in the log's ``append``,
  ``host.state.log``).
  Each translator group's translator sees each envelope and notification once, and what it returns
  is serialised once for the whole group (not at all when it returns the envelope unchanged, or
  ``None``: that group is not sent it). Every frame is built by ``ahp.jsonrpc``: ``action_frame``
  for envelopes (rejections and echoes too), ``notification`` for notifications.
* A translation that raises is logged and that group misses the envelope; it never stops the store
  or the other groups.
* Sending never blocks: a subscriber's ``send`` takes a ready text frame (the transport buffers it
  until the log says it is durable, ``host.state.log``).
* **No stale mirror.** A translator that cannot say an envelope in its version's actions (no action
  of that version makes the change) returns :class:`Resync`: each subscriber of its group is
  asked to ``resync(reason, serverSeq)`` (a connection closes so that its client reconnects and gets fresh
  snapshots, ``host.transport.connection``); one without that method is sent nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Protocol

from ahp.jsonrpc import action_frame, notification
from host.state.channels import Channel

__all__ = ["Change", "Recipients", "Resync", "Subscriber", "Translator", "drop", "echo", "fan_out", "fan_out_streamed", "has_subscribers", "is_subscribed",
           "notify", "recipients", "reject", "subscribe", "translator_of", "unsubscribe"]

logger = logging.getLogger(__name__)


class Subscriber(Protocol):
    """Anything that can take a ready-to-send text frame without blocking. One with a
    ``translator`` attribute that is not None gets frames in that translator's shapes. One with
    a ``channel_removed(uri)`` method is told when a channel it subscribes to is removed (so that
    it lets go of what it keeps for that subscription)."""

    def send(self, text: str) -> None: ...


@dataclass(frozen=True)
class Change:
    """What a translator may read about one accepted action: the channel's states around it
    (``None`` unless the translator's ``wants_states`` asked for them) and the store
    (``host.state.store.Store``), for the other channels it needs (a 0.2.0 session is a session
    channel and its default chat)."""

    before: dict[str, Any] | None
    after: dict[str, Any] | None
    store: Any


@dataclass(frozen=True)
class Resync:
    """What a translator returns for an envelope its version cannot say: the group's mirrors of the
    channel would go stale, so each subscriber must take a fresh snapshot. ``reason`` says why,
    for the subscriber (a close reason: short)."""

    reason: str


class Translator(Protocol):
    """Turns the store's envelopes and notifications into the shapes of a group of subscribers
    (a protocol version other than the store's own): the very object it was given to send it as
    is (the frame already built is reused), a new one (or a list of them, sent in order) to send
    instead, None to send nothing, a :class:`Resync` when its version cannot say it. Called once per envelope per channel for the whole group.
    ``wants_states(kind, action)`` says whether it needs the states around the action (reading
    them costs a reduction of a pending text run: translators say no for streamed tokens).
    An optional ``streams_as_is`` attribute, when true, promises that it never wants the states
    around a streamed append (``STREAMED``) and returns every one unchanged: the store's lean way
    for them then neither asks it (``fan_out_streamed``)."""

    def wants_states(self, kind: str, action: dict[str, Any]) -> bool: ...

    def envelope(self, kind: str, envelope: dict[str, Any], change: Change) -> Any: ...

    def notification(self, kind: str, method: str, params: dict[str, Any], store: Any) -> dict[str, Any] | None: ...


def translator_of(subscriber: Subscriber) -> Translator | None:
    """The translator a subscriber brings (None: the store's own shapes)."""
    return getattr(subscriber, "translator", None)


# -- the groups ------------------------------------------------------------------------------------

def subscribe(entry: Channel, subscriber: Subscriber, translator: Translator | None) -> None:
    """Add ``subscriber`` to the group of ``translator`` (None: the store's own shapes)."""
    if translator is None:
        entry.subscribers.add(subscriber)
    else:
        entry.translated.setdefault(translator, set()).add(subscriber)


def unsubscribe(entry: Channel, subscriber: Subscriber, translator: Translator | None) -> bool:
    """Take ``subscriber`` out of the group of ``translator``; whether it was in it."""
    if translator is None:
        found = subscriber in entry.subscribers
        entry.subscribers.discard(subscriber)
        return found
    group = entry.translated.get(translator) or set()
    found = subscriber in group
    group.discard(subscriber)
    if not group:
        entry.translated.pop(translator, None)
    return found


def drop(entry: Channel, subscriber: Subscriber) -> bool:
    """Take ``subscriber`` out of every group of the channel; whether it was in one."""
    found = subscriber in entry.subscribers
    entry.subscribers.discard(subscriber)
    for translator, group in tuple(entry.translated.items()):
        found = found or subscriber in group
        group.discard(subscriber)
        if not group:
            del entry.translated[translator]
    return found


@dataclass(frozen=True, slots=True)
class Recipients:
    """A channel's groups as they are at one moment (``recipients``), for a frame sent later to
    those subscribed then: ``fan_out`` takes it as it takes the channel."""

    kind: str
    subscribers: frozenset[Subscriber]
    translated: dict[Translator, frozenset[Subscriber]]


def recipients(entry: Channel) -> Recipients:
    """Who ``entry``'s frames go to now."""
    return Recipients(entry.kind, frozenset(entry.subscribers),
                      {translator: frozenset(group) for translator, group in entry.translated.items()})


def has_subscribers(entry: Channel) -> bool:
    return bool(entry.subscribers or entry.translated)


def is_subscribed(entry: Channel, subscriber: Subscriber) -> bool:
    translator = translator_of(subscriber)
    if translator is None:
        return subscriber in entry.subscribers
    return subscriber in entry.translated.get(translator, ())


def everyone(entry: Channel) -> set[Subscriber]:
    """Every subscriber of the channel, whatever its group."""
    return {*entry.subscribers, *(s for group in entry.translated.values() for s in group)}


# -- sending ---------------------------------------------------------------------------------------

def fan_out(entry: Channel | Recipients, envelope: dict[str, Any], frame: str, change: Change) -> None:
    """Send an accepted envelope (``frame``: its one serialisation) to every subscriber of its
    channel: the store's own shapes get ``frame``, each translator group its translation,
    serialised once for the group. ``entry`` may be the channel's ``Recipients`` at an earlier
    moment instead."""
    for subscriber in tuple(entry.subscribers):
        subscriber.send(frame)
    for translator, group in tuple(entry.translated.items()):
        try:
            shown = translator.envelope(entry.kind, envelope, change)
        except Exception:  # a translation bug must not stop the store or the other groups
            logger.exception("translating %s failed", envelope["action"].get("type"))
            continue
        if shown is None:
            continue
        if shown is envelope:  # the store's own shape (every streamed token of a 0.9.0 group)
            for subscriber in tuple(group):
                subscriber.send(frame)
            continue
        if isinstance(shown, Resync):
            for subscriber in tuple(group):
                resync = getattr(subscriber, "resync", None)
                if resync is not None:
                    resync(shown.reason, envelope["serverSeq"])
            continue
        if isinstance(shown, list):
            texts = [frame if item is envelope else action_frame(item)[1] for item in shown]
        else:
            texts = [action_frame(shown)[1]]
        for subscriber in tuple(group):
            for text in texts:
                subscriber.send(text)


def fan_out_streamed(entry: Channel, frame: str) -> None:
    """``fan_out`` of a streamed append (``STREAMED``) when every translator group of the channel
    has a translator that ``streams_as_is`` (``Translator``): each subscriber gets ``frame``, no
    translator is asked (each would answer with the envelope unchanged)."""
    for subscriber in tuple(entry.subscribers):
        subscriber.send(frame)
    for group in tuple(entry.translated.values()):
        for subscriber in tuple(group):
            subscriber.send(frame)


def notify(entry: Channel, method: str, params: dict[str, Any], store: Any) -> None:
    """Send a protocol notification to a channel's subscribers, each group in its shapes."""
    frame = notification(method, params) if entry.subscribers else None
    if frame is not None:
        for subscriber in tuple(entry.subscribers):
            subscriber.send(frame)
    for translator, group in tuple(entry.translated.items()):
        try:
            shown = translator.notification(entry.kind, method, params, store)
        except Exception:
            logger.exception("translating %s failed", method)
            continue
        if shown is None:
            continue
        text = frame if frame is not None and shown is params else notification(method, shown)
        for subscriber in tuple(group):
            subscriber.send(text)


def reject(channel: str, action: Any, origin: dict[str, Any], reason: str, seq: int, to: Subscriber) -> None:
    """Tell only the dispatcher that its action was refused, at serverSeq ``seq`` (the current one):
    the envelope carries the action as the client sent it."""
    envelope = {"channel": channel, "action": action, "serverSeq": seq, "origin": origin, "rejectionReason": reason}
    to.send(action_frame(envelope)[1])


def echo(channel: str, action: Any, origin: dict[str, Any], seq: int, to: Subscriber) -> None:
    """Tell only the dispatcher that its action was taken though it changes nothing, at ``seq``."""
    envelope = {"channel": channel, "action": action, "serverSeq": seq, "origin": origin}
    to.send(action_frame(envelope)[1])
