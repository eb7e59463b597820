"""The ordered log on NATS JetStream: one stream, every append fenced, a tick in one round trip.

**One stream** (``AHP`` by default) holds every record of the host, whatever its channel, on the
subjects of ``host.cluster.subjects`` (``<prefix>.<group>.<channel>``). The stream's sequence *is*
``serverSeq``: the server gives each message the next number of the one host-wide order, so no
coordinator of ours is needed. A message's payload is the envelope's JSON without ``serverSeq``
(its number is not known until the server has given it; readers stamp it from the message's
sequence); its headers say what it is (``Ahp-Kind``: ``created``, ``removed``, or ``owner`` for a
takeover marker; none for an action, the common record, which streams written before named
``action``: read the same) and, for an action, the clock reading its reducer used (``Ahp-Now``). ``created``, ``removed`` and markers take stream sequences too; no client sees
those numbers as a ``serverSeq``, so what a client sees only grows, with the gaps any client
subscribed to some channels sees anyway.

**Fencing.** A process appends to an owner group (a session and its chats) only after
:meth:`JetStreamLog.claim`: the group's lease (``host.cluster.leases``), then the group's last
sequence read, then an owner marker (on the group's marker subject, ``<prefix>.<group>.~``)
published fenced on it (``Nats-Expected-Last-Subject-Sequence`` with
``Nats-Expected-Last-Subject-Sequence-Subject``, the group's wildcard: the marker lands after
everything the group held). Every message it then sends for the group carries the same two
headers naming *its marker*: the last message on the group's marker subject must still be the
one this process wrote. Every process that writes to a group writes a marker first, so the server
refuses the message once another process claimed the group: a process that lost the group can
never write again, even if it was paused past its lease and never noticed. A refused message
fails its append with ``NotOwner`` (the later ones of its batch are refused by the same fence) and
the group is dropped; a message refused for another reason (its size) fails alone, the others of
its batch resolve as stored, and the group is dropped too.
(The marker must stay in the stream while its holder writes: with ``max_age`` a group whose
marker aged out is refused once and claimed again by its next append.)

**A tick in one round trip.** ``append`` queues the envelope and returns a future; at the end of
the event-loop tick (``call_soon``) each group's queue leaves: every message a fenced publish of
its own, all of them at once, each acknowledged with its own sequence (the fence does not depend
on the numbers of the messages before it, so none waits for another's acknowledgement). The
server stores the messages of one connection in the order they came. Not an atomic batch (server
2.12+): nats-server 2.15.1 stages an atomic batch of a stream on file storage in a file store of
its own, which it creates, writes through and deletes per batch, about 12 ms on this machine's
disk (30-70 ms when it is busy), while the messages of the connection behind it wait: every
turn's start and end (four records of one session in one tick) held every session of the process
up that long (``benchmarks/capacity.py --workers``). A plain publish is written to the operating
system before it is acknowledged (about 0.4 ms): it survives a kill -9 of a host process and of
the NATS server; the server writes its files through to disk every two minutes (its default
``sync_interval``), so a power cut or a crash of the machine can lose what came since, like the
SQLite journal's ``synchronous=NORMAL``. A tick's records of one group are then not stored all or
nothing: a process cut off or fenced between two of them has the first stored and the rest
refused, as between two ticks.
Groups go out side by side: every message of the tick, of every group that queued, leaves in one
write to the connection (``host.cluster._wire``'s ``request_batches``: one round trip for the tick,
not one per group or per chunk, and one write, not one per message); within a
group one batch is in flight at a time, so that its messages keep the order of the appends across
a refusal or a settling. What a group appends meanwhile waits and leaves as the next batch (group
commit). A caller that has a whole tick at hand hands it over in one call and it leaves at once
(``queue_tick``: the port's ``ClusterLog`` does), and a tick visits only the groups that queued
something. A message leaves through ``host.cluster._wire`` (the one place that leans on the NATS
client's internals, with a plain twin on its public API) and a batch's acknowledgements are
handled by one callback once all of them came, without a task; only a refusal or a lost
acknowledgement is worked out in one. What a record costs is kept to a few lines of Python, as
it is paid per streamed chunk: a queued record is a plain tuple (its subject, its header lines
but the fence and the name, its payload, ...), whose first three items the wire takes as they
are; its payload is the envelope's JSON cut at its ``serverSeq`` (the store's envelopes end with
``"serverSeq": 0``: no copy of the envelope), its subject chosen without a call (``run_key``'s
test for the text appends written out), its group's state looked up once for a run of its
records; the wire writes each message's whole ``HPUB`` command with one f-string, its last header
line the batch's fence and name (built once per batch) with the record's index; a batch's
acknowledgements are read by hand when each is the server's plain ``{"stream":..,"seq":N}`` (a
one-pass tick's by the fast wire itself, which hands over their numbers as a ``range`` when they
are one after another: ``_wire``'s ``write_batch`` with ``acks``; otherwise joined,
cut between them and checked as digits at once: ``_stored_seqs``), else in one ``orjson`` pass (one
with an error takes the longer way), and each stored record is stamped and its result put straight into its
caller's tick (:class:`Counted`: no object, future or call per record; a batch that is one
tick's records counted once). A tick of a streamed turn (actions of one group, nothing of it in flight: ``send_told``) takes a
shorter way still: one loop per record builds its payload, subject and whole ``HPUB`` command and
the tick is written at once (``_wire``'s ``write_batch``), and one loop where the acknowledgements
are read stamps each envelope and tells its caller's outcome its frame (``Told``), with no queued
tuple and no loop in the wire or in ``ClusterLog``; a refusal or a lost acknowledgement turns the
tick into ``queue_tick``'s queued records and is worked out as theirs. There is one message per
envelope and one acknowledgement each,
so that each envelope's ``serverSeq`` is the stream's own sequence for it (several envelopes in
one message would share one). An envelope is serialised
once: the payload is its JSON without ``serverSeq``, and the stamped JSON the store gets back is
that text with ``serverSeq`` added as its last key (``ahp.jsonrpc.stamped_action_frame``), the
same text a reader of the stream rebuilds (the frame a tick's record gets is built inline in the
same way, with ``ahp.jsonrpc.ACTION_FRAME_HEAD``).

**Cut off.** Appending while the client is not connected fails at once with ``LogUnavailable``
(nothing is buffered for later: a process that cannot reach the log stops writing rather than
diverge). A message already sent whose acknowledgement does not come (``timeout``, a broken
connection, a restarting server) may or may not be stored: it is *settled* once the client is
connected again, while the group's lease lasts, by the group's messages after the last one this
process knew (each message names its batch and place in it, ``Nats-Msg-Id: <batch>.<index>``):
those found resolve with their numbers, the first not found and the ones after it are sent again,
fenced as before (``NotOwner`` if another process claimed the group meanwhile), with the same
names. The name is the message's id for the server's deduplication too: a first sending still on
its way when the stream was read (a message of the broken connection taken in late) is dropped
as a copy of the one sent again (or the other way round), within the stream's duplicate window
(2 minutes, ``DUPLICATE_WINDOW``; a message is sent again only within it), and the copy is
answered with the first's sequence (``"duplicate": true``). Past the lease the
group is dropped (only a new ``claim``, which reads the group's last sequence again, lets the
process write to it again) and its messages are not sent again, but they are read back the same
way once connected: those found resolve with their numbers (they are in the log every other
process follows: told refused, their process would undo them), the others fail.

**Reading.** :meth:`read` gives the records after a sequence, in order (a consumer from
``since + 1``, up to the last sequence when the read began), optionally of some channels only:
AHP's ``reconnect`` with ``lastSeenServerSeq``. Every reading goes through
``host.cluster.consumer.InOrder`` (in order, no gap, none twice, as nats-py's ordered consumer,
without its flow-control poll four times a second for as long as the follower lives). :meth:`follow` delivers every record from a
sequence on as it is stored, to a callback: how each process learns what the others appended;
given filter subjects, only those the server matches (a process leaves out the streamed text of
the sessions it does not serve: ``host.cluster.subjects``). :meth:`read_group` gives one group's
records between two sequences (the server sends only that group's).

**Snapshots** are objects of a JetStream object store (chunked by it, so a state of any size fits
under the 1 MB message limit), one per owner group: ``{"seq", "channels"}``, the group's channels
as of that sequence. Recovery reads the snapshots, then the records after the oldest of them,
skipping for each group what its snapshot already holds.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import logging
import operator
import os
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast

import nats
import orjson
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import ConnectionClosedError, NoRespondersError, OutboundBufferLimitError
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext, api
from nats.js.errors import APIError, NotFoundError
from nats.js.object_store import ObjectStore

from ahp.jsonrpc import ACTION_FRAME_HEAD, encode, stamped_action_frame
from ahp.state.appends import RUN_ACTION_TYPES, TEXT_APPENDS, run_key
from host.cluster._wire import REQUEST_NUMBERS, Batch, Sender, flushed, sender, subscribe_at_once
from host.cluster.consumer import HEARTBEAT, InOrder
from host.cluster.leases import DEFAULT_TTL, Lease, Leases
from host.cluster.subjects import MARKER_TOKEN, Subjects, channel_of, token, untoken
from host.state.log import LogError, LogUnavailable, NotOwner

__all__ = ["BATCH_LIMIT", "Counted", "Entry", "JetStreamLog", "Outcome", "Record", "Stamped", "Told"]

logger = logging.getLogger(__name__)

BATCH_LIMIT = 500
"""Messages per batch (sent at once, acknowledged each); a group's longer queue leaves as several
batches, one after another."""

WRONG_LAST_SEQUENCE = 10071
"""The server's error code for a fenced publish whose expected last sequence is not the last."""

