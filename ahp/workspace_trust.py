"""Workspace trust on the wire: the question the host asks before anything a folder brings runs,
and the root config key that lists the folders a user trusts. Pure: no I/O.

The host and every client share these shapes, so that any client can answer the question and
list or revoke trust without knowing the host's internals:

* **The question** is an ordinary chat input request (AHP 0.9.0 ``ChatInputRequest``; in 0.2.0 a
  session ``inputRequests`` entry) whose ``id`` starts with :data:`REQUEST_PREFIX`. It has one
  required ``single-select`` question, :data:`QUESTION_ID`, whose options are
  :data:`TRUST_FOLDER` (remembered by the host), :data:`TRUST_SESSION` (this session only) and
  :data:`DONT_TRUST`. ``response: "decline"`` or ``"cancel"`` means the same as
  :data:`DONT_TRUST`. ``trust_request`` builds it, ``is_trust_request`` recognises it,
  ``trust_choice`` reads the answer and ``trust_answers`` builds one.
* **The list** is ``RootState.config.values[CONFIG_KEY]``: absolute folder paths. A folder is
  trusted when it, or a folder above it, is in the list. A client revokes trust by dispatching
  ``root/configChanged`` with the list minus that folder (``without_folder``); adding a folder the
  same way trusts it, exactly as answering the question with :data:`TRUST_FOLDER` does.
* **A client's own workspace trust** is ``RootState.config.values[FORWARDED_KEY]``
  (``workspaceTrust``), the shape VS Code forwards to every agent host:
  ``{"enabled": bool, "trustedUris": ["file:///..."]}`` (:data:`FORWARDED_PROPERTY`, read-only to
  users: the client sets it from its own trust settings). ``forwarded_trust`` reads it, and
  ``forwarded_value_problem`` says why a value cannot be kept. No value means the client vouches for
  nothing; ``enabled: false`` means the user switched the client's workspace trust off, which
  trusts every folder (as VS Code's own agent host reads it) unless the host follows only listed
  folders (:data:`FOLLOW_FOLDERS`) or ignores it (:data:`FOLLOW_NONE`).
* **Where trust comes from**: ``trust_source`` combines the sources, in the order it reports them:
  the host's own config (:data:`BY_CONFIG`), the root list (:data:`BY_LIST`), the folders a client
  forwarded (:data:`BY_CLIENT`), a client's switched-off workspace trust (:data:`BY_CLIENT_OFF`).
  Every source only adds: the forwarded value cannot revoke what the list or the config trusts.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = [
    "MAX_TRUSTED_FOLDERS",
    "BY_CLIENT",
    "BY_CLIENT_OFF",
    "BY_CONFIG",
    "BY_LIST",
    "FOLLOW_ALL",
    "FOLLOW_FOLDERS",
    "FOLLOW_NONE",
    "FORWARDED_KEY",
    "FORWARDED_PROPERTY",
    "ForwardedTrust",
    "SOURCE_WORDS",
    "CONFIG_KEY",
    "CONFIG_PROPERTY",
    "DONT_TRUST",
    "QUESTION_ID",
    "REQUEST_PREFIX",
    "TRUST_FOLDER",
    "TRUST_SESSION",
    "covers",
    "forwarded_trust",
    "forwarded_value_problem",
    "trust_source",
    "uri_folder",
    "is_trust_request",
    "trust_answers",
    "trust_choice",
    "trust_request",
    "trusted_folders",
    "WAITING",
    "with_folder",
    "without_folder",
]

REQUEST_PREFIX = "workspace-trust:"
"""The id of every trust question starts with this."""
QUESTION_ID = "trust"
TRUST_FOLDER = "trust-folder"
TRUST_SESSION = "trust-session"
DONT_TRUST = "dont-trust"
CONFIG_KEY = "trustedFolders"
WAITING = "Waiting for trust"
"""How the load-state message of a customization that waits for its folder to be trusted begins."""

MAX_TRUSTED_FOLDERS = 1000
"""Trusted folders the root config keeps at most (advertised as the property's ``maxItems``)."""

CONFIG_PROPERTY: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string", "title": "Folder"},
    "maxItems": MAX_TRUSTED_FOLDERS,
    "title": "Trusted folders",
    "description": "Folders whose hooks, .mcp.json servers and plugins this host runs (each with everything "
    "below it). Remove a folder to revoke trust: its sessions stop running them at once. Adding one trusts it "
    "without asking.",
    "default": [],
}
"""The root config schema property that lists trusted folders."""

