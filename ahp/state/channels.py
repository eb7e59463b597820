"""What a channel URI says about its channel in AHP 0.9.0, and the chat URIs a session owns.

In 0.9.0 the client chooses session URIs of the form ``<provider>:/<uuid>``, whose scheme is the
provider id [VERSIONS.md §2, VS Code 1.139.1], so a session cannot be recognised by its scheme.
:func:`channel_kind` therefore answers only what the URI alone can prove, and says ``"session"``
for a *candidate*: a well-formed URI that is no other kind of channel. Only the host's registry of
live channels knows whether a candidate really is a session; bind each channel's reducer when the
channel is created and use this function for what arrives before that (e.g. validating
``createSession``).

Rules, first match wins:

========================  ====================================================================
``ahp-root://``           ``root`` (exact string, no normalisation)
``ahp-chat:…``            ``chat`` (``ahp-chat://default/<base64url(session URI)>`` and kin)
``ahp-terminal:…``        ``terminal``
``ahp-changeset:…``       ``changeset`` (the host expands its own ``uriTemplate``\\ s)
``ahp-resource-watch:…``  ``resourceWatch``
``ahp-automations://``    ``automation`` (the one automation catalogue)
``ahp-automation-run:…``  ``automationRun``
``<session>/annotations`` ``annotations``: a session's annotations channel is its URI plus
                          ``/annotations`` [1.0.0 ``AnnotationsSummary.resource``:
                          ``ahp-session:/<uuid>/annotations``]
other ``ahp-…:`` and      ``None``: reserved for the protocol (``ahp-otlp:``, ``ahp-automation:``
``x-…:`` schemes          entries, ``ahp-canvas:``, ...) or for implementation-defined channels
                          (``x-`` since 0.8.0); none of them is a stateful channel modelled here
any other URI             ``session`` (a candidate; the spec's own ``ahp-session:/<uuid>`` too)
anything else             ``None``
========================  ====================================================================

A URI is well formed when it has an RFC 3986 scheme followed by ``:`` and at least one more
character. Clients may mint terminal and chat URIs under other schemes (VS Code's own terminal
URIs are not ``ahp-terminal:``): those read as session candidates too, which is one more reason
to trust the registry over this table.

Chat URIs: VS Code names a session's chats ``ahp-chat://<name>/<id>``, the default chat being
``ahp-chat://default/<unpadded base64url of the session URI>`` [VERSIONS.md §2].
:func:`default_chat_uri` builds that URI and :func:`session_of_default_chat` inverts it;
:func:`chat_uri` and :func:`parse_chat_uri` do the same for any ``<name>`` whose id is the encoded
session URI. A sub-agent's chat, opened by the tool call that spawned it, is
``ahp-chat://subagent/<unpadded base64url of the session URI>/<percent-encoded tool call id>``, as
VS Code 1.139.1 parses it (its ``chatIdFromResource``): :func:`subagent_chat_uri` builds it,
:func:`parse_subagent_chat_uri` inverts it, and ``parse_chat_uri`` reads its session too. Other
clients may choose chat URIs of other shapes: ``parse_chat_uri`` then answers ``None`` and the
chat's session is whatever the catalogue says.

Every function is total: any input, including non-strings, yields a value, never an exception.
"""

from __future__ import annotations

import base64
import binascii
import re
from functools import lru_cache
from typing import Any, Literal
from urllib.parse import quote, unquote

__all__ = [
    "ANNOTATIONS_SUFFIX",
    "AUTOMATIONS_CHANNEL",
    "CHANNEL_KINDS",
    "ChannelKind",
    "DEFAULT_CHAT_NAME",
    "SUBAGENT_CHAT_NAME",
    "ROOT_CHANNEL",
    "annotations_uri",
    "channel_kind",
    "chat_uri",
    "default_chat_uri",
    "is_well_formed_uri",
    "parse_chat_uri",
    "parse_subagent_chat_uri",
    "session_of_annotations",
    "session_of_default_chat",
    "subagent_chat_uri",
]

ChannelKind = Literal[
    "root", "session", "chat", "terminal", "changeset", "resourceWatch", "annotations", "automation", "automationRun"
]

CHANNEL_KINDS: tuple[ChannelKind, ...] = (
    "root",
    "session",
    "chat",
    "terminal",
    "changeset",
    "resourceWatch",
    "annotations",
    "automation",
    "automationRun",
)
"""Every stateful channel kind of the internal model; each is also its actions' type prefix."""

ROOT_CHANNEL = "ahp-root://"
AUTOMATIONS_CHANNEL = "ahp-automations://"
ANNOTATIONS_SUFFIX = "/annotations"
DEFAULT_CHAT_NAME = "default"
SUBAGENT_CHAT_NAME = "subagent"
_CHAT_PREFIX = "ahp-chat://"

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):(.+)$", re.DOTALL)
_CHAT = re.compile(r"^ahp-chat://([^/?#]+)/([A-Za-z0-9_\-]+)$")
_SUBAGENT_CHAT = re.compile(r"^ahp-chat://subagent/([A-Za-z0-9_\-]+)/([^/?#]+)$")

_BY_SCHEME: dict[str, ChannelKind] = {
    "ahp-chat": "chat",
    "ahp-terminal": "terminal",
    "ahp-changeset": "changeset",
    "ahp-resource-watch": "resourceWatch",
    "ahp-automation-run": "automationRun",
}