DUPLICATE_WINDOW = 120.0
"""The stream's duplicate window, seconds (the server's default; ``max_age`` when shorter, as the
server would): a message sent again carries its first sending's ``Nats-Msg-Id``, and the server
drops the copy within this window, answering with the first's sequence (``duplicate``). A message
is sent again only within it (``_settle``)."""

_UNANSWERED = (NatsTimeout, ConnectionClosedError, NoRespondersError, OutboundBufferLimitError, OSError)
"""What a send may fail with that leaves open whether the server stored the batch: settled (``_settle``)."""

RENEW_STEP = 0.05
"""Seconds between two steps of the lease renewer (``JetStreamLog._renew_forever``): each group's
lease is renewed at one step of every ``ttl / 3``, the groups spread over the steps."""

KIND = "Ahp-Kind"
NOW = "Ahp-Now"
MSG_ID = "Nats-Msg-Id"
EXPECTED_LAST = "Nats-Expected-Last-Subject-Sequence"
EXPECTED_SUBJECT = "Nats-Expected-Last-Subject-Sequence-Subject"

Kind = Literal["action", "created", "removed", "owner"]

_KIND_LINES = {"created": f"{KIND}: created", "removed": f"{KIND}: removed"}
"""The header lines of a ``created`` and a ``removed`` record (an action's has its clock too)."""
_SEQ = operator.itemgetter("seq")
"""An acknowledgement's sequence."""
ACTION_LINES = f"{NOW}: "
"""An action's header lines, less its clock reading (no ``Ahp-Kind``: a record without one is an
action; every header byte is parsed, stored and read back by the server for every record)."""
_ZERO_SEQ_END = ',"serverSeq":0}'
"""How an envelope's JSON ends when ``serverSeq`` is its last key, 0 (not numbered yet): only a
top-level last member can end the text so (a quote inside a string is escaped)."""
_ZERO_SEQ_CUT = len(_ZERO_SEQ_END)
_MOST_TOLD = min(BATCH_LIMIT, len(REQUEST_NUMBERS))
"""The most records ``send_told`` sends in one batch."""
_DECIMAL_COUNT = 4096
_DECIMALS = tuple(map(str, range(_DECIMAL_COUNT)))
"""Numbers as text, looked up for a command's sizes (an int's formatting costs about 700
instructions, more than the rest of the command's text)."""
Stamped = tuple[str, str]
"""An appended envelope's JSON with its ``serverSeq``, and the ``action`` frame carrying it."""


class Outcome(Protocol):
    """Where a queued record's result goes (``JetStreamLog.queue``): an ``asyncio`` future, or a
    caller's own object that takes it at once, inside the acknowledgement's callback (no loop turn
    in between: it must not raise but ``asyncio.InvalidStateError`` when it is done already, and
    must not wait)."""

    def done(self) -> bool: ...

    def set_result(self, result: Any, /) -> None: ...

    def set_exception(self, exception: BaseException, /) -> None: ...


class Counted(Protocol):
    """One outcome for several records (a caller's tick, :meth:`JetStreamLog.queue_tick`): the
    core puts record ``slot``'s result in ``results[slot]`` and counts ``left`` down, with no call
    per record, and calls ``counted()`` once ``left`` reached 0 (at once, inside the
    acknowledgement's callback: it must not wait). A result is what an :class:`Outcome` would be
    given, but an action's is its frame alone (not the stamped pair), and an error is the
    exception object itself."""

    results: list[Any]
    left: int

    def counted(self) -> None: ...


class Told(Counted, Protocol):
    """A caller's tick that :meth:`JetStreamLog.send_told` may tell record by record: once every
    record of it is stored, the core calls ``telling()``, then tells each entry's outcome (its last
    item, an :class:`Outcome`) its frame, then ``told(last)`` (the tick's highest sequence), all in
    the acknowledgement's callback; ``results`` and ``left`` are not used then. Otherwise (a
    refusal, a lost acknowledgement) it is counted as a :class:`Counted`, its outcomes not told by
    the core."""

    def telling(self) -> None: ...

    def told(self, last: int) -> None: ...


Entry = tuple[str, str, int, "dict[str, Any] | None", Any]
"""A record handed to :meth:`JetStreamLog.queue_tick`: ``(kind, channel, now, body, _)`` (``kind``
"action", "created" or "removed"; the last item is not read: the caller's own, as
``ClusterLog``'s tick keeps its records)."""

@dataclass(frozen=True, slots=True)
class Record:
    """One message of the log, read back."""

    seq: int
    """Its stream sequence (an action's ``serverSeq``)."""
    kind: Kind
    channel: str
    now: int | None
    body: dict[str, Any] | None
    """An action's envelope (``serverSeq`` stamped), a created channel's ``{"kind", "state"}``,
    an owner marker's ``{"holder"}`` (who claimed the group); None for ``removed``."""


_Pending = tuple[str, str, str, "dict[str, Any] | None", "Outcome | Counted", int, str]
"""A record queued to leave: ``(subject, lines, text, envelope, outcome, slot, stem)``. ``lines``: its
header lines but the fence and the name (``Ahp-Kind``, and an action's ``Ahp-Now``, the clock
reading its reducer used); ``text``: the payload, an action's envelope serialised without
``serverSeq``, a created channel's ``{"kind", "state"}``, nothing for ``removed``; ``envelope``:
an action's (stamped once stored), else None; ``outcome``: where its result goes, an
:class:`Outcome` (``slot`` -1) or a :class:`Counted` (its ``slot``); ``stem``: an action's
``text`` less its closing brace (its stamped frame is built around it: no slice per record then),
else empty. A plain tuple: one is made
per record, and its first three items are the wire's request as they are (``_wire.Request``)."""


@dataclass(slots=True)
class _Group:
    lease: Lease
    last: int
    """The last sequence of the group this process knows (its newest message acknowledged)."""
    queue: list[_Pending]
    fence: str
    """The header lines that fence every message of the group on this process's owner marker."""
    sending: bool = False
    slot: int = 0
    """Which step of the renewal interval renews its lease (``_renew_forever``)."""
    renewing: bool = False
    """Whether a renewal of its lease is under way."""


@dataclass(slots=True, eq=False)
class _Flight:
    """A batch of one group sent whose replies told of a refusal or were lost (made then only):
    worked out by ``_after_failure``."""

    group: str
    state: _Group
    batch: list[_Pending]
    batch_id: str
    base: int
    """The group's last sequence this process knew when the batch left (a lost reply's message
    is looked for after it)."""
    left_at: float
    """When the batch first left (the loop's clock): it is sent again only within the stream's
    duplicate window from then."""
    replies: list[bytes | BaseException]