FORWARDED_KEY = "workspaceTrust"
FORWARDED_PROPERTY: dict[str, Any] = {
    "type": "object",
    "title": "Workspace Trust",
    "description": "The workspace trust of the client (VS Code forwards its own): the folders trusted there "
    "(file: URIs) are trusted here too, each with everything below it; enabled false (the client's workspace "
    "trust is switched off) trusts every folder. It only adds to trustedFolders, never revokes them.",
    "properties": {
        "enabled": {"type": "boolean", "title": "Enabled"},
        "trustedUris": {"type": "array", "title": "Trusted Folders", "items": {"type": "string", "title": "Folder URI"}},
    },
    "required": ["enabled", "trustedUris"],
    "readOnly": True,
}
"""The root config schema property a client forwards its own workspace trust in (VS Code's shape;
read-only to users, set by the client)."""

MAX_FORWARDED_URIS = 1000
"""Folder URIs a forwarded workspace trust may list at most."""

FOLLOW_ALL = "follow"
"""Honour a client's workspace trust as it says: its folders, and every folder when it is switched off."""
FOLLOW_FOLDERS = "folders"
"""Honour only the folders a client's workspace trust lists (switched off, it does not trust every folder)."""
FOLLOW_NONE = "ignore"
"""Ignore a client's workspace trust."""

BY_CONFIG = "config"
BY_LIST = "list"
BY_CLIENT = "client"
BY_CLIENT_OFF = "client-off"
SOURCE_WORDS = {
    BY_CONFIG: "the host's own config ([trust])",
    BY_LIST: "the host's trusted folders",
    BY_CLIENT: "the client's workspace trust (VS Code's trusted folders)",
    BY_CLIENT_OFF: "the client's workspace trust being switched off (VS Code: every folder)",
}
"""How each trust source reads in a sentence ("trusted by ...")."""


def trust_request(request_id: str, folder: str, extras: Iterable[str], *, note: str | None = None) -> dict[str, Any]:
    """The question for ``folder`` (an absolute path); ``extras`` says, one line each, what waits;
    ``note`` is a last sentence (where else the folder can be trusted)."""
    listed = "\n".join(f"- {line}" for line in extras)
    message = (f"Do you trust the files in {folder}? This folder brings things that run commands on this machine:\n"
               f"{listed}\nUntil you trust it, they do not run; the session works without them." + (f"\n{note}" if note else ""))
    return {
        "id": request_id,
        "message": message,
        "questions": [{
            "id": QUESTION_ID,
            "kind": "single-select",
            "title": "Trust this folder?",
            "message": f"Run what {folder} brings?",
            "required": True,
            "options": [
                {"id": TRUST_FOLDER, "label": "Trust this folder", "description": "Remembered by the host; revoke it any time"},
                {"id": TRUST_SESSION, "label": "Trust it for this session only"},
                {"id": DONT_TRUST, "label": "Don't trust it", "description": "The session works without them", "recommended": True},
            ],
        }],
    }


def is_trust_request(request: Any) -> bool:
    return isinstance(request, dict) and isinstance(request.get("id"), str) and request["id"].startswith(REQUEST_PREFIX)


def trust_choice(response: Any, answers: Any) -> str:
    """What an ``inputCompleted`` answers: one of the three option ids (anything unclear: don't)."""
    if response != "accept" or not isinstance(answers, dict):
        return DONT_TRUST
    answer = answers.get(QUESTION_ID)
    value = answer.get("value") if isinstance(answer, dict) and answer.get("state") == "submitted" else None
    chosen = value.get("value") if isinstance(value, dict) else None
    return chosen if chosen in (TRUST_FOLDER, TRUST_SESSION) else DONT_TRUST


def trust_answers(choice: str) -> dict[str, Any]:
    """The ``answers`` of an ``inputCompleted`` that picks ``choice``."""
    return {QUESTION_ID: {"state": "submitted", "value": {"kind": "selected", "value": choice}}}


