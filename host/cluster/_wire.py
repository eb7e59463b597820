"""How a batch of messages leaves for NATS and how its one acknowledgement comes back: the log's
one seam onto the NATS client's internals, with a plain twin on its public API.

``sender(client)`` gives an object with one method, ``send(messages, timeout, done)``: ``messages``
is a list of ``(subject, headers, payload)``; every message but the last is published, the last as
a request; ``done`` is called once, on the client's loop, with the reply's payload (bytes) or with
the client's own error (an exception object, not raised) (``nats.errors.TimeoutError`` when no reply comes within ``timeout``,
``NoRespondersError``, ``ConnectionClosedError`` when the client is not connected,
``MaxPayloadError`` for a message over the server's limit). The messages of one call leave in
order, and calls leave in the order they were made. (A callback, not a future: the fast sender
calls it as the reply is read, a loop turn sooner than a future's callbacks would run.)
:func:`sent` wraps a call in a future, for a caller that awaits.

* :class:`PlainSender` uses only nats-py's public ``publish`` and ``request``: a task per call,
  the client's header encoding, a task hop for the flusher and another for the reply's
  subscription.
* :class:`FastSender` does the same work with less on the way, leaning on three internals of
  nats-py's ``Client`` (``_pending``, ``_pending_data_size``, ``_transport``): it writes the
  ``HPUB`` commands itself (the headers are the log's own, plain tokens, so they are joined
  without the client's per-header checks) and hands them to the transport at once, behind
  whatever the client had pending, instead of waking the client's flusher task; replies come to
  one subscription of its own (``_INBOX.<id>.*``), each to the future of its call, handed on by
  the subscription's queue as the client's read loop puts it there (a fourth internal,
  ``Subscription._pending_queue``; without it, through a callback of the subscription). It skips the
  flusher's ``drain``: what is in flight is bounded by the log itself (one batch per owner group
  waits for its acknowledgement before the next leaves). Its timeouts are deadlines swept by one
  timer (armed for the earliest), not a timer per call.

``sender`` picks :class:`FastSender` when the client has the internals it needs, else the plain
one (``fast=False`` asks for the plain one: the tests run the log on both).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import ConnectionClosedError, MaxPayloadError, NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

__all__ = ["FastSender", "Message", "PlainSender", "Sender", "sender", "sent"]

Message = tuple[str, dict[str, str], bytes]
"""``(subject, headers, payload)``."""

_INTERNALS = ("_pending", "_pending_data_size", "_transport", "_max_payload")


class Sender(Protocol):
    async def start(self) -> None:
        """Get ready (once, after the client connected)."""

    def send(self, messages: list[Message], timeout: float, done: Callable[[bytes | BaseException], None]) -> None:
        """Publish ``messages`` in order, the last as a request; ``done`` gets its reply's payload."""


def sent(wire: Sender, messages: list[Message], timeout: float) -> asyncio.Future[bytes]:
    """``wire.send`` as a future of the reply's payload."""
    future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    def done(outcome: bytes | BaseException) -> None:
        if future.done():
            return
        if isinstance(outcome, BaseException):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)

    wire.send(messages, timeout, done)
    return future


def sender(client: Client, fast: bool = True) -> Sender:
    """The fast sender when ``fast`` and the client has what it leans on, else the plain one."""
    if fast and all(hasattr(client, name) for name in _INTERNALS):
        return FastSender(client)
    return PlainSender(client)