class JetStreamLog:
    """The log of one process (open it with :meth:`connect`; see the module docstring)."""

    def __init__(self, client: Client, js: JetStreamContext, leases: Leases, snapshots: ObjectStore, *,
                 stream: str, subjects: Subjects, timeout: float, fast_wire: bool = True,
                 duplicate_window: float = DUPLICATE_WINDOW) -> None:
        self.client = client
        self.js = js
        self.leases = leases
        self.snapshots = snapshots
        self.stream = stream
        self.subjects = subjects
        self.timeout = timeout
        self.duplicate_window = duplicate_window
        """The stream's duplicate window (seconds): a copy of a message sent again within it is dropped."""
        self.holder = leases.holder
        self._groups: dict[str, _Group] = {}
        self.owned: Mapping[str, object] = self._groups
        self.groups_changed = 0
        """Counts the changes of the groups this process owns (claimed, released, lost, closed):
        ``ClusterLog.owners_changed`` adds it to its own count."""
        """The groups this process owns, as ``owns`` answers (``group in log.owned``: no call, for
        a caller that asks for every record)."""
        self._subjects: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {}
        """Per channel, ``(subject, group)`` of its records and of its streamed text (``_subjects_of``)."""
        self._ready: dict[str, _Group] = {}
        """The groups that queued records since the last send (in the order they first did)."""
        self._scheduled = False
        self._renewer: asyncio.Task[None] | None = None
        self._renew_wake: asyncio.Future[bool] | None = None
        """What the renewer sleeps on: True when a claim wakes it, False at its next due step."""
        self._claims_made = 0
        """Groups claimed so far: the next one's renewal step (``_Group.slot``), round robin."""
        self._batch_prefix = f"{base64.urlsafe_b64encode(os.urandom(8)).decode().rstrip('=')}-"
        """Each batch's name is this and a count (``Nats-Msg-Id: <prefix><count>.<index>``): 64
        random bits, unique to this process within the stream's duplicate window."""
        self._batches = 0
        self._wire: Sender = sender(client, fast_wire)
        self._get_subject = f"$JS.API.STREAM.MSG.GET.{stream}"
        """Where ``next_on`` asks (``connect`` makes the JetStream context with the API's default prefix)."""
        self._ack_head = ack_head(stream)
        """What an acknowledgement of a message stored in the stream begins with (``_stored_seqs``)."""
        """How a batch leaves and its acknowledgement comes back (``host.cluster._wire``)."""
        self.tells = False
        """Whether the stream republishes each record on ``subjects.coarse`` as it stores it
        (``told_config``) and the server is a single one: ``watch_told`` may then be trusted
        (``connect`` sets it)."""
        self.on_lost: Callable[[str], None] = lambda group: None
        """Called with a group this process stopped owning (lease lost, fenced, or cut off)."""

    @classmethod
    async def connect(cls, url: str, *, holder: str | None = None, stream: str = "AHP", prefix: str = "ahp.log",
                      lease_ttl: float = DEFAULT_TTL, timeout: float = 5.0, max_age: float = 0,
                      fast_wire: bool = True, **options: Any) -> JetStreamLog:
        """Connect to the NATS server at ``url`` and make sure the stream and buckets exist.
        ``max_age`` (seconds, 0 for none) bounds how long records are kept: the replay window.
        ``fast_wire=False`` sends batches through nats-py's public API only (``host.cluster._wire``).
        ``options`` go to ``nats.connect`` (credentials: ``user_credentials``, ``token``, ...)."""
        try:
            # Pings every 2 s, two unanswered: a silent partition is noticed within about 6 s,
            # the lease's time (a closed connection at once).
            options.setdefault("error_cb", _said)
            client = await nats.connect(url, name=holder or "agent-host", max_reconnect_attempts=-1,
                                        reconnect_time_wait=0.25, connect_timeout=timeout, ping_interval=2,
                                        max_outstanding_pings=2, **options)
        except (OSError, NatsTimeout, nats.errors.NoServersError) as error:
            raise LogUnavailable(f"cannot reach NATS at {url}: {error}; is the server running?") from error
        js = client.jetstream(timeout=timeout)
        subjects = Subjects(prefix)
        # allow_atomic: streams made before kept it (atomic batches are no longer sent), and a
        # stream's configuration must match to be opened again.
        # duplicate_window: the server's default, written out (streams made before have it).
        config = api.StreamConfig(name=stream, subjects=[subjects.all], storage=api.StorageType.FILE,
                                  allow_atomic=True, allow_direct=True, max_age=max_age or None,
                                  duplicate_window=min(DUPLICATE_WINDOW, max_age) if max_age else DUPLICATE_WINDOW,
                                  republish=told_config(subjects))
        try:
            info = await _opened(js, config)
        except APIError as error:
            raise LogError(f"cannot create the JetStream stream {stream}: {error}") from error
        bucket = await js.create_key_value(bucket=f"{stream}_LEASES", history=1)
        snapshots = await js.create_object_store(bucket=f"{stream}_SNAPSHOTS")
        leases = Leases(bucket, holder or f"{uuid.uuid4().hex[:12]}", lease_ttl, stream=(js, f"{stream}_LEASES"))
        log = cls(client, js, leases, snapshots, stream=stream, subjects=subjects, timeout=timeout,
                  fast_wire=fast_wire, duplicate_window=info.config.duplicate_window or 0)
        await log._wire.start()
        log.tells = info.config.republish == told_config(subjects) and not _clustered(client)
        log._renewer = asyncio.get_running_loop().create_task(log._renew_forever())
        return log

    # -- ownership ---------------------------------------------------------------------------------

    def owns(self, group: str) -> bool:
        return group in self._groups

    def known_last(self, group: str) -> int:
        """The last sequence of ``group`` acknowledged to this process (a group it owns)."""
        return self._groups[group].last

    async def claim(self, group: str) -> int:
        """Own ``group``: its lease, then a fenced marker, so that whoever held it before cannot
        write to it again; returns the marker's sequence. Raises ``NotOwner`` while another
        process's lease is in force."""
        self._check_connected()
        taken = await self.leases.acquire(group)
        if isinstance(taken, str):
            raise NotOwner(group, taken)
        marker = self.subjects.marker(group)
        for _ in range(20):  # a previous holder's last batch may land between our read and our marker
            last = await self.group_last(group)
            try:
                ack = await self.js.publish(marker, self.holder.encode(),
                                            headers={KIND: "owner", **self._fence(group, last)})
            except APIError as error:
                if error.err_code == WRONG_LAST_SEQUENCE:
                    continue
                raise LogError(f"cannot claim {group}: {error}") from error
            self._claims_made += 1
            self._groups[group] = _Group(taken, ack.seq, [], self._marker_fence(group, ack.seq), slot=self._claims_made)
            self.groups_changed += 1
            self._nudge()
            return ack.seq
        raise NotOwner(group, None)

    async def release(self, group: str) -> None:
        """Stop owning ``group`` and give its lease up (after its queued appends leave)."""
        state = self._groups.get(group)
        if state is None:
            return
        while state.queue or state.sending:
            await asyncio.sleep(0.01)
        self._groups.pop(group, None)
        self.groups_changed += 1
        await self.leases.release(state.lease)

    async def group_last(self, group: str) -> int:
        """The sequence of the last message of ``group`` in the stream (0 for none)."""
        try:
            message = await self.js.get_last_msg(self.stream, self.subjects.group_filter(group))
        except NotFoundError:
            return 0
        return message.seq or 0

    def _fence(self, group: str, last: int) -> dict[str, str]:
        return {EXPECTED_LAST: str(last), EXPECTED_SUBJECT: self.subjects.group_filter(group)}

    def _marker_fence(self, group: str, marker: int) -> str:
        """The header lines that fence a message of ``group`` on this process's owner marker at
        ``marker``: the last message on the group's marker subject must still be it."""
        return f"{EXPECTED_LAST}: {marker}\r\n{EXPECTED_SUBJECT}: {self.subjects.marker(group)}"

    def _drop(self, group: str, error: LogError) -> None:
        state = self._groups.pop(group, None)
        if state is None:
            return
        self.groups_changed += 1
        for pending in state.queue:
            _tell(pending, error)
        state.queue.clear()
        self.on_lost(group)

    async def _renew_forever(self) -> None:
        """Renew every group's lease once every ``ttl / 3``, spread over that interval: it is cut
        into steps of about ``RENEW_STEP`` seconds and each group is renewed at a step of its own
        (``_Group.slot``, round robin in the order they were claimed), so a few renewals leave
        together, never all of them. (All at once, every renewal's request, answer and watch event
        held the loop and the NATS server up together, for milliseconds per hundred groups, and
        every chunk streamed meanwhile waited: ``docs/cluster.md``, the latency tail.) It sleeps
        until the next step at which some group is due, not step by step (a process running one
        session woke 20 times a second for one renewal every ``ttl / 3``: about 1.8 million
        instructions a second, idle, under callgrind), and a claim wakes it to count the new
        group in (``_nudge``). A group whose renewal is still under way at its next step is
        skipped then. Cancelling this task cancels the renewals under way too (a test's process
        that stops renewing)."""
        interval = self.leases.ttl / 3
        steps = max(1, round(interval / RENEW_STEP))
        length = interval / steps
        loop = asyncio.get_running_loop()
        under_way: set[asyncio.Task[None]] = set()
        start = loop.time()
        passed = 0
        """Steps run (or skipped, none due) so far: step ``n`` is due at ``start + n * length``."""
        try:
            while True:
                due = {state.slot % steps for state in self._groups.values()}
                ahead = next((k for k in range(1, steps + 1) if (passed + k) % steps in due), steps)
                wake: asyncio.Future[bool] = loop.create_future()
                self._renew_wake = wake
                timer = loop.call_at(start + (passed + ahead) * length, _settle, wake, False)
                try:
                    nudged = await wake
                finally:
                    timer.cancel()
                    self._renew_wake = None
                if nudged:  # a group was claimed: count it in (the steps passed meanwhile had none due)
                    passed = max(passed, min(passed + ahead - 1, int((loop.time() - start) / length)))
                    continue
                passed += ahead
                step = passed % steps
                for group, state in list(self._groups.items()):
                    if state.slot % steps == step and not state.renewing:
                        state.renewing = True
                        task = loop.create_task(self._renew(group, state))
                        under_way.add(task)
                        task.add_done_callback(under_way.discard)
        finally:
            for task in under_way:
                task.cancel()

    def _nudge(self) -> None:
        """Wake the renewer to count a group just claimed in (``_renew_forever``)."""
        if self._renew_wake is not None:
            _settle(self._renew_wake, True)

    async def _renew(self, group: str, state: _Group) -> None:
        """Renew ``group``'s lease, or drop the group (``on_lost``) once it is lost: another
        revision is in the bucket, or no renewal got through and the lease is within a third of
        its time of lapsing. A renewal not answered (its request or answer lost with a broken
        connection) is tried again until then; each is waited for only until then, and none is
        tried while the client is not connected (a request then waits for its whole timeout): a
        process cut off drops its groups before another may take them."""
        try:
            await self._renew_or_drop(group, state)
        finally:
            state.renewing = False

    async def _renew_or_drop(self, group: str, state: _Group) -> None:
        margin = self.leases.ttl / 3
        while self._groups.get(group) is state:
            if self.client.is_connected:
                renewal = asyncio.ensure_future(self.leases.renew(state.lease))
                await asyncio.wait({renewal}, timeout=max(0.05, state.lease.until - margin - self.leases.now()))
                if not renewal.done():  # answered too late to be of use: its answer is left to come (and be dropped)
                    renewal.add_done_callback(lambda done: done.cancelled() or done.exception())
                elif not renewal.cancelled() and renewal.exception() is None:
                    if renewal.result():
                        return
                    break  # lost: another revision is in the bucket
            if state.lease.until <= self.leases.now() + margin:
                break
            # Not answered (a connection broken on the way, cut off): asked again while the lease lasts.
            await asyncio.sleep(RENEW_STEP)
        if self._groups.get(group) is state:
            holder = await self._holder_or_none(group) if self.client.is_connected else None
            if self._groups.get(group) is state:  # (not claimed again meanwhile)
                self._drop(group, NotOwner(group, holder))

    async def _holder_or_none(self, group: str) -> str | None:
        try:
            return await self.leases.holder_of(group)
        except Exception:  # unreachable: the holder is unknown
            return None

    # -- appending ---------------------------------------------------------------------------------

    def append(self, channel: str, now: int, envelope: dict[str, Any]) -> asyncio.Future[Stamped]:
        """Queue ``envelope`` (an action of ``channel``, reduced at clock ``now``) for this tick's
        batch; the future gives its stamped JSON and action frame once stored, or fails with
        ``NotOwner`` / ``LogUnavailable``. ``envelope["serverSeq"]`` is set then.

        The envelope is serialised once, without ``serverSeq`` (the message's payload); its JSON
        with ``serverSeq`` is that text with the number added as its last key
        (``ahp.jsonrpc.stamped_action_frame``), as a reader of the stream rebuilds it."""
        future: asyncio.Future[Stamped] = asyncio.get_running_loop().create_future()
        self.queue(future, "action", channel, now, envelope)
        return future

    def created(self, channel: str, kind: str, state: dict[str, Any]) -> asyncio.Future[int]:
        """Queue a record of ``channel`` appearing with ``state``; the future gives its sequence."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.queue(future, "created", channel, 0, {"kind": kind, "state": state})
        return future

    def removed(self, channel: str) -> asyncio.Future[int]:
        """Queue a record of ``channel`` going away; the future gives its sequence."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.queue(future, "removed", channel, 0, None)
        return future

    def queue(self, outcome: Outcome, kind: Literal["action", "created", "removed"], channel: str, now: int,
              body: dict[str, Any] | None) -> None:
        """What ``append`` (``kind`` "action", ``body`` the envelope), ``created`` (``body``
        ``{"kind", "state"}``) and ``removed`` do, the result handed to ``outcome`` instead of a
        future of their own; sent at the end of the tick. An action's streamed text goes on its
        channel's streamed subject (``host.cluster.subjects``)."""
        self.queue_tick(((kind, channel, now, body, None),), (outcome,), send=False)

    def queue_tick(self, entries: Sequence[Entry], outcomes: Counted | Sequence[Outcome], send: bool = True) -> None:
        """``queue`` each of ``entries`` (``(kind, channel, now, body, _)``), in order, each
        result handed to its outcome in ``outcomes`` (a tuple or a list), or, when ``outcomes`` is one
        :class:`Counted` (a caller's tick), counted there (entry ``i`` in its slot ``i``); then,
        when ``send``, send what each group has queued now instead of at the end of the tick (a
        caller that hands a whole tick over at once saves the loop a turn)."""
        connected = self.client.is_connected
        groups = self._groups
        ready = self._ready
        subjects = self._subjects
        # (Not ``hasattr(outcomes, "counted")``: a miss raises and clears an AttributeError, dearer
        # than the rest of a one-record tick's queueing. No cast either: a call.)
        told: Any = outcomes
        counted: Any = None if isinstance(outcomes, (tuple, list)) else outcomes
        # What a record costs here is paid per streamed chunk: no call but ``encode``, and the
        # group's state looked up once for a run of its records (a tick's are mostly one group's).
        last_group = ""
        state: _Group | None = None
        clock = -1
        action_lines = ""
        for index, (kind, channel, now, body, _) in enumerate(entries):
            known = subjects.get(channel) or self._subjects_of(channel)
            if kind == "action":
                text = encode(body)
                if text.endswith(_ZERO_SEQ_END):  # ``serverSeq`` 0 its last key (the store's): cut off
                    stem = text[:-_ZERO_SEQ_CUT]
                    text = stem + "}"
                else:
                    unnumbered = body.copy()  # type: ignore[union-attr]
                    unnumbered.pop("serverSeq", None)
                    text = encode(unnumbered)
                    stem = text[:-1]
                if now != clock:  # (a tick's actions mostly share their clock reading)
                    clock = now
                    action_lines = f"{ACTION_LINES}{now}"
                lines = action_lines
                # ``run_key(action) is not None`` (``ahp.state.appends``), without its call for
                # the text appends: a string ``content`` is all they need.
                action = body["action"]  # type: ignore[index]
                tag = action.get("type")
                subject, group = known[isinstance(action.get("content"), str) if tag in TEXT_APPENDS
                                       else tag in RUN_ACTION_TYPES and run_key(action) is not None]
            else:
                text = encode(body) if kind == "created" else ""
                stem = ""
                lines = _KIND_LINES[kind]
                body = None
                subject, group = known[0]
            if group is not last_group:  # (equal groups not the same object: looked up again, no harm)
                last_group = group
                state = groups.get(group) if connected else None
                if state is not None:
                    ready[group] = state
            pending = ((subject, lines, text, body, counted, index, stem) if counted is not None
                       else (subject, lines, text, body, told[index], -1, stem))
            if state is not None:
                state.queue.append(pending)
            else:
                _tell(pending,
                      LogUnavailable(f"NATS is not reachable: not writing {channel}") if not connected
                      else NotOwner(channel, None))
        if send:
            self._send_tick()
        elif ready and not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._send_tick)

    def send_told(self, entries: Sequence[Entry], tick: Told) -> bool:
        """Send a tick of actions in one pass, each entry's last item its :class:`Outcome`: each
        record queued and framed in one loop (its payload, subject, header lines and ``HPUB``
        command; no queued tuple, no second loop in the wire) and written at once, fenced and
        named as ``queue_tick``'s; where the acknowledgements are read, each action is stamped and
        its outcome told its frame in one more loop (``Told``). Only the common case of a
        streamed turn: every record of one group this process owns, with nothing of it queued or
        in flight, each envelope ending with ``"serverSeq": 0`` and within the server's size limit,
        the fast wire connected. False, and nothing sent, otherwise: the caller then hands the tick
        to ``queue_tick``. A refusal or a lost acknowledgement is worked out as ``queue_tick``'s
        (the tick counted as a :class:`Counted`)."""
        count = len(entries)
        if not 0 < count <= _MOST_TOLD:
            return False
        subjects = self._subjects
        channel = entries[0][1]
        known = subjects.get(channel) or self._subjects_of(channel)
        group = known[0][1]
        state = self._groups.get(group)
        if state is None or state.sending or state.queue:
            return False
        wire = self._wire
        reply = wire.reserve()
        if reply is None:
            return False
        batch_id = f"{self._batch_prefix}{self._batches + 1}"
        name = f"{state.fence}\r\n{MSG_ID}: {batch_id}."
        limit = wire.max_payload
        frames: list[str] = []
        stems: list[str] = []
        clock = -1
        middle = ""
        heads = 0
        last_channel = channel
        # One loop per record from the tick to the command's text: what it costs is paid per
        # streamed chunk (no call but orjson's and ``rpartition``; the sizes' text looked up,
        # not formatted, as an int's formatting costs more than the rest of the command's).
        for (_, channel, now, body, _), number in zip(entries, REQUEST_NUMBERS):
            if channel != last_channel:
                last_channel = channel
                known = subjects.get(channel) or self._subjects_of(channel)
                if known[0][1] != group:
                    return False
            try:  # ``encode``, its usual way inlined (a call less per record)
                text = orjson.dumps(body).decode()
            except TypeError:  # a key that is not a str, an int past 64 bits: ``encode``'s other ways
                text = encode(body)
            else:
                if "null" in text:  # (maybe a NaN, which orjson writes as null: ``encode`` says)
                    text = encode(body)
            stem, cut, tail = text.rpartition(_ZERO_SEQ_END)  # (one call: the test and the stem)
            if tail or not cut:
                return False
            if now != clock:
                clock = now
                # The header block but the name's number: NATS/1.0, the clock, the fence, the name.
                middle = f"\r\nNATS/1.0\r\n{ACTION_LINES}{now}\r\n{name}"
                heads = len(middle) + 2  # (less its leading line break, with the closing two)
            action = body["action"]  # type: ignore[index]
            tag = action.get("type")
            subject = known[isinstance(action.get("content"), str) if tag in TEXT_APPENDS
                            else tag in RUN_ACTION_TYPES and run_key(action) is not None][0]
            head = heads + len(number)
            size = head + 1 + (len(stem) if stem.isascii() else len(stem.encode()))
            if size > limit:
                return False
            frames.append(f"HPUB {subject} {reply}{number} {_DECIMALS[head] if head < _DECIMAL_COUNT else head} "
                          f"{_DECIMALS[size] if size < _DECIMAL_COUNT else size}{middle}{number}\r\n\r\n{stem}}}\r\n")
            stems.append(stem)
        self._batches += 1
        state.sending = True
        left_at = asyncio.get_running_loop().time()
        wire.write_batch(frames[0] if count == 1 else "".join(frames), count, functools.partial(
            self._acked_told, group, state, entries, stems, tick, batch_id, state.last, left_at),
            self.timeout, self._ack_head, left_at)
        return True

    def _acked_told(self, group: str, state: _Group, entries: Sequence[Entry], stems: list[str], tick: Told,
                    batch_id: str, base: int, left_at: float, replies: list[bytes | BaseException]) -> None:
        """Every reply to a ``send_told`` batch came (or its send failed): every record stored,
        each is stamped and its outcome told here (``Told``); otherwise the batch is worked out
        as ``_acked``'s, the tick counted."""
        # (A range: the wire read them as plain acknowledgements, numbered so: ``write_batch``.)
        seqs = replies if replies.__class__ is range else _stored_seqs(replies, self._ack_head)
        if seqs is None:
            batch = self._pendings(entries, stems, tick)
            asyncio.get_running_loop().create_task(
                self._after_failure(_Flight(group, state, batch, batch_id, base, left_at, replies)))
            return
        last = seqs[-1]
        if last > state.last:
            state.last = last
        tick.telling()
        try:
            _tell_all(entries, stems, seqs)
        finally:  # (an outcome that raised, against ``Outcome``'s word: the tick and the group go on)
            try:
                tick.told(last)
            finally:
                if state.queue:
                    self._send_batches(((group, state),))
                else:
                    state.sending = False

    def _pendings(self, entries: Sequence[Entry], stems: list[str], tick: Told) -> list[_Pending]:
        """A ``send_told`` batch as ``queue_tick`` would have queued it, counted in ``tick`` (for
        a batch whose acknowledgements told of a refusal or were lost)."""
        batch: list[_Pending] = []
        for index, ((_, channel, now, body, _), stem) in enumerate(zip(entries, stems)):
            known = self._subjects.get(channel) or self._subjects_of(channel)
            action = body["action"]  # type: ignore[index]
            subject = known[run_key(action) is not None][0]
            batch.append((subject, f"{ACTION_LINES}{now}", stem + "}", body, tick, index, stem))
        return batch

    def _subjects_of(self, channel: str) -> tuple[tuple[str, str], tuple[str, str]]:
        """``(subject, group)`` of ``channel``'s records and of its streamed text (remembered)."""
        if len(self._subjects) > 65536:
            self._subjects.clear()
        known = self._subjects[channel] = (self.subjects.of(channel), self.subjects.of(channel, True))
        return known

    def _send_tick(self) -> None:
        """Send the next batch of each group that queued something and has none in flight (one
        with a batch in flight sends its queue once that is acknowledged: ``_acked``), all of
        them in one write."""
        self._scheduled = False
        ready, self._ready = self._ready, {}
        if len(ready) == 1:
            for group, state in ready.items():
                if state.queue and not state.sending:
                    self._send_batches(((group, state),))
            return
        self._send_batches([(group, state) for group, state in ready.items() if state.queue and not state.sending])

    def _send_batches(self, groups: Sequence[tuple[str, _Group]]) -> None:
        """Send the next batch of each of ``groups`` that has one and is still this process's:
        each message a fenced publish of its own with its own acknowledgement, named
        ``<batch id>.<index>`` (``Nats-Msg-Id``), so that one whose acknowledgement was lost can
        be found in the log, and a copy sent again is dropped by the server; every group's
        together in one write (``_wire``'s ``request_batches``); once every acknowledgement of a
        group's batch came (``_acked``), its next batch leaves. One batch per group is in flight."""
        left_at = asyncio.get_running_loop().time()
        batches: list[Batch] = []
        for group, state in groups:
            if not state.queue or self._groups.get(group) is not state:
                state.sending = False
                continue
            state.sending = True
            if len(state.queue) <= BATCH_LIMIT:
                batch, state.queue = state.queue, []
            else:
                batch, state.queue = state.queue[:BATCH_LIMIT], state.queue[BATCH_LIMIT:]
            self._batches += 1
            batch_id = f"{self._batch_prefix}{self._batches}"
            batches.append((batch, f"{state.fence}\r\n{MSG_ID}: {batch_id}.", 0, functools.partial(
                self._acked, group, state, batch, batch_id, state.last, left_at)))
        if batches:  # (the acknowledgements as a range where they are plain ones: ``_stored_seqs`` takes it)
            self._wire.request_batches(batches, self.timeout, self._ack_head)

    def _acked(self, group: str, state: _Group, batch: list[_Pending], batch_id: str, base: int, left_at: float,
               replies: list[bytes | BaseException]) -> None:
        """Every reply to a batch came (or its send failed). The common case, every message
        stored, is finished here at once, the acknowledgements parsed in one pass; a refusal or
        a lost acknowledgement is worked out in a task (``_after_failure``)."""
        seqs = _stored_seqs(replies, self._ack_head)
        if seqs is not None:
            self._stored(state, batch, seqs)
            if state.queue:
                self._send_batches(((group, state),))
            else:
                state.sending = False
            return
        flight = _Flight(group, state, batch, batch_id, base, left_at, replies)
        asyncio.get_running_loop().create_task(self._after_failure(flight))

    async def _after_failure(self, flight: _Flight) -> None:
        """A batch some of whose messages were refused or not answered (those settled first:
        ``_settle``): each stored message resolves with its number, each refused one fails
        (``NotOwner`` when the fence refused it), and then the group is dropped."""
        group, state = flight.group, flight.state
        outcomes = await self._outcomes(group, state, flight, flight.replies, 0)
        failed: LogError | None = None
        for pending, outcome in zip(flight.batch, outcomes):
            if isinstance(outcome, LogError):
                failed = failed or outcome
                _tell(pending, outcome)
            else:
                self._stored(state, [pending], [outcome])
        if failed is not None:
            if self._groups.get(group) is state:  # (not dropped, nor claimed again, meanwhile)
                self._drop(group, failed)
            state.sending = False
            return
        self._send_batches([(group, state)])

    async def _outcomes(self, group: str, state: _Group, flight: _Flight,
                        replies: Sequence[bytes | BaseException | None], start: int) -> list[int | LogError]:
        """Each outcome of the batch's messages from ``start`` on (``replies[i]`` is message
        ``start + i``'s reply): its sequence, or why it was refused; the unanswered ones settled."""
        outcomes: list[int | LogError] = []
        for offset, reply in enumerate(replies):
            if reply is None or isinstance(reply, _UNANSWERED):
                try:
                    return outcomes + await self._settle(group, state, flight, start + offset, reply)
                except LogError as error:  # (a settling gives outcomes; this is a safety net)
                    return outcomes + [error] * (len(replies) - offset)
            if isinstance(reply, BaseException):
                outcomes.append(LogError(f"cannot send a record for {group}: {reply or type(reply).__name__}"))
                continue
            answer = json.loads(reply)
            said = answer.get("error")
            if said is None:
                outcomes.append(int(answer["seq"]))
            elif said.get("err_code") == WRONG_LAST_SEQUENCE:
                outcomes.append(NotOwner(group, await self._holder_or_none(group)))
            else:
                outcomes.append(LogError(f"JetStream refused a record for {group}: {said.get('description')}"))
        return outcomes

    def _stored(self, state: _Group, batch: list[_Pending], seqs: Sequence[int]) -> None:
        """The first ``len(seqs)`` messages of ``batch`` are stored with sequences ``seqs``: an
        action's envelope is stamped and each outcome told (``_tell``'s work, inline: this runs
        for every record), a tick's counted once the last of its records is."""
        if not seqs:
            return
        if seqs[-1] > state.last:
            state.last = seqs[-1]
        first = batch[0]
        if first[5] >= 0 and first[4] is batch[len(seqs) - 1][4]:
            # One tick's records, all of them (a tick's are queued one after another, so between
            # its first and its last there is none of another's): counted once.
            counted: Any = first[4]  # a Counted (no cast: it is a call)
            results = counted.results
            for (_, _, _, envelope, _, slot, stem), seq in zip(batch, seqs):
                if envelope is None:
                    results[slot] = seq
                else:
                    envelope["serverSeq"] = seq
                    results[slot] = f'{ACTION_FRAME_HEAD}{stem},"serverSeq":{seq}}}}}'
            counted.left -= len(seqs)
            if not counted.left:
                counted.counted()
            return
        for pending, seq in zip(batch, seqs):
            _, _, _, envelope, outcome, slot, stem = pending
            if slot < 0:
                _tell(pending, seq)
                continue
            tick: Any = outcome  # a Counted (no cast: it is a call, and this runs per record)
            if envelope is None:
                tick.results[slot] = seq
            else:
                envelope["serverSeq"] = seq
                tick.results[slot] = f'{ACTION_FRAME_HEAD}{stem},"serverSeq":{seq}}}}}'
            tick.left -= 1
            if not tick.left:
                tick.counted()

    def _requested(self, batch: list[_Pending], name: str, first: int) -> asyncio.Future[list[bytes | BaseException]]:
        """``batch`` sent again (in one write), named from ``first`` on: a future of its replies."""
        replies: asyncio.Future[list[bytes | BaseException]] = asyncio.get_running_loop().create_future()

        def done(told: list[bytes | BaseException]) -> None:
            if not replies.done():
                replies.set_result(told)

        self._wire.request_batches(((batch, name, first, done),), self.timeout)
        return replies

    async def _settle(self, group: str, state: _Group, flight: _Flight, start: int,
                      error: BaseException | None) -> list[int | LogError]:
        """The batch's messages from ``start`` on were not answered (the connection broke, the
        server restarted): each may or may not be stored. Once reconnected, while the group's
        lease is still this process's, read the group's messages after the batch's ``base``:
        those the batch named (``Nats-Msg-Id``) were stored; from the first that was not, they are
        sent again, fenced as before (so refused, ``NotOwner``, if another process claimed the
        group meanwhile), with the same ids: a first sending still on its way when the stream was
        read (a message of the broken connection taken in late) and its copy are not both stored,
        the server drops whichever comes second within its duplicate window and answers it with
        the first's sequence. So a message is sent again only while that window, counted from its
        first sending, has a timeout left to run. Past the lease or the window nothing is sent
        again, but the same reading is done once connected (``_read_back``): a message the stream
        holds is never told as refused. Their outcomes."""
        batch = flight.batch
        loop = asyncio.get_running_loop()
        resend_by = flight.left_at + self.duplicate_window - self.timeout
        while (self._groups.get(group) is state and state.lease.until > self.leases._clock()
               and loop.time() < resend_by):
            if not self.client.is_connected:
                await asyncio.sleep(0.05)
                continue
            try:
                found = await self._named(group, flight.base, flight.batch_id)
            except (NatsTimeout, ConnectionClosedError, NoRespondersError, APIError, LogUnavailable):
                await asyncio.sleep(0.1)
                continue
            outcomes: list[int | LogError] = []
            newest = max(found, default=-1)
            for index in range(start, len(batch)):
                seq = found.get(index)
                if seq is not None:
                    outcomes.append(seq)
                elif index < newest:  # the server took a later one: it refused this one
                    outcomes.append(LogError(f"JetStream refused a record for {group} (its answer was lost)"))
                elif loop.time() >= resend_by:  # too late to send again without a copy stored
                    return outcomes + await self._read_back(group, flight, index, error)
                else:  # not stored: this one and the ones after it go again, in order, with their ids
                    replies = await self._requested(batch[index:], f"{state.fence}\r\n{MSG_ID}: {flight.batch_id}.", index)
                    return outcomes + await self._outcomes(group, state, flight, replies, index)
            return outcomes
        return await self._read_back(group, flight, start, error)

    async def _read_back(self, group: str, flight: _Flight, start: int,
                         error: BaseException | None) -> list[int | LogError]:
        """The outcomes of the batch's unanswered messages from ``start`` on once the group's
        lease lapsed: read from the stream once connected (asked up to 20 times, waited for as
        long as the client is not connected, unless it is closed). Those found resolve with their
        numbers (every other process holds them); the others fail, ``NotOwner`` when another
        process wrote to the group after this batch, ``LogUnavailable`` when not known."""
        unavailable = LogUnavailable(f"NATS did not acknowledge a batch for {group} ({type(error).__name__}) "
                                     "and could not be asked again within the lease: this process stops writing to it")
        tries = 20
        while tries and not self.client.is_closed:
            if not self.client.is_connected:
                await asyncio.sleep(0.1)
                continue
            tries -= 1
            try:
                found = await self._named(group, flight.base, flight.batch_id)
                moved = await self.group_last(group) > max(found.values(), default=flight.base)
            except (NatsTimeout, ConnectionClosedError, NoRespondersError, APIError, LogUnavailable):
                await asyncio.sleep(0.1)
                continue
            missing: LogError = NotOwner(group, await self._holder_or_none(group)) if moved else unavailable
            return [found.get(index, missing) for index in range(start, len(flight.batch))]
        return [unavailable] * (len(flight.batch) - start)

    async def _named(self, group: str, since: int, batch_id: str) -> dict[int, int]:
        """The messages of ``group`` after ``since`` that batch ``batch_id`` sent: index → sequence."""
        last = await self.group_last(group)
        if last <= since:
            return {}
        found: dict[int, int] = {}
        prefix = batch_id + "."

        def take(message: Msg, seq: int) -> None:
            name = (message.headers or {}).get(MSG_ID, "")
            if name.startswith(prefix):
                found[int(name[len(prefix):])] = seq

        await self._scan(group, since, last, take)
        return found

    def _check_connected(self) -> None:
        if not self.client.is_connected:
            raise LogUnavailable("NATS is not reachable: this process does not write")

    # -- reading -----------------------------------------------------------------------------------

    async def last_seq(self) -> int:
        """The stream's last sequence (0 when empty)."""
        try:
            info = await self.js.stream_info(self.stream)
        except (NatsTimeout, NoRespondersError, ConnectionClosedError) as error:
            raise LogUnavailable(f"NATS is not reachable: {error}") from error
        return info.state.last_seq

    async def read(self, since: int, channels: Iterable[str] | None = None) -> list[Record]:
        """The records after sequence ``since`` (up to the last when the read began), in order;
        only those of ``channels`` when given."""
        upto = await self.last_seq()
        if upto <= since:
            return []
        wanted = None if channels is None else set(channels)
        records: list[Record] = []
        done = asyncio.get_running_loop().create_future()

        def take(message: Msg, seq: int, pending: int) -> None:
            if seq <= upto:
                record = self.decode(message)
                if wanted is None or record.channel in wanted:
                    records.append(record)
            if (seq >= upto or not pending) and not done.done():
                done.set_result(None)

        reader = await InOrder.open(self.js, self.stream, self.subjects.all, take, start=since + 1)
        try:
            await asyncio.wait_for(done, self.timeout + upto - since)
        except TimeoutError as error:
            raise LogUnavailable(f"reading the log after {since} did not finish") from error
        finally:
            await reader.stop()
        return records

    async def follow(self, since: int, callback: Callable[[Record], Awaitable[None] | None],
                     skip: Callable[[str], bool] | None = None,
                     subjects: list[str] | None = None) -> Callable[[], Awaitable[None]]:
        """Call ``callback`` with every record after ``since`` as it is stored (this process's own
        included), in order, except the records (not owner markers) of the groups ``skip`` says,
        which are not even decoded; only the records on ``subjects`` (filters that do not
        overlap, e.g. :attr:`Subjects.coarse` and some groups' :meth:`Subjects.streamed_filter`),
        chosen by the server, when given. Returns the coroutine function that stops it."""
        groups: dict[str, str] = {}
        prefix = len(self.subjects.prefix) + 1

        def take(message: Msg, seq: int, pending: int) -> Awaitable[None] | None:
            if skip is not None:
                group_token, _, channel_token = message.subject[prefix:].partition(".")
                group = groups.get(group_token)
                if group is None:
                    group = groups[group_token] = untoken(group_token) or ""
                    if len(groups) > 65536:
                        groups.clear()
                if channel_token != MARKER_TOKEN and skip(group):
                    return None
            return callback(self.decode(message))

        reader = await InOrder.open(self.js, self.stream, self.subjects.all, take, start=since + 1,
                                    filter_subjects=list(subjects) if subjects else None, heartbeat=HEARTBEAT)
        return reader.stop

    def next_on(self, questions: Sequence[tuple[str, int]]) -> asyncio.Future[list[tuple[int, str]]]:
        """For each ``(subject, start)`` (``subject`` may hold wildcards): the number and subject of
        the stream's first message on it from ``start`` on, ``(0, "")`` for none. Asked all at
        once, in one write, and answered on the log's wire (``host.cluster._wire``'s
        ``request_batches``): the stream's ``MSG.GET`` API, whose answer is one plain JSON message
        (the fast wire reads it where it arrives; the plain one through nats-py's request), not a
        direct get each, whose answer nats-py takes through its request and a parse of the
        message's headers. A round of two: about 160 µs of this process's CPU against 320-470
        for two direct gets gathered, the server's 200-240 against 120-165 (ad hoc, load 9-12;
        ``benchmarks/README.md``, "where the second worker's capacity goes"). Fails with
        ``LogUnavailable`` when not connected or an answer does not come, ``LogError`` for an
        answer that is an error other than "no message"."""
        future: asyncio.Future[list[tuple[int, str]]] = asyncio.get_running_loop().create_future()
        self._check_connected()
        requests = [(self._get_subject, "Ahp-Ask: next", f'{{"seq":{start},"next_by_subj":"{subject}"}}')
                    for subject, start in questions]

        def done(replies: list[bytes | BaseException]) -> None:
            if future.done():
                return
            try:
                future.set_result([_next_answer(reply) for reply in replies])
            except BaseException as error:  # (handed to the waiting caller, never into the wire's callback)
                future.set_exception(error)

        self._wire.request_batches([(requests, "Ahp-Ask-N: ", 0, done)], self.timeout)
        return future

    async def watch_told(self, subjects: Sequence[str], take: Callable[[int, str], None]) -> tuple[int, Callable[[], Awaitable[None]]] | None:
        """Subscribe to ``subjects`` (of ``Subjects.told_of``/``told_markers``), where the stream
        republishes each record as it stores it, and call ``take(seq, subject)`` with each
        record's number and subject as the client's read loop parses it: before any reply that
        came after it on the connection, the acknowledgement of a record stored later among them.
        The server stores one record at a time and hands a stored record's republished copy and
        then its acknowledgement to one queue, which one goroutine hands on in order to the
        connections (nats-server's ``processJetStreamMsg`` and the stream's ``internalLoop``),
        so a record stored before another reaches this connection first; and the client's read
        loop hands them on in the order it parses them (``host.cluster._wire.subscribe_at_once``).

        Returns ``(since, stop)``: every record numbered above ``since`` is taken, as long as the
        connection of now lasts (``client.stats["reconnects"]`` unchanged; a record stored while
        it was away is not: call again for a new ``since``); None when that cannot be relied on
        (the stream does not republish: a stream made before, another server in a cluster; the
        client lacks what ``subscribe_at_once`` leans on; not connected)."""
        if not self.tells or not self.client.is_connected:
            return None

        def taken(message: Msg) -> None:
            headers = message.headers or {}
            try:
                seq = int(headers.get("Nats-Sequence", "0"))
            except ValueError:
                return
            take(seq, headers.get("Nats-Subject", ""))

        stops: list[Callable[[], Awaitable[None]]] = []
        try:
            for subject in subjects:
                subscription = await subscribe_at_once(self.client, subject, taken)
                if subscription is None:
                    break
                stops.append(subscription.unsubscribe)
            else:
                await flushed(self.client)  # the server has them before it is asked for ``since``
                since = await self.last_seq()

                async def stop() -> None:
                    for each in stops:
                        with contextlib.suppress(Exception):
                            await each()

                return since, stop
        except Exception as error:
            logger.debug("watching the records told as stored failed: %s", error)
        for each in stops:
            with contextlib.suppress(Exception):
                await each()
        return None

    async def read_group(self, group: str, since: int, upto: int) -> list[Record]:
        """The records of ``group`` after ``since`` up to ``upto``, in order (the server sends only
        the group's: its subjects are indexed)."""
        last = await self.group_last(group)
        if last <= since:
            return []
        end = min(last, upto)
        if end <= since:
            return []
        records: list[Record] = []
        await self._scan(group, since, end, lambda message, seq: records.append(self.decode(message)))
        return records

    async def _scan(self, group: str, since: int, end: int, each: Callable[[Msg, int], object]) -> None:
        """Hand ``each(message, sequence)`` the messages of ``group`` after ``since`` up to ``end``
        (its last sequence, read before), in order, through a consumer that only the group's
        subjects reach (``host.cluster.consumer``); ``LogUnavailable`` if they do not all come in time."""
        done = asyncio.get_running_loop().create_future()

        def take(message: Msg, seq: int, pending: int) -> None:
            if since < seq <= end:
                each(message, seq)
            if (seq >= end or not pending) and not done.done():
                done.set_result(None)

        reader = await InOrder.open(self.js, self.stream, self.subjects.group_filter(group), take, start=since + 1)
        try:
            await asyncio.wait_for(done, self.timeout + (end - since) / 1000)
        except TimeoutError as error:
            raise LogUnavailable(f"reading {group} after {since} did not finish") from error
        finally:
            await reader.stop()

    def decode(self, message: Msg) -> Record:
        """A message of the stream as a :class:`Record`."""
        seq = message.metadata.sequence.stream
        headers = message.headers or {}
        kind = cast(Kind, headers.get(KIND, "action"))
        group_token, _, rest = message.subject[len(self.subjects.prefix) + 1:].partition(".")
        channel = (untoken(group_token) if kind == "owner" else channel_of(group_token, rest.partition(".")[0])) or ""
        body: dict[str, Any] | None = None
        now = None
        if kind == "action":
            body = json.loads(message.data)
            body["serverSeq"] = seq
            now = int(headers.get(NOW, "0"))
        elif kind == "created":
            body = json.loads(message.data)
        elif kind == "owner":
            body = {"holder": message.data.decode(errors="replace")}
        return Record(seq, kind, channel, now, body)

    # -- snapshots ---------------------------------------------------------------------------------

    async def put_snapshot(self, group: str, seq: int, channels: dict[str, dict[str, Any]]) -> None:
        """Keep ``group``'s channels as of sequence ``seq`` (``{uri: {"kind", "state"}}``)."""
        data = encode({"seq": seq, "channels": channels}).encode()
        await self.snapshots.put(token(group), data)

    async def read_snapshot(self, group: str) -> tuple[int, dict[str, dict[str, Any]]]:
        """``group``'s snapshot: ``(seq, channels)``, ``(0, {})`` when it has none."""
        try:
            result = await self.snapshots.get(token(group))
        except NotFoundError:
            return 0, {}
        body = json.loads(result.data or b"{}")
        return int(body["seq"]), body["channels"]

    async def read_snapshots(self) -> dict[str, tuple[int, dict[str, dict[str, Any]]]]:
        """Every group's snapshot: ``{group: (seq, channels)}``."""
        found: dict[str, tuple[int, dict[str, dict[str, Any]]]] = {}
        try:
            infos = await self.snapshots.list()
        except NotFoundError:
            return found
        for info in infos:
            if info.deleted:
                continue
            result = await self.snapshots.get(info.name)
            body = json.loads(result.data or b"{}")
            found[untoken(info.name) or info.name] = (int(body["seq"]), body["channels"])
        return found

    # -- closing -----------------------------------------------------------------------------------

    async def close(self, release: bool = True) -> None:
        """Let the queued appends leave, give the leases up (``release``) and disconnect."""
        if self._renewer is not None:
            self._renewer.cancel()
        if release and self.client.is_connected:
            for group in list(self._groups):
                await self.release(group)
        self._groups.clear()
        self.groups_changed += 1
        if not self.client.is_closed:
            await self.client.close()



