"""Pure helpers that build the internal model's (AHP 0.9.0) session and chat states.

A session is two kinds of channel: the session channel (``<provider>:/<id>``: metadata, the
``chats`` catalogue, ``defaultChat``, ``activeClients``, config, customizations) and its chats
(``ahp-chat:`` URIs: turns, the active turn, pending messages, draft). Every session has a default
chat at ``ahp.state.default_chat_uri(session)``, made with it. Nothing here touches the store or
the clock; callers pass ``now`` (epoch ms) and ids. Timestamps in state are ISO 8601
(``ahp.state.clock``).

0.2.0 clients name a session ``ahp-session:/<id>``; inside it is ``<provider>:/<id>``
(``internal_session_uri``), and ``session_id`` is the ``<id>`` that must be unique across
providers.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from ahp.state import default_chat_uri
from ahp.state.clock import iso_timestamp
from host.state.chat_summaries import summary_of_chat

__all__ = [
    "DEFAULT_TITLE",
    "SESSION_SCHEME",
    "chat_summary",
    "forked_turns",
    "internal_session_uri",
    "is_session_uri",
    "new_chat_state",
    "new_session_state",
    "session_id",
]

SESSION_SCHEME = "ahp-session:/"
DEFAULT_TITLE = "New Session"

_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_PROVIDER = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,63}")


def is_session_uri(uri: Any) -> bool:
    """``ahp-session:/`` and a safe id: a UUID, or up to 128 letters, digits, ``.``, ``_`` and ``-``
    starting with a letter or digit. Nothing that could be a path (``../``), a control or bidi
    character, NUL, markup or a megabyte of text reaches state, logs or clients' screens."""
    return isinstance(uri, str) and uri.startswith(SESSION_SCHEME) and _SAFE_ID.fullmatch(uri[len(SESSION_SCHEME):]) is not None


def session_id(uri: Any) -> str | None:
    """The ``<id>`` of ``ahp-session:/<id>`` or of an internal ``<provider>:/<id>`` with a safe id;
    ``None`` for anything else."""
    if not isinstance(uri, str) or ":/" not in uri:
        return None
    scheme, rest = uri.split(":/", 1)
    if not (_PROVIDER.fullmatch(scheme) or scheme == "ahp-session") or rest.startswith("/"):
        return None
    return rest if _SAFE_ID.fullmatch(rest) else None


def internal_session_uri(provider: str, uri: str) -> str | None:
    """``<provider>:/<id>`` for a session named ``ahp-session:/<id>`` or ``<provider>:/<id>``;
    ``None`` when ``uri`` has no safe id or names another provider."""
    ident = session_id(uri)
    if ident is None or not _PROVIDER.fullmatch(provider):
        return None
    if not uri.startswith(SESSION_SCHEME) and uri.split(":/", 1)[0] != provider:
        return None
    return f"{provider}:/{ident}"


def new_session_state(
    uri: str,
    *,
    provider: str,
    working_directory: str | None = None,
    title: str = DEFAULT_TITLE,
    customizations: list[dict[str, Any]] | None = None,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A session channel's state while it is being created, its default chat in the catalogue."""
    chat = default_chat_uri(uri)
    state: dict[str, Any] = {
        "provider": provider,
        "title": title,
        "status": 1,
        "lifecycle": "creating",
        "activeClients": [],
        "chats": [{"resource": chat, "title": title, "status": 1}],
        "defaultChat": chat,
    }
    if working_directory is not None:
        state["workingDirectories"] = [working_directory]
    if customizations is not None:
        state["customizations"] = customizations
    if config is not None:
        state["config"] = config
    return state


def new_chat_state(
    uri: str,
    *,
    now: int,
    title: str = DEFAULT_TITLE,
    turns: list[dict[str, Any]] | None = None,
    draft: dict[str, Any] | None = None,
    origin: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A chat channel's state: no active turn, ``turns`` (e.g. a fork's) and a draft holding the
    model/agent the next message will use."""
    state: dict[str, Any] = {
        "resource": uri,
        "title": title,
        "status": 1,
        "modifiedAt": iso_timestamp(now),
        "turns": list(turns or []),
    }
    if draft is not None:
        state["draft"] = draft
    if origin is not None:
        state["origin"] = origin
    return state


def chat_summary(chat: dict[str, Any]) -> dict[str, Any]:
    """The ``SessionChatSummary`` of a chat state, for ``session/chatAdded``."""
    return summary_of_chat(chat["resource"], chat)


def forked_turns(source: dict[str, Any], turn_id: str | None) -> list[dict[str, Any]] | None:
    """The chat's completed turns up to and including ``turn_id``; None if it has no such turn."""
    turns = source.get("turns") or []
    for index, turn in enumerate(turns):
        if turn.get("id") == turn_id:
            return copy.deepcopy(turns[: index + 1])
    return None