def is_well_formed_uri(uri: Any) -> bool:
    """Whether ``uri`` is a string with a scheme and something after the colon."""
    return isinstance(uri, str) and _SCHEME.match(uri) is not None


def _scheme(uri: str) -> str | None:
    match = _SCHEME.match(uri)
    return match.group(1).lower() if match else None


def _reserved(scheme: str) -> bool:
    """Schemes that never name a session: the protocol's own (except the spec's ``ahp-session:``)
    and implementation-defined ones."""
    return (scheme.startswith("ahp-") and scheme != "ahp-session") or scheme.startswith("x-")


def channel_kind(uri: Any) -> ChannelKind | None:
    """The kind of channel ``uri`` names as far as the URI alone can tell (see the module doc);
    ``"session"`` means "a session, if it is a channel at all"."""
    if not isinstance(uri, str):
        return None
    if uri == ROOT_CHANNEL:
        return "root"
    if uri == AUTOMATIONS_CHANNEL:
        return "automation"
    scheme = _scheme(uri)
    if scheme is None:
        return None
    if scheme in _BY_SCHEME:
        return _BY_SCHEME[scheme]
    if _reserved(scheme):
        return None
    if session_of_annotations(uri) is not None:
        return "annotations"
    return "session"


def annotations_uri(session_uri: str) -> str:
    """The annotations channel of ``session_uri``."""
    return session_uri + ANNOTATIONS_SUFFIX


def session_of_annotations(uri: Any) -> str | None:
    """The session whose annotations channel ``uri`` is; ``None`` when it is not one."""
    if not isinstance(uri, str) or not uri.endswith(ANNOTATIONS_SUFFIX):
        return None
    session = uri[: -len(ANNOTATIONS_SUFFIX)]
    scheme = _scheme(session) if session else None
    if scheme is None or scheme in _BY_SCHEME or _reserved(scheme):
        return None
    return session


def chat_uri(session_uri: str, name: str = DEFAULT_CHAT_NAME) -> str:
    """``ahp-chat://<name>/<unpadded base64url of session_uri>`` (UTF-8 encoded)."""
    return f"{_CHAT_PREFIX}{name}/{_encoded(session_uri)}"


def default_chat_uri(session_uri: str) -> str:
    """The URI of ``session_uri``'s default chat (VS Code's convention)."""
    return chat_uri(session_uri, DEFAULT_CHAT_NAME)


def _encoded(session_uri: str) -> str:
    return base64.urlsafe_b64encode(session_uri.encode("utf-8")).decode("ascii").rstrip("=")


def _decoded(encoded: str) -> str | None:
    try:
        session = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return session if is_well_formed_uri(session) else None


def parse_chat_uri(uri: Any) -> tuple[str, str] | None:
    """``(name, session URI)`` of a URI :func:`chat_uri` or :func:`subagent_chat_uri` could have
    built (the name of a sub-agent's chat is ``subagent``); ``None`` otherwise.

    Only canonical encodings are accepted (building the URI again from the result gives ``uri``
    back), and the decoded session must be a well-formed URI.

    Answers are remembered for the 4,096 strings last asked about (whatever URIs clients send):
    the 0.2.0 projection asks this for every streamed token, and the answer depends on the string
    alone.
    """
    return _parse_chat_uri(uri) if isinstance(uri, str) else None



@lru_cache(maxsize=4096)
def _parse_chat_uri(uri: str) -> tuple[str, str] | None:
    spawned = parse_subagent_chat_uri(uri)
    if spawned is not None:
        return SUBAGENT_CHAT_NAME, spawned[0]
    match = _CHAT.match(uri)
    if match is None:
        return None
    name, encoded = match.groups()
    session = _decoded(encoded)
    if session is None or chat_uri(session, name) != uri:
        return None
    return name, session


def subagent_chat_uri(session_uri: str, tool_call_id: str) -> str:
    """``ahp-chat://subagent/<unpadded base64url of session_uri>/<percent-encoded tool_call_id>``:
    the chat of the sub-agent the tool call ``tool_call_id`` spawned in ``session_uri``."""
    return f"{_CHAT_PREFIX}{SUBAGENT_CHAT_NAME}/{_encoded(session_uri)}/{quote(tool_call_id, safe='')}"


def parse_subagent_chat_uri(uri: Any) -> tuple[str, str] | None:
    """``(session URI, tool call id)`` of a URI :func:`subagent_chat_uri` could have built (canonical
    encodings only); ``None`` otherwise."""
    if not isinstance(uri, str):
        return None
    match = _SUBAGENT_CHAT.match(uri)
    if match is None:
        return None
    encoded, quoted = match.groups()
    session = _decoded(encoded)
    tool_call_id = unquote(quoted)
    if session is None or not tool_call_id or subagent_chat_uri(session, tool_call_id) != uri:
        return None
    return session, tool_call_id


def session_of_default_chat(uri: Any) -> str | None:
    """The session whose default chat ``uri`` is (inverse of :func:`default_chat_uri`)."""
    parsed = parse_chat_uri(uri)
    if parsed is None or parsed[0] != DEFAULT_CHAT_NAME:
        return None
    return parsed[1]
