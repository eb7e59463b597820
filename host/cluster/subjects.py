"""Where a channel's envelopes live on the JetStream log: its owner group and its subject. Pure.

**Owner groups.** A session's channels are run by one process at a time and fenced together: the
session itself, its annotations channel and its chats (the default chat, named chats, sub-agent
chats: ``ahp.state.channels.parse_chat_uri``). A terminal, a changeset, a resource watch and an
automation run are each a group of their own, run by the process that made it (a terminal's
shell and a watch's files are on that process's machine: any process may make one). The root
channel, the automations channel and URIs of no known kind belong to the one host-wide group
:data:`HOST_GROUP`, which one process runs at a time and the others forward their changes to
(:func:`is_shared`). ``group_of`` answers from the URI alone, as every process must answer the
same without asking.

**Subjects.** ``<prefix>.<group token>.<channel token>``, each token the unpadded base64url of the
UTF-8 URI (base64url has no ``.``, ``*``, ``>`` or white space, so any URI is one token, and KV
keys allow the same alphabet). All subjects of a group match ``group_filter`` (``<prefix>.<group
token>.>``): an append is fenced against the last sequence on that wildcard (the server's
``Nats-Expected-Last-Subject-Sequence-Subject``). A group's ownership marker, written by a process
that takes the group over so that a stale owner's next fenced append fails, is on
``<prefix>.<group token>.~`` (``~`` is no base64url character, so no channel has that token).

**Streamed text on a subject of its own.** A chat's streamed-text appends (``ahp.state.appends``:
``chat/delta``, ``chat/reasoning``, ``chat/toolCallDelta`` that only append) are on
``<prefix>.<group token>.<channel token>.t`` (:meth:`Subjects.of` with ``streamed=True``), every
other record on the three-token subject above. So ``<prefix>.*.*`` (:attr:`Subjects.coarse`)
matches every record but streamed text, of every group, with every marker, and
``<prefix>.<group token>.*.t`` (:meth:`Subjects.streamed_filter`) a group's streamed text: a
process follows the first for every group and the second only for the groups whose chats it
serves (``host.cluster.ordered_log``), and the server filters the rest out. The streamed text is
where a turn's records are (one per chunk); nothing but the text of a chat's parts (and a tool
call's ``partialInput``) depends on it. Streams written before (streamed text on three tokens)
read the same: a reader takes a channel from the token after the group's.

**Told as stored.** The stream republishes each record on :attr:`Subjects.coarse`, its headers
only (its number and subject), on ``<prefix>-told.<group token>.<channel token>``
(:attr:`Subjects.told`), as it stores it: a process that subscribes there to a group's records and
the owner markers learns of each before the acknowledgement of any record stored after it
(``host.cluster.ordered_log``, the gate told in order).

**A group's own channels in a short token.** Every record carries its subject twice over in the
server's work (parsed, matched, indexed per subject, stored with the record), and a chat's URI
holds its session's URI base64-encoded, so its token was the base64 of that again (over 100
characters for a session of ``openai-chat:/<uuid>``). A channel the group's URI alone rebuilds is
named relative to it instead (:func:`channel_token`): the group's session itself is ``=``, its chat
named N (``ahp.state.channels.chat_uri(group, N)``, the default chat and named chats) is ``=`` and
N's token; ``=`` is no base64url character, so no other token starts with it, and a reader
rebuilds the channel from the group's token (:func:`channel_of`). Every other channel (annotations,
a sub-agent's chat, a terminal, the root...) keeps the base64url of its URI, and streams written
before (every channel so) read the same. The server then spends less on each record
(``benchmarks/nats_server_cost.py``; ``benchmarks/README.md``, "What a record carries").
"""

from __future__ import annotations

import base64
import binascii
import functools

from ahp.state.channels import channel_kind, chat_uri, parse_chat_uri, session_of_annotations

__all__ = ["HOST_GROUP", "MARKER_TOKEN", "RELATIVE_TOKEN", "STREAMED_TOKEN", "Subjects", "channel_of", "channel_token",
           "group_of", "is_shared", "token", "untoken"]

HOST_GROUP = "ahp-host:"
"""The owner group of the channels that belong to no session."""

MARKER_TOKEN = "~"

RELATIVE_TOKEN = "="
"""How a channel token named relative to its group begins (:func:`channel_token`)."""

STREAMED_TOKEN = "t"
"""The last token of a streamed-text record's subject (after its channel's)."""