def _stored_seqs(replies: list[bytes | BaseException], head: bytes) -> Sequence[int] | None:
    """The stream sequence of each message of a batch, in order, when every reply is an
    acknowledgement that stored it; None when any is an error or failed (the batch is then worked
    out message by message). ``head`` is what a plain acknowledgement of the log's stream begins
    with (``{"stream":"AHP","seq":``, :func:`ack_head`): a reply that is that, digits and ``}``
    (the server's acknowledgement of a message stored, not a copy) is read by hand, the batch's
    at once (joined, cut at the ``}`` and head between two replies, its numbers checked as
    digits together); any other shape (a copy's ``"duplicate"``, a domain, an error) by ``orjson``.
    A ``range`` is the wire's word that every reply was a plain acknowledgement, numbered so
    (``_wire.FastSender.write_batch``'s ``acks``): it is those numbers."""
    if replies.__class__ is range:
        return replies
    if len(replies) == 1:  # a chunk a tick
        reply = replies[0]
        if reply.__class__ is not bytes:
            return None
        if reply.startswith(head) and reply.endswith(b"}"):
            number = reply[len(head):-1]
            if number.isdigit():
                return [int(number)]
        answer = orjson.loads(reply)
        return [answer["seq"]] if "error" not in answer else None
    try:
        joined = b"\n".join(replies)  # type: ignore[arg-type]  # (bytes unless it raises)
    except TypeError:  # an error among them
        return None
    if joined.startswith(head) and joined.endswith(b"}"):
        # ``<head>N}`` each, joined by line breaks: cut at each ``}\n<head>``, ``len(replies)``
        # numbers, all digits (then every line break is one of the joins, so each reply is one of
        # them whole).
        numbers = joined[len(head):-1].split(b"}\n" + head)
        if len(numbers) == len(replies) and b"".join(numbers).isdigit() and b"" not in numbers:
            return list(map(int, numbers))
    # (``find``, not ``in``: bytes' ``in`` tries its operand as an int first, and pays for the
    # TypeError; a stream named "error" takes the longer way, message by message, still right.)
    if joined.find(b'"error"') >= 0:
        return None
    return list(map(_SEQ, orjson.loads(b"[" + b",".join(replies) + b"]")))  # type: ignore[arg-type]


