"""How the log's messages leave for NATS and how their acknowledgements come back: the log's
one seam onto the NATS client's internals, with a plain twin on its public API.

``sender(client)`` gives an object with two ways to send. ``request_batches(batches, timeout)``,
what the log uses: each batch is ``(requests, name, first, done)``; each of its ``requests`` (a
sequence whose first three items are subject, header lines and payload text) is a request of its
own, its headers its lines and one more, ``name`` followed by its number (``first`` plus its
index: the log's ``Nats-Msg-Id``); the requests of every batch are written to the connection at
once (the fast sender: one write for a tick's messages of every group), and ``done(replies)`` is
called once per batch, on the client's loop, when every one of its requests has its reply's
payload or the client's own error as below (one too large fails alone), in the requests' order.
``send(messages, timeout, done)``: ``messages``
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
  without the client's per-header checks; a ``request_batches`` call's frames are built as one
  text, one f-string per request, and encoded once) and hands them to the transport at once (the asyncio
  transport under the client's stream writer, ``_transport._io_writer.transport``), behind
  whatever the client had pending, instead of waking the client's flusher task; replies come to
  one subscription of its own (``_INBOX.<id>.*``; request ``i`` of call ``c`` is answered on
  ``<inbox>c-i``, so one entry per call waits, not one per request), each to its call, handed on by
  the subscription's queue as the client's read loop puts it there (a fourth internal,
  ``Subscription._pending_queue``; without it, through a callback of the subscription). It skips the
  flusher's ``drain``: what is in flight is bounded by the log itself (one batch per owner group
  waits for its acknowledgement before the next leaves). Its timeouts are deadlines swept by one
  timer (armed for the earliest), not a timer per call.

  **Replies read where they arrive.** A reply normally takes a loop turn of its own: the bytes
  reach the connection's ``asyncio.StreamReader`` (``feed_data``, from the transport's read
  callback), which wakes nats-py's read-loop task, whose parser builds a ``Msg`` and puts it on
  the subscription's queue. The fast sender also wraps the reader's ``feed_data`` (a fifth and
  sixth internal: the transport's ``_io_reader`` with its ``_buffer`` and ``_waiter``, and the
  client's parser ``_ps`` with its ``buf`` and ``state``): when the read loop is idle (waiting
  for data, nothing buffered, its parser between messages) and the bytes that arrived begin with
  plain ``MSG`` frames on its own inbox, complete, it takes those frames itself and hands each
  reply to its batch there and then (a batch's ``done`` once its last reply is in); the rest of the bytes (or all of them, in any other case)
  go to the reader as before, in order, so the read loop sees exactly the stream it would have
  seen minus the frames taken from its head. What a reply costs there is kept off Python's
  steps, and read by hand rather than by nats-py's parser or a regular expression: the frames
  are the protocol's plainest (``MSG <subject> <sid> <size>``, the payload, line breaks), and a
  regular expression walks every byte of a tick's acknowledgements in ``sre`` (about 4,300
  instructions a chunk at ten a tick, by callgrind) where a few C calls over the whole read
  (``partition``, ``split``, ``join``, ``map``) do it for less (a read of ten replies taken in
  about 64,000 instructions against 113,000, of one in 14,000 against 15,000: an ad-hoc count);
  and bytes' ``startswith``/``find`` are left out of the common path, as their arguments are
  parsed by a format string, dearer than the search. nats-py, the
  maintained client, stays the one that parses everything else. A read that is one reply is
  taken as it is (its control line's last word is its size, and the payload of that size ends
  the read); a read that is several and nothing else (a tick's acknowledgements) is cut at its
  line breaks and its control lines at their spaces, each payload's length checked against its
  size at once, and replies of one call in order go into their places as one slice; anything
  else is taken frame by frame from the head. A reply with headers (``HMSG``: the server's "no
  responders" status) or split across reads takes the usual way. The reader is wrapped again
  after a reconnect (nats-py connects its transport object again, with a new stream reader and
  writer: which one is taken on is checked at each send).
  Its ``done`` callbacks then run inside the transport's read callback: an exception from one is
  logged, never let into asyncio's transport (where it would close the connection).

**Requests the caller frames itself.** ``reserve()`` gives the reply subject prefix of a call
(``<inbox><call>-``; None from the plain sender, or when not connected) and ``write_batch(commands,
count, done, timeout)`` writes ``count`` ``HPUB`` commands the caller built with it (request ``i``
replying on the prefix followed by ``i``: ``REQUEST_NUMBERS``), its replies handed to ``done`` as a
batch's: the log's one pass per record (``JetStreamLog.send_told``) builds each record's command in
the loop that queues it. The plain sender takes none (the log then uses ``request_batches``).
Given ``acks`` (what a plain acknowledgement of the log's stream begins with), such a call's
replies that are all plain acknowledgements numbered one after another come to ``done`` as a
``range`` of those numbers: a call of one from the one-reply path (slices, ``isdigit``), a call of
several when one read holds exactly its replies, in order (``_took_acks``: what arrived is
compared whole with the text those replies would make, from the first one's number, with a
template kept per count, subscription id and size; one comparison instead of cutting the read
into pieces and the acknowledgements into numbers, about 64,000 instructions a read of ten).
Anything else is read as before and handed over as the replies' payloads. ``request_batches``
takes ``acks`` too (each batch's replies alike; the plain sender hands each reply as it is).

``sender`` picks :class:`FastSender` when the client has the internals it needs, else the plain
one (``fast=False`` asks for the plain one: the tests run the log on both).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import ConnectionClosedError, MaxPayloadError, NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

__all__ = ["REQUEST_NUMBERS", "Batch", "BatchDone", "FastSender", "Message", "PlainSender", "Request", "Sender", "sender", "sent",
           "subscribe_at_once"]

Message = tuple[str, dict[str, str], bytes]
"""``(subject, headers, payload)``."""

Request = Sequence[Any]
"""One request of ``request_batches``: a sequence whose first three items are ``(subject, header
lines, payload)`` (the log's queued records as they are, with more items after): the header lines
are ``Name: value`` joined by ``\r\n`` (plain tokens, ASCII, as the log's are), the payload is
text (sent as UTF-8)."""

BatchDone = Callable[[list["bytes | BaseException"]], None]
"""``done(replies)`` of a batch: each request's reply payload or error, in the requests' order."""

Batch = tuple[Sequence[Request], str, int, BatchDone]
"""``(requests, name, first, done)`` of ``request_batches``: request ``i`` carries one header line
more, ``name`` followed by ``first + i``."""

_INTERNALS = ("_pending", "_pending_data_size", "_transport", "_max_payload")

logger = logging.getLogger(__name__)

_AWAITING_CONTROL_LINE = 1
"""nats-py's parser state between messages (``nats.protocol.parser.AWAITING_CONTROL_LINE``)."""

_NONE = object()

_NUMBERS = tuple(map(str, range(1024)))
"""Request numbers as text (a batch's are looked up here, not formatted one by one)."""
REQUEST_NUMBERS = _NUMBERS
"""The same, for a caller that frames its requests itself (``FastSender.write_batch``)."""

_BYTE_NUMBERS = tuple(number.encode() for number in _NUMBERS)
"""The same as they come back in reply subjects."""

_NO_REPLY = ConnectionClosedError()
"""A reply slot's value until its reply comes (never handed over: a call finishes once every slot is filled)."""


class Sender(Protocol):
    async def start(self) -> None:
        """Get ready (once, after the client connected)."""

    def send(self, messages: list[Message], timeout: float, done: Callable[[bytes | BaseException], None]) -> None:
        """Publish ``messages`` in order, the last as a request; ``done`` gets its reply's payload."""

    def request_batches(self, batches: Sequence[Batch], timeout: float, acks: bytes = b"") -> None:
        """Send each request of each batch as a request of its own, in order, all in one write
        where the client allows; each batch's ``done(replies)`` once all of its replies (or
        errors) are in (a ``range`` of numbers when ``acks`` is given, as ``write_batch``'s)."""

    def reserve(self) -> str | None:
        """A call framed by the caller (``write_batch``): its reply subject prefix, or None where
        this sender does not take such calls (the plain one) or the client is not connected."""

    def write_batch(self, commands: str, count: int, done: BatchDone, timeout: float, acks: bytes = b"",
                    since: float | None = None) -> None:
        """Write the requests the caller framed after ``reserve`` gave their reply prefix
        (``done`` may get a ``range`` of numbers when ``acks`` is given; ``since``, the loop's
        time when the caller read it: ``FastSender.write_batch``)."""

    @property
    def max_payload(self) -> int:
        """The server's limit on one message's headers and payload (bytes)."""


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


async def flushed(client: Client) -> None:
    """Return once the server has taken everything ``client`` sent before this call (a
    subscription just made included). nats-py's ``flush`` writes its PING to the transport at
    once, while a command such as a ``SUB`` waits in the client's pending buffer for its flusher
    task: the PONG can come back before the server has read the ``SUB``, and a request another
    process then sends finds no responders. So what is pending is handed to the transport first
    (the client's ``_flush_pending(force_flush=True)``, which waits for the flusher to have
    written it; a seventh internal, skipped where it is missing), then the PING goes behind it."""
    write_pending = getattr(client, "_flush_pending", None)
    if write_pending is not None:
        await write_pending(force_flush=True)
    await client.flush()


async def subscribe_at_once(client: Client, subject: str, take: Callable[[Msg], None]) -> Any:
    """A subscription to ``subject`` whose messages are handed to ``take`` as the client's read
    loop parses them, in the connection's order with every other reply and message that loop
    hands on so (the fast sender's replies, the requests' futures set): its queue hands each on
    as it is put (``Subscription._pending_queue``, the fast sender's fourth internal). None when
    the client has no such queue (the caller must then not lean on that order)."""
    subscription = await client.subscribe(subject, pending_msgs_limit=0, pending_bytes_limit=0)
    if isinstance(getattr(subscription, "_pending_queue", None), asyncio.Queue):
        subscription._pending_queue = _HandOn(take, subscription)
        return subscription
    await subscription.unsubscribe()
    return None


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

    def request_batches(self, batches: Sequence[Batch], timeout: float, acks: bytes = b"") -> None:
        # (``acks`` asks for a range where the replies allow: each reply as it is here.)
        for requests, name, first, done in batches:
            call = _Call(done, len(requests), 0, 0.0)
            for index, request in enumerate(requests):
                lines = f"{request[1]}\r\n{name}{first + index}" if request[1] else f"{name}{first + index}"
                headers = dict(line.split(": ", 1) for line in lines.split("\r\n"))
                self.send([(request[0], headers, request[2].encode())], timeout, functools.partial(call.take, index))

    def reserve(self) -> str | None:
        return None  # (the client frames every message itself here: ``request_batches``)

    def write_batch(self, commands: str, count: int, done: BatchDone, timeout: float, acks: bytes = b"",
                    since: float | None = None) -> None:
        raise NotImplementedError("the plain sender takes no framed commands (its reserve gives None)")

    @property
    def max_payload(self) -> int:
        return int(self.client.max_payload)

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
        self._reserved = b""
        """The call number the last ``reserve`` took, as its replies' subjects carry it (``write_batch``'s)."""
        self.max_payload = 0
        """The server's limit on a message's headers and payload together (bytes), as the client
        knew it at the last ``reserve`` (the server's ``INFO`` at each connect)."""
        self._waiting: dict[bytes, _Call] = {}
        """The calls waiting for replies, by their number (ASCII): request ``i`` of call ``c`` has
        the reply subject ``<inbox>c-i`` (``i`` counted from the call's ``base``)."""
        self._sweep: asyncio.TimerHandle | None = None
        self._sweep_at = 0.0
        self._connection: object = _NONE
        """The connection taken on (``_shortcut``): nats-py's stream writer, new at each connect
        (nats-py keeps its transport object across reconnects and connects it again)."""
        self._write: Callable[[bytes], Any] = lambda data: None
        """Writes to the connection: its asyncio transport's ``write`` (``_shortcut``)."""
        self._inbox_bytes = b""
        """The inbox's subject prefix (``_INBOX.<id>.``) as it comes back on the wire."""
        self._prefix = b""
        """What a reply to one of this sender's calls begins with on the wire (``MSG <inbox>``)."""
        self._ack_shapes: dict[tuple[int, bytes, bytes, bytes], bytes] = {}
        """``_ack_template``'s templates, by count, subscription id, size and ``acks``."""

    async def start(self) -> None:
        self._inbox = self.client.new_inbox() + "."
        self._inbox_bytes = self._inbox.encode()
        self._prefix = b"MSG " + self._inbox_bytes
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
        reply = f"{self._inbox}{self._calls}-0"
        commands: list[bytes] = []
        last = len(messages) - 1
        for index, (subject, headers, payload) in enumerate(messages):
            lines = "\r\n".join(map(": ".join, headers.items()))
            head = (f"NATS/1.0\r\n{lines}\r\n\r\n" if lines else "NATS/1.0\r\n\r\n").encode()
            size = len(head) + len(payload)
            if size > client._max_payload:
                done(MaxPayloadError())
                return
            line = f"HPUB {subject} {reply} {len(head)} {size}\r\n" if index == last else f"HPUB {subject} {len(head)} {size}\r\n"
            commands += (line.encode(), head, payload, b"\r\n")
        self._write_now(b"".join(commands))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        self._waiting[str(self._calls).encode()] = _Call(lambda replies: done(replies[0]), 1, 0, deadline)
        if self._sweep is None or deadline < self._sweep_at:
            self._arm(loop, deadline)

    def request_batches(self, batches: Sequence[Batch], timeout: float, acks: bytes = b"") -> None:
        """(``acks``: as ``write_batch``'s, for each batch's replies.)"""
        client = self.client
        if not client.is_connected or client._transport is None:
            for requests, _, _, done in batches:
                done([ConnectionClosedError()] * len(requests))
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if len(batches) == 1 and len(batches[0][0]) == 1:  # a chunk a tick: the same, without the loops
            (request,), name, first, done = batches[0]
            lines = request[1]
            payload = request[2]
            number = str(first)
            head = len(name) + len(lines) + len(number) + 16
            size = head + (len(payload) if payload.isascii() else len(payload.encode()))
            if size > client._max_payload:
                done([MaxPayloadError()])
                return
            calls = self._calls = self._calls + 1
            key = str(calls)
            self._waiting[key.encode()] = _Call(done, 1, first, deadline, acks)
            self._write_now(f"HPUB {request[0]} {self._inbox}{key}-{number} {head} {size}\r\n"
                            f"NATS/1.0\r\n{lines}\r\n{name}{number}\r\n\r\n{payload}\r\n".encode())
            if self._sweep is None or deadline < self._sweep_at:
                self._arm(loop, deadline)
            return
        waiting = self._waiting
        inbox = self._inbox
        calls = self._calls
        limit = client._max_payload
        frames: list[str] = []
        refused: list[_Call] | None = None
        for requests, name, first, done in batches:
            calls += 1
            call = _Call(done, len(requests), first, deadline, acks)
            key = str(calls)
            reply = f"{inbox}{key}-"
            waiting[key.encode()] = call
            named = len(name) + 16  # NATS/1.0\r\n<lines>\r\n<name><number>\r\n\r\n
            last = first + len(requests)
            numbers = _NUMBERS[first:last] if last <= len(_NUMBERS) else [str(index) for index in range(first, last)]
            for request, number in zip(requests, numbers):
                lines = request[1]
                payload = request[2]
                head = named + len(lines) + len(number)
                size = head + (len(payload) if payload.isascii() else len(payload.encode()))
                if size > limit:
                    call.replies[int(number) - first] = MaxPayloadError()
                    call.left -= 1
                    continue
                frames.append(f"HPUB {request[0]} {reply}{number} {head} {size}\r\n"
                              f"NATS/1.0\r\n{lines}\r\n{name}{number}\r\n\r\n{payload}\r\n")
            if not call.left:  # every request of it too large
                del waiting[key.encode()]
                refused = [*(refused or ()), call]
        self._calls = calls
        if frames:
            self._write_now("".join(frames).encode())
            if self._sweep is None or deadline < self._sweep_at:
                self._arm(loop, deadline)
        for call in refused or ():
            call.finish()

    def reserve(self) -> str | None:
        """The reply subject prefix (``<inbox><call>-``) of a call whose ``HPUB`` commands the
        caller writes itself, its number taken now (``write_batch``); None when the client is not
        connected. A reserved call never written is nothing: the next reservation takes another."""
        client = self.client
        if not client.is_connected or client._transport is None:
            return None
        self.max_payload = client._max_payload
        self._calls += 1
        number = str(self._calls)
        self._reserved = number.encode()
        return f"{self._inbox}{number}-"

    def write_batch(self, commands: str, count: int, done: BatchDone, timeout: float, acks: bytes = b"",
                    since: float | None = None) -> None:
        """Write ``commands``, ``count`` requests the caller framed itself (the protocol's
        ``HPUB <subject> <reply> <header size> <total size>`` lines, each followed by its header
        block and payload), request ``i`` replying on the last ``reserve``'s prefix followed by
        ``i``; ``done(replies)`` once all ``count`` replies (or errors) are in, as a batch of
        ``request_batches``. The caller checked each message's size against ``max_payload``.

        ``acks``: what a reply that is a plain number begins with (the log's
        ``{"stream":"AHP","seq":``; the number and ``}`` follow). Given it, when the call's
        replies come in one read, in order, each ``acks``, digits and ``}``, the numbers one after
        another, ``done`` gets a ``range`` of those numbers instead of the list of payloads
        (``_took_acks``: what arrived is compared whole with what those replies would be, so
        nothing else is read, nor taken). ``since``: the event loop's time now, when the caller
        read it already (the deadline is ``timeout`` after it)."""
        deadline = (asyncio.get_running_loop().time() if since is None else since) + timeout
        self._waiting[self._reserved] = _Call(done, count, 0, deadline, acks)
        self._write_now(commands.encode())
        if self._sweep is None or deadline < self._sweep_at:
            self._arm(asyncio.get_running_loop(), deadline)

    def _write_now(self, data: bytes) -> None:
        """Hand ``data`` to the connection's transport, behind what the client queued before."""
        client = self.client
        pending = client._pending
        if pending:  # what the client queued before goes first
            data = b"".join((*pending, data))
            client._pending = []
            client._pending_data_size = 0
        transport = client._transport
        if getattr(transport, "_io_writer", transport) is not self._connection:
            self._shortcut(transport)
        self._write(data)

    def _arm(self, loop: asyncio.AbstractEventLoop, deadline: float) -> None:
        if self._sweep is not None:
            self._sweep.cancel()
        self._sweep_at = deadline
        self._sweep = loop.call_at(deadline, self._expire_due)

    def _expire_due(self) -> None:
        """Time the calls past their deadline out (each call's requests not answered yet get
        ``nats.errors.TimeoutError``, and its ``done`` is called); armed again for the earliest
        one left."""
        self._sweep = None
        loop = asyncio.get_running_loop()
        now = loop.time() + 0.001  # (a timer may fire a hair before its time)
        waiting = self._waiting
        due = [key for key, call in waiting.items() if call.deadline <= now]
        for key in due:
            call = waiting.pop(key)
            call.replies = [NatsTimeout() if reply is _NO_REPLY else reply for reply in call.replies]
            call.left = 0
            call.finish()
        if waiting:
            self._arm(loop, min(call.deadline for call in waiting.values()))

    async def _reply_later(self, message: Msg) -> None:
        self._reply(message)

    def _reply(self, message: Msg) -> None:
        key, _, number = message.subject[len(self._inbox):].partition("-")
        call = self._waiting.get(key.encode()) if number.isdigit() else None
        if call is None:
            return  # too late: its call already timed out (or not a reply of ours)
        index = int(number) - call.base
        if not 0 <= index < len(call.replies) or call.replies[index] is not _NO_REPLY:
            return  # not one of its requests, or answered already
        if call.left == 1:
            del self._waiting[key.encode()]
        if message.headers and message.headers.get("Status") == "503":
            call.take(index, NoRespondersError())
        else:
            call.take(index, message.data)

    def _shortcut(self, transport: Any) -> None:
        """Take the connection of ``transport`` (nats-py's) on, once per connect: its commands
        written straight to the asyncio transport under its stream writer (``_io_writer``), and its
        reader's ``feed_data`` wrapped so that replies at the head of what arrives are taken there
        (``_feed``). A transport without a plain ``asyncio`` writer and reader (a WebSocket), or a
        client without the parser's members, keeps the usual ways (its own ``write``; the read loop)."""
        self._connection = getattr(transport, "_io_writer", transport)
        writer = getattr(self._connection, "transport", None)
        self._write = writer.write if isinstance(writer, asyncio.WriteTransport) else transport.write
        reader = getattr(transport, "_io_reader", None)
        parser = getattr(self.client, "_ps", None)
        if (not isinstance(reader, asyncio.StreamReader) or not hasattr(reader, "_buffer")
                or not hasattr(reader, "_waiter") or not hasattr(parser, "buf") or not hasattr(parser, "state")
                or "feed_data" in vars(reader)):
            return
        reader.feed_data = functools.partial(self._feed, reader, parser, reader.feed_data)  # type: ignore[method-assign]

    def _feed(self, reader: asyncio.StreamReader, parser: Any, feed: Callable[[bytes], None], data: bytes) -> None:
        """What arrived on the connection: the complete ``MSG`` frames on this sender's inbox at its
        head taken here while the read loop is idle, the rest fed to the reader (see the module
        docstring). What arrived is cut at its line breaks and its control lines at their spaces,
        each a handful of C calls for the whole read (no Python step per byte, few per reply): when
        it is replies and nothing else, each payload whole as its size says (the usual case: a
        tick's acknowledgements, or a chunk a tick's one), they are taken so; otherwise the
        replies at its head one at a time (``_at_head``)."""
        # (Slices and ``partition``/``split``, not ``startswith``/``find``: bytes' methods that take
        # a start and an end parse their arguments by a format string, dearer than the search.)
        prefix = self._prefix
        if (data[:len(prefix)] != prefix or reader._waiter is None  # type: ignore[attr-defined]
                or reader._buffer or parser.buf or parser.state != _AWAITING_CONTROL_LINE):  # type: ignore[attr-defined]
            feed(data)
            return
        # One reply, all of what arrived (a chunk a tick): ``MSG <subject> <sid> <size>``, then the
        # payload of that size and a line break end what arrived.
        line, _, rest = data.partition(b"\r\n")
        words = line.split(b" ")
        try:
            size = int(words[-1])
        except ValueError:  # not a number: the parser's business
            size = -1
        if len(rest) == size + 2 and len(words) == 4 and rest[-2:] == b"\r\n":
            key, _, number = words[1][len(self._inbox_bytes):].partition(b"-")
            call = self._waiting.get(key)
            if call is not None and number.isdigit():  # (else too late: its call already timed out)
                index = int(number) - call.base
                if 0 <= index < len(call.replies) and call.replies[index] is _NO_REPLY:
                    acks = call.acks
                    # A call of one asking for its reply as a number (``write_batch``): ``<acks>N}``.
                    if (acks and call.left == 1 and len(call.replies) == 1 and rest[:len(acks)] == acks
                            and rest[size - 1:size] == b"}" and (digits := rest[len(acks):size - 1]).isdigit()):
                        seq = int(digits)
                        call.replies = range(seq, seq + 1)  # type: ignore[assignment]
                    else:
                        call.replies[index] = rest[:-2]
                    call.left -= 1
                    if not call.left:
                        del self._waiting[key]
                        try:  # (``call.finish()``, inline: this runs per streamed chunk)
                            call.done(call.replies)
                        except Exception:
                            logger.exception("handling the replies to a batch of requests failed")
            stats = self.client.stats
            stats["in_msgs"] += 1
            stats["in_bytes"] += size
            return
        if len(words) == 4 and self._took_acks(data, words, rest):  # a tick's acknowledgements
            return
        # Replies and nothing else: ``MSG <subject> <sid> <size>`` and its payload, each followed by
        # a line break, so the pieces between line breaks alternate control line and payload, and
        # the control lines' words come four by four; each payload's length is its size (a payload
        # with a line break in it is not whole then, and the read is taken from the head instead).
        parts = data.split(b"\r\n")
        count = len(parts) >> 1
        payloads = parts[1::2]
        words = b" ".join(parts[0:-1:2]).split(b" ")
        lengths = list(map(len, payloads))
        try:
            whole = (not parts[-1] and len(words) == 4 * count and words[0::4].count(b"MSG") == count
                     and list(map(int, words[3::4])) == lengths)
        except ValueError:  # a size that is not a number: not a reply of ours
            whole = False
        if whole and not self._took_in_order(words[1::4], payloads, count):
            # Replies of several calls, out of order, or with another subscription's messages among
            # them: each to its call, when they are all replies.
            subjects = words[1::4]
            inbox = b" " + self._inbox_bytes
            whole = (b" " + b" ".join(subjects)).count(inbox) == count  # (a subject has no space in it)
            if whole:
                self._take_each(subjects, payloads)
        if whole:
            size = sum(lengths)
            at = len(data)
        else:
            subjects, payloads, size, at = self._at_head(data)
            count = len(subjects)
            if not count:
                feed(data)
                return
            self._take_each(subjects, payloads)
        stats = self.client.stats
        stats["in_msgs"] += count
        stats["in_bytes"] += size
        if at < len(data):
            feed(data[at:])

    def _took_acks(self, data: bytes, words: list[bytes], rest: bytes) -> bool:
        """Whether ``data`` (what arrived; ``words``, its first control line's words, ``rest``, what
        follows that line) was every reply of one call that asked for them as numbers
        (``write_batch``'s ``acks``), from its first, in order, each ``<acks><number>}``, the numbers
        one after the other; then the call was handed the ``range`` of them. Not parsed reply by
        reply: the first gives the call, the subscription's id, the size and the first number, and
        what arrived is compared whole with the text those replies would make (a template kept per
        count, id and size, the call's number put in by a one-byte ``replace``, the numbers by one
        ``%``: C's ``memchr`` and ``memcmp``, no search of what arrived). False, and nothing taken,
        otherwise (the general way then reads it)."""
        key, _, number = words[1][len(self._inbox_bytes):].partition(b"-")
        call = self._waiting.get(key)
        if call is None or not call.acks or number != b"0" or call.left != len(call.replies):
            return False
        acks = call.acks
        size = words[3]
        try:
            first = int(rest[len(acks):int(size) - 1])
        except ValueError:
            return False
        count = call.left
        shape = (count, words[2], size, acks)
        template = self._ack_shapes.get(shape)
        if template is None:
            template = self._ack_template(shape)
        seqs = range(first, first + count)
        if data != template.replace(b"\x01", key) % tuple(seqs):  # (a byte 1 elsewhere: not equal)
            return False
        del self._waiting[key]
        call.replies = seqs  # type: ignore[assignment]  # (``write_batch``'s word: a range)
        call.left = 0
        stats = self.client.stats
        stats["in_msgs"] += count
        stats["in_bytes"] += count * int(size)
        call.finish()
        return True

    def _ack_template(self, shape: tuple[int, bytes, bytes, bytes]) -> bytes:
        """What ``count`` replies numbered as acknowledgements (``_took_acks``) arrive as, the call's
        number a byte 1 and each reply's number ``%d``: ``count``, the subscription's id, the
        replies' size and ``acks`` as ``shape`` gives them (remembered)."""
        count, sid, size, acks = shape
        head = (b"MSG " + self._inbox_bytes).replace(b"%", b"%%") + b"\x01-"
        tail = (b" " + sid + b" " + size + b"\r\n" + acks).replace(b"%", b"%%") + b"%d}\r\n"
        template = b"".join(head + number + tail for number in _BYTE_NUMBERS[:count])
        if len(self._ack_shapes) > 4096:
            self._ack_shapes.clear()
        self._ack_shapes[shape] = template
        return template

    def _took_in_order(self, subjects: list[bytes], payloads: list[bytes], count: int) -> bool:
        """Whether the replies (``subjects[i]``, the first on this sender's inbox, with ``payloads[i]``)
        were of one call, one after the other, and were put in their places at once, no Python
        step per reply (a tick of one session); False, and nothing taken, otherwise."""
        waiting = self._waiting
        inbox = self._inbox_bytes
        key, _, number = subjects[0][len(inbox):].partition(b"-")
        call = waiting.get(key)
        if call is None or count > call.left or not number.isdigit():
            return False
        first = int(number)
        index = first - call.base
        if count == 1:  # (its subject begins with the inbox: what arrived did)
            if not 0 <= index < len(call.replies) or call.replies[index] is not _NO_REPLY:
                return False
        else:
            reply = inbox + key + b"-"
            if not (0 <= index <= len(call.replies) - count and first + count <= len(_BYTE_NUMBERS)
                    and b" ".join(subjects) == reply + (b" " + reply).join(_BYTE_NUMBERS[first:first + count])):
                return False
        call.replies[index:index + count] = payloads
        call.left -= count
        if not call.left:
            del waiting[key]
            call.finish()
        return True

    def _take_each(self, subjects: list[bytes], payloads: list[bytes]) -> None:
        """Each reply (``subjects[i]``, on this sender's inbox, with ``payloads[i]``) to its call, one
        by one (replies of several calls, or out of order)."""
        waiting = self._waiting
        skip = len(self._inbox_bytes)
        for subject, payload in zip(subjects, payloads):
            key, _, number = subject[skip:].partition(b"-")
            call = waiting.get(key)
            if call is None or not number.isdigit():
                continue  # too late: its call already timed out (or not a reply of ours)
            index = int(number) - call.base
            if not 0 <= index < len(call.replies) or call.replies[index] is not _NO_REPLY:
                continue  # not one of its requests, or answered already
            call.replies[index] = payload
            call.left -= 1
            if not call.left:  # (``_Call.finish``: it logs what its ``done`` raises)
                del waiting[key]
                call.finish()

    def _at_head(self, data: bytes) -> tuple[list[bytes], list[bytes], int, int]:
        """The complete replies at the head of ``data``, one after the other: their subjects, their
        payloads, the payloads' size, and where they end (``MSG <subject> <sid> [<reply>] <size>``
        and the payload, each followed by a line break; the first line that is not a reply on this
        sender's inbox, or one whose payload is not all here yet, ends them: the parser's business)."""
        prefix = self._prefix
        subjects: list[bytes] = []
        payloads: list[bytes] = []
        size = at = 0
        while data.startswith(prefix, at):
            line_end = data.find(b"\r\n", at)
            if line_end < 0:
                break
            words = data[at:line_end].split(b" ")
            if not 4 <= len(words) <= 5 or not words[-1].isdigit():
                break
            start = line_end + 2
            end = start + int(words[-1])
            if data[end:end + 2] != b"\r\n":
                break  # not all here yet (or not a frame)
            subjects.append(words[1])
            payloads.append(data[start:end])
            size += end - start
            at = end + 2
        return subjects, payloads, size, at


class _Call:
    """One call's requests waiting for their replies: request ``i``'s reply (or error) goes to
    ``replies[i]``, and ``done(replies)`` is called once the last is in (``finish``). Its requests
    are numbered from ``base`` on (their reply subjects)."""

    __slots__ = ("done", "replies", "left", "base", "deadline", "acks")

    def __init__(self, done: BatchDone, count: int, base: int, deadline: float, acks: bytes = b"") -> None:
        self.done = done
        self.replies: list[bytes | BaseException] = [_NO_REPLY] * count
        self.left = count
        self.base = base
        self.deadline = deadline
        self.acks = acks
        """``write_batch``'s ``acks``: replies that are plain numbers may be handed over as a range."""

    def take(self, index: int, reply: bytes | BaseException) -> None:
        self.replies[index] = reply
        self.left -= 1
        if not self.left:
            self.finish()

    def finish(self) -> None:
        """Hand the replies over (inside the transport's read callback, or a timer's: nothing may
        escape into it)."""
        try:
            self.done(self.replies)
        except Exception:
            logger.exception("handling the replies to a batch of requests failed")


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