@functools.lru_cache(maxsize=65536)
def group_of(channel: str) -> str:
    """The owner group of ``channel``: its session's URI, or :data:`HOST_GROUP` (remembered: the
    log asks for every record, several times)."""
    kind = channel_kind(channel)
    if kind == "session":
        return channel
    if kind == "chat":
        parsed = parse_chat_uri(channel)
        return parsed[1] if parsed is not None else HOST_GROUP
    if kind == "annotations":
        return session_of_annotations(channel) or HOST_GROUP
    if kind in _OWN_GROUP:
        return channel
    return HOST_GROUP


_OWN_GROUP = frozenset({"terminal", "changeset", "resourceWatch", "automationRun"})


def is_shared(channel: str) -> bool:
    """Whether ``channel`` is one every process changes (the root...): in :data:`HOST_GROUP`."""
    return group_of(channel) == HOST_GROUP


@functools.lru_cache(maxsize=65536)
def token(uri: str) -> str:
    """``uri`` as one subject token (and KV key): unpadded base64url of its UTF-8 bytes."""
    return base64.urlsafe_b64encode(uri.encode("utf-8")).decode("ascii").rstrip("=")


def untoken(text: str) -> str | None:
    """The URI :func:`token` encoded, ``None`` for a token it could not have made."""
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def channel_token(group: str, channel: str) -> str:
    """``channel``'s token on the subjects of ``group`` (its owner group): ``=`` for the group's
    session itself, ``=`` and the name's token for the session's chat of that name (as
    ``chat_uri`` builds it), else :func:`token` of its URI."""
    if group != HOST_GROUP:
        if channel == group:
            return RELATIVE_TOKEN
        parsed = parse_chat_uri(channel)
        if parsed is not None and parsed[1] == group and chat_uri(group, parsed[0]) == channel:
            return RELATIVE_TOKEN + token(parsed[0])
    return token(channel)


def channel_of(group_token: str, channel_token: str) -> str | None:
    """The channel a subject's group and channel tokens name (:func:`channel_token` undone), None
    for tokens it could not have made."""
    if not channel_token.startswith(RELATIVE_TOKEN):
        return untoken(channel_token)
    group = untoken(group_token)
    if group is None or channel_token == RELATIVE_TOKEN:
        return group
    name = untoken(channel_token[1:])
    return chat_uri(group, name) if name else None


class Subjects:
    """The subject names of one log (one stream, one prefix)."""

    def __init__(self, prefix: str = "ahp.log") -> None:
        self.prefix = prefix
        self.all = f"{prefix}.>"
        self.coarse = f"{prefix}.*.*"
        """Every record but streamed text, of every group, and every marker."""
        self.told = f"{prefix}-told"
        """Where the stream republishes, headers only, each record on :attr:`coarse` once stored
        (``<told>.<group token>.<channel token>``, the stream's ``republish``: no subject of the
        stream's own, so no cycle): :meth:`told_of` and :meth:`told_markers` are what a process
        subscribes to (``host.cluster.ordered_log``, the gate told in order)."""
        self._cache: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {}
        self._filters: dict[str, str] = {}

    def of(self, channel: str, streamed: bool = False) -> tuple[str, str]:
        """``(subject, owner group)`` of ``channel``'s records, or of its streamed-text appends
        when ``streamed`` (remembered: asked once per envelope)."""
        known = self._cache.get(channel)
        if known is None:
            group = group_of(channel)
            subject = f"{self.prefix}.{token(group)}.{channel_token(group, channel)}"
            known = self._cache[channel] = ((subject, group), (f"{subject}.{STREAMED_TOKEN}", group))
            if len(self._cache) > 65536:
                self._cache.clear()
        return known[streamed]

    def streamed_filter(self, group: str) -> str:
        """The wildcard subject of ``group``'s streamed-text appends."""
        return f"{self.prefix}.{token(group)}.*.{STREAMED_TOKEN}"

    def group_filter(self, group: str) -> str:
        """The wildcard subject of every message of ``group`` (its channels and its marker;
        remembered: every batch's fence names it)."""
        known = self._filters.get(group)
        if known is None:
            if len(self._filters) > 65536:
                self._filters.clear()
            known = self._filters[group] = f"{self.prefix}.{token(group)}.>"
        return known

    def told_of(self, group: str) -> str:
        """The subject where the stream republishes ``group``'s records but its streamed text."""
        return f"{self.told}.{token(group)}.*"

    @property
    def told_markers(self) -> str:
        """The subject where the stream republishes every group's owner marker."""
        return f"{self.told}.*.{MARKER_TOKEN}"

    def marker(self, group: str) -> str:
        return f"{self.prefix}.{token(group)}.{MARKER_TOKEN}"