def _next_answer(reply: bytes | BaseException) -> tuple[int, str]:
    """``(seq, subject)`` of a ``MSG.GET`` answer (``JetStreamLog.next_on``); ``(0, "")`` for "no
    message"."""
    if isinstance(reply, BaseException):
        raise LogUnavailable(f"a question to the stream was not answered: {reply!r}") from reply
    answer = orjson.loads(reply)
    message = answer.get("message")
    if message is not None:
        return int(message["seq"]), str(message["subject"])
    error = answer.get("error") or {}
    if error.get("code") == 404:
        return 0, ""
    raise LogError(f"the stream refused a question: {error.get('description') or answer}")


def told_config(subjects: Subjects) -> api.RePublish:
    """The stream's ``republish``: each record on ``subjects.coarse``, its headers only (its
    number, its subject), on ``subjects.told`` (``watch_told``)."""
    return api.RePublish(src=subjects.coarse, dest=f"{subjects.told}.{{{{wildcard(1)}}}}.{{{{wildcard(2)}}}}",
                         headers_only=True)


async def _opened(js: JetStreamContext, config: api.StreamConfig) -> api.StreamInfo:
    """The stream made with ``config``; made before without its ``republish`` (the server opens a
    stream again only with the configuration it was made with), opened so and then given it
    (``update_stream``: only that differs); left without it should that fail (nothing is told as
    stored then: ``watch_told`` gives None and the log asks)."""
    try:
        return await js.add_stream(config)
    except APIError as error:
        if error.err_code != _NAME_IN_USE or config.republish is None:
            raise
    republish, config.republish = config.republish, None
    info = await js.add_stream(config)
    config.republish = republish
    try:
        return await js.update_stream(config)
    except APIError as error:
        logger.info("the stream %s made before is not told as stored: %s", config.name, error)
        return info


