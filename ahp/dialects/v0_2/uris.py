"""Channel URIs between the two models.

A 0.2.0 client names a session ``ahp-session:/<id>`` (the provider travels in the summary); the
internal (0.9.0) model names it ``<provider>:/<id>`` (the URI scheme is the provider id). The two
names of one session share ``<id>``:

    internal ``<provider>:/<id>``  <->  0.2.0 ``ahp-session:/<id>``

so a session made by a 0.9.0 client (``copilot:/6f1c...``) is ``ahp-session:/6f1c...`` to 0.2.0
clients, and one made by a 0.2.0 client at ``ahp-session:/abc`` with provider ``p`` is ``p:/abc``
to 0.9.0 clients.

Contract:

* ``v02_session_uri`` is total and needs nothing but the internal URI. An internal URI that is not
  ``<scheme>:/<rest>`` has no 0.2.0 name (``None``): such a session is invisible to 0.2.0 clients.
* Going up needs the provider, which the 0.2.0 name does not carry. ``internal_session_uri`` takes it
  from a lookup function the host passes in (``provider_of(id) -> provider | None``, e.g. its
  session table); everything here stays pure. The mapping is a bijection over the host's sessions as
  long as no two sessions share an ``<id>`` under different providers: the host must refuse such a
  ``createSession`` (-32003), whichever version asked for it.
* Chats: the default chat of an internal session ``S`` is ``ahp-chat://default/<b64url(S)>``
  (unpadded base64url of ``S``'s UTF-8 bytes), as VS Code 1.139.1 names it; ``default_chat_uri``
  and ``session_of_default_chat`` are the internal model's (``ahp.state.channels``), re-exported.
  0.2.0 has no chat channels: a chat URI only tells which session a chat action belongs to.
* Sub-agents: a sub-agent's chat (``ahp-chat://subagent/<b64url(S)>/<tool call id>``, a chat of
  ``S``) is shown to 0.2.0, which has no chats, as a session of its own (a *projected* session:
  no such session channel exists). Its internal name is ``S/subagent/<percent-encoded tool call
  id>`` (``subagent_session_uri``), so its 0.2.0 name is
  ``ahp-session:/<id of S>/subagent/<percent-encoded tool call id>``: a name no client can create
  (``/`` is not allowed in a created session's id), much like the ``<session>/subagent/<call>``
  name VS Code gives a restored sub-agent. ``subagent_chat_of`` inverts either name.
* Root, terminal, changeset and resource-watch URIs are the same strings in both models.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote, unquote

from ahp.state.channels import (
    ROOT_CHANNEL,
    default_chat_uri,
    parse_subagent_chat_uri,
    session_of_default_chat,
    subagent_chat_uri,
)

__all__ = [
    "ProviderLookup",
    "ROOT_CHANNEL",
    "SUBAGENT_SEGMENT",
    "V02_SESSION_PREFIX",
    "default_chat_uri",
    "internal_session_uri",
    "session_id",
    "session_of_default_chat",
    "subagent_chat_of",
    "subagent_session_uri",
    "v02_session_uri",
]

V02_SESSION_PREFIX = "ahp-session:/"
SUBAGENT_SEGMENT = "/subagent/"

ProviderLookup = Callable[[str], "str | None"]
"""``provider_of(session_id)``: the provider of the host's session with that id, ``None`` if none."""


def session_id(v02_uri: object) -> str | None:
    """The ``<id>`` of a 0.2.0 session URI ``ahp-session:/<id>``; ``None`` for anything else."""
    if isinstance(v02_uri, str) and v02_uri.startswith(V02_SESSION_PREFIX) and len(v02_uri) > len(V02_SESSION_PREFIX):
        return v02_uri[len(V02_SESSION_PREFIX):]
    return None


def _split_internal(internal_uri: object) -> tuple[str, str] | None:
    """``(provider, id)`` of ``<provider>:/<id>``; ``None`` when the URI has another shape."""
    if not isinstance(internal_uri, str):
        return None
    scheme, colon, rest = internal_uri.partition(":")
    if not colon or not scheme or not rest.startswith("/") or len(rest) < 2:
        return None
    return scheme, rest[1:]


def v02_session_uri(internal_uri: object) -> str | None:
    """The 0.2.0 name ``ahp-session:/<id>`` of the internal session ``<provider>:/<id>``."""
    parts = _split_internal(internal_uri)
    return None if parts is None else V02_SESSION_PREFIX + parts[1]


def internal_session_uri(v02_uri: object, provider_of: ProviderLookup | str) -> str | None:
    """The internal name of a 0.2.0 session URI; ``provider_of`` is the host's lookup, or the
    provider itself when the caller knows it (e.g. from a 0.2.0 summary). ``None`` when ``v02_uri``
    is not a 0.2.0 session URI or the lookup knows no such session."""
    ident = session_id(v02_uri)
    if ident is None:
        return None
    provider = provider_of if isinstance(provider_of, str) else provider_of(ident)
    if not isinstance(provider, str) or not provider:
        return None
    return f"{provider}:/{ident}"


def subagent_session_uri(chat_uri: object) -> str | None:
    """The internal name of the session 0.2.0 is shown for a sub-agent's chat,
    ``<session>/subagent/<percent-encoded tool call id>``; ``None`` for any other chat."""
    parsed = parse_subagent_chat_uri(chat_uri)
    if parsed is None or _split_internal(parsed[0]) is None:
        return None
    return parsed[0] + SUBAGENT_SEGMENT + quote(parsed[1], safe="")


def subagent_chat_of(uri: object, provider_of: ProviderLookup | str | None = None) -> str | None:
    """The sub-agent chat a projected session name stands for: ``uri`` is its internal name
    (``<provider>:/<id>/subagent/<call>``) or, with ``provider_of`` (as in
    ``internal_session_uri``), its 0.2.0 name. ``None`` when ``uri`` is neither."""
    if not isinstance(uri, str):
        return None
    if session_id(uri) is not None:
        if provider_of is None:
            return None
        ident = session_id(uri) or ""
        parent_id, found, quoted = ident.rpartition(SUBAGENT_SEGMENT[1:])
        if not found or not parent_id.endswith("/") or len(parent_id) < 2:
            return None
        parent = internal_session_uri(V02_SESSION_PREFIX + parent_id[:-1], provider_of)
    else:
        parent, found, quoted = uri.rpartition(SUBAGENT_SEGMENT)
        if not found or _split_internal(parent) is None:
            return None
    if parent is None or not quoted or quote(unquote(quoted), safe="") != quoted:
        return None
    chat = subagent_chat_uri(parent, unquote(quoted))
    return chat if subagent_session_uri(chat) is not None else None