class PlainSender:
    """``send`` on nats-py's public API only."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def start(self) -> None:
        pass

    def send(self, messages: list[Message], timeout: float, done: Callable[[bytes | BaseException], None]) -> None:
        asyncio.ensure_future(self._send(messages, timeout, done))

    async def _send(self, messages: list[Message], timeout: float, done: Callable[[bytes | BaseException], None]) -> None:
        try:
            for subject, headers, payload in messages[:-1]:
                await self.client.publish(subject, payload, headers=headers)
            subject, headers, payload = messages[-1]
            reply = await self.client.request(subject, payload, timeout=timeout, headers=headers)
        except Exception as error:
            done(error)
        else:
            done(reply.data)


class FastSender:
    """``send`` writing the protocol's commands itself (see the module docstring)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._inbox = ""
        self._calls = 0
        self._waiting: dict[str, tuple[Callable[[bytes | BaseException], None], float]] = {}
        """Per call's reply subject: its ``done`` and its deadline (the loop's clock)."""
        self._sweep: asyncio.TimerHandle | None = None
        self._sweep_at = 0.0

    async def start(self) -> None:
        self._inbox = self.client.new_inbox() + "."
        subscription = await self.client.subscribe(self._inbox + "*", pending_bytes_limit=0)
        if isinstance(getattr(subscription, "_pending_queue", None), asyncio.Queue):
            # No task between the client's read loop and the reply's future: the subscription's
            # queue hands each message on as it is put.
            subscription._pending_queue = _HandOn(self._reply, subscription)
        else:
            await subscription.unsubscribe()
            await self.client.subscribe(self._inbox + "*", cb=self._reply_later)

    def send(self, messages: list[Message], timeout: float, done: Callable[[bytes | BaseException], None]) -> None:
        client = self.client
        if not client.is_connected or client._transport is None:
            done(ConnectionClosedError())
            return
        self._calls += 1
        reply = f"{self._inbox}{self._calls}"
        commands = []
        last = len(messages) - 1
        for index, (subject, headers, payload) in enumerate(messages):
            head = ("NATS/1.0\r\n" + "".join([f"{key}: {value}\r\n" for key, value in headers.items()])
                    + "\r\n").encode()
            size = len(head) + len(payload)
            if size > client._max_payload:
                done(MaxPayloadError())
                return
            line = f"HPUB {subject} {reply} {len(head)} {size}\r\n" if index == last else f"HPUB {subject} {len(head)} {size}\r\n"
            commands.append(line.encode() + head + payload + b"\r\n")
        pending = client._pending
        if pending:  # what the client queued before goes first
            commands[:0] = pending
            client._pending = []
            client._pending_data_size = 0
        client._transport.writelines(commands)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        self._waiting[reply] = (done, deadline)
        if self._sweep is None or deadline < self._sweep_at:
            self._arm(loop, deadline)

    def _arm(self, loop: asyncio.AbstractEventLoop, deadline: float) -> None:
        if self._sweep is not None:
            self._sweep.cancel()
        self._sweep_at = deadline
        self._sweep = loop.call_at(deadline, self._expire_due)

    def _expire_due(self) -> None:
        """Time the calls past their deadline out; armed again for the earliest one left."""
        self._sweep = None
        loop = asyncio.get_running_loop()
        now = loop.time() + 0.001  # (a timer may fire a hair before its time)
        due = [reply for reply, (_, deadline) in self._waiting.items() if deadline <= now]
        for reply in due:
            self._waiting.pop(reply)[0](NatsTimeout())
        if self._waiting:
            self._arm(loop, min(deadline for _, deadline in self._waiting.values()))

    async def _reply_later(self, message: Msg) -> None:
        self._reply(message)

    def _reply(self, message: Msg) -> None:
        waiting = self._waiting.pop(message.subject, None)
        if waiting is None:
            return  # too late: its call already timed out
        done = waiting[0]
        if message.headers and message.headers.get("Status") == "503":
            done(NoRespondersError())
        else:
            done(message.data)


class _HandOn(asyncio.Queue[Msg]):
    """A subscription's queue that keeps nothing: each message put is handed to ``take`` at once."""

    def __init__(self, take: Callable[[Msg], None], subscription: Any) -> None:
        super().__init__()
        self._take = take
        self._subscription = subscription

    def put_nowait(self, item: Msg) -> None:
        self._subscription._pending_size = 0  # counted by the client as queued; nothing is
        self._take(item)


def _conforms(client: Client) -> list[Any]:
    """mypy checks here that both senders have the seam's members."""
    fast: Sender = FastSender(client)
    plain: Sender = PlainSender(client)
    return [fast, plain]