def _clustered(client: Client) -> bool:
    """Whether the server says it is one of a cluster (the order ``watch_told`` leans on is proven
    for a single server only)."""
    info = getattr(client, "_server_info", None)
    return bool(client.discovered_servers) or not isinstance(info, dict) or bool(info.get("cluster"))


_NAME_IN_USE = 10058
"""The server's error code for a stream name in use with another configuration."""


def ack_head(stream: str) -> bytes:
    """What the server's acknowledgement of a message stored in ``stream`` begins with (its
    sequence, digits, and ``}`` follow)."""
    return b'{"stream":' + orjson.dumps(stream) + b',"seq":'


async def _said(error: Exception) -> None:
    """The NATS client's errors (a refused connection while it retries, ...): one line each, not the
    client's default traceback; what they mean for the log reaches the caller as ``LogUnavailable``."""
    logger.warning("NATS: %s", error or type(error).__name__)


def _settle(future: asyncio.Future[bool], value: bool) -> None:
    if not future.done():
        future.set_result(value)


def _tell_all(entries: Sequence[Entry], stems: list[str], seqs: Sequence[int]) -> None:
    """Each of ``entries`` (actions) stored with its sequence in ``seqs``: its envelope stamped and
    its outcome (its last item) told its frame, built around its ``stem`` (its JSON less the
    closing brace, without ``serverSeq``). An outcome already done (a future its caller
    cancelled) is left as it is: should one raise so, the rest are told one by one (an outcome
    told twice is left as it was the first time, ``Outcome``)."""
    try:
        for (_, _, _, envelope, outcome), stem, seq in zip(entries, stems, seqs):
            envelope["serverSeq"] = seq  # type: ignore[index]
            outcome.set_result(f'{ACTION_FRAME_HEAD}{stem},"serverSeq":{seq}}}}}')
    except asyncio.InvalidStateError:
        for (_, _, _, envelope, outcome), stem, seq in zip(entries, stems, seqs):
            envelope["serverSeq"] = seq  # type: ignore[index]
            with contextlib.suppress(asyncio.InvalidStateError):
                outcome.set_result(f'{ACTION_FRAME_HEAD}{stem},"serverSeq":{seq}}}}}')


def _tell(pending: _Pending, result: int | BaseException) -> None:
    """``pending``'s outcome: stored as ``result`` (a sequence; an action's envelope is stamped
    with it, and its outcome gets its frame, or the stamped pair for an :class:`Outcome`), or
    refused with ``result`` (an exception). An :class:`Outcome` already done (a future its caller
    cancelled) is left as it is."""
    _, _, text, envelope, outcome, slot, _ = pending
    if slot >= 0:
        tick: Any = outcome  # a Counted (no cast: a call)
        if isinstance(result, BaseException) or envelope is None:
            tick.results[slot] = result
        else:
            envelope["serverSeq"] = result
            tick.results[slot] = stamped_action_frame(text, result)[1]
        tick.left -= 1
        if not tick.left:
            tick.counted()
        return
    told: Any = outcome  # an Outcome
    try:
        if isinstance(result, BaseException):
            told.set_exception(result)
        elif envelope is None:
            told.set_result(result)
        else:
            envelope["serverSeq"] = result
            told.set_result(stamped_action_frame(text, result))
    except asyncio.InvalidStateError:
        pass