def trusted_folders(root_config: Any) -> list[str]:
    """The trusted folders a root ``config`` state lists (malformed entries skipped)."""
    values = root_config.get("values") if isinstance(root_config, dict) else None
    listed = values.get(CONFIG_KEY) if isinstance(values, dict) else None
    return [item for item in listed or () if isinstance(item, str) and item] if isinstance(listed, list) else []


def covers(trusted: str, folder: str) -> bool:
    """Whether trusting ``trusted`` trusts ``folder`` (the same folder or one below it; both
    absolute, already resolved)."""
    trusted = posixpath.normpath(trusted)
    folder = posixpath.normpath(folder)
    return folder == trusted or folder.startswith(trusted.rstrip("/") + "/")


def without_folder(listed: Iterable[str], folder: str) -> list[str]:
    """``listed`` without ``folder`` (compared as normalised paths): the value that revokes it."""
    gone = posixpath.normpath(folder)
    return [item for item in listed if posixpath.normpath(item) != gone]


def with_folder(listed: Iterable[str], folder: str) -> list[str]:
    """``listed`` plus ``folder`` unless it is already trusted through it: the value that trusts it."""
    listed = list(listed)
    return listed if any(covers(item, folder) for item in listed) else [*listed, posixpath.normpath(folder)]


@dataclass(frozen=True)
class ForwardedTrust:
    """A client's workspace trust, as forwarded in the root config."""

    enabled: bool
    """False: the user switched the client's workspace trust off (it trusts every folder)."""
    folders: tuple[str, ...]
    """The absolute paths of the folders it trusts (its ``file:`` URIs; others skipped)."""


def uri_folder(uri: str) -> str | None:
    """The absolute path a ``file:`` URI names (``file:///a%20b`` → ``/a b``), or None for any
    other URI (another scheme, a remote authority, no absolute path)."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return None
    if parts.scheme != "file" or parts.netloc not in ("", "localhost") or parts.query or parts.fragment:
        return None
    path = unquote(parts.path)
    return posixpath.normpath(path) if posixpath.isabs(path) and "\0" not in path else None


def forwarded_value_problem(value: Any) -> str | None:
    """Why a ``workspaceTrust`` value cannot be kept, else None (the declared ``object`` type is
    checked before)."""
    if not isinstance(value, dict):
        return None
    if not isinstance(value.get("enabled"), bool):
        return "must say whether workspace trust is enabled (enabled: true or false)"
    uris = value.get("trustedUris")
    if not isinstance(uris, list):
        return "must list the trusted folders as trustedUris (a list of file: URIs)"
    if len(uris) > MAX_FORWARDED_URIS:
        return f"must list at most {MAX_FORWARDED_URIS} trusted folders"
    for uri in uris:
        if not isinstance(uri, str) or uri_folder(uri) is None:
            return f"must list file: URIs of folders (such as file:///home/me/project), not {str(uri)[:80]!r}"
    return None


def forwarded_trust(root_config: Any) -> ForwardedTrust | None:
    """The workspace trust a client forwarded in a root ``config`` state, or None (none, or malformed)."""
    values = root_config.get("values") if isinstance(root_config, dict) else None
    value = values.get(FORWARDED_KEY) if isinstance(values, dict) else None
    if not isinstance(value, dict) or forwarded_value_problem(value) is not None:
        return None
    folders = (uri_folder(uri) for uri in value["trustedUris"])
    return ForwardedTrust(enabled=value["enabled"], folders=tuple(folder for folder in folders if folder))


def trust_source(folder: str, *, configured: Sequence[str] = (), listed: Sequence[str] = (),
                 forwarded: ForwardedTrust | None = None, follow: str = FOLLOW_ALL) -> str | None:
    """What trusts ``folder`` (one of the ``BY_*`` sources, the first in that order), or None.

    All paths are absolute and already resolved by the caller. A client's forwarded trust counts as
    ``follow`` says; it only ever adds to the other sources."""
    if any(covers(trusted, folder) for trusted in configured):
        return BY_CONFIG
    if any(covers(trusted, folder) for trusted in listed):
        return BY_LIST
    if forwarded is None or follow == FOLLOW_NONE:
        return None
    if forwarded.enabled or follow == FOLLOW_FOLDERS:
        return BY_CLIENT if any(covers(trusted, folder) for trusted in forwarded.folders) else None
    return BY_CLIENT_OFF
