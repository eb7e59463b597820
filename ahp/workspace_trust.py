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
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from typing import Any

__all__ = [
    "CONFIG_KEY",
    "CONFIG_PROPERTY",
    "DONT_TRUST",
    "QUESTION_ID",
    "REQUEST_PREFIX",
    "TRUST_FOLDER",
    "TRUST_SESSION",
    "covers",
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

CONFIG_PROPERTY: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string", "title": "Folder"},
    "title": "Trusted folders",
    "description": "Folders whose hooks, .mcp.json servers and plugins this host runs (each with everything "
    "below it). Remove a folder to revoke trust: its sessions stop running them at once. Adding one trusts it "
    "without asking.",
    "default": [],
}
"""The root config schema property that lists trusted folders."""


def trust_request(request_id: str, folder: str, extras: Iterable[str]) -> dict[str, Any]:
    """The question for ``folder`` (an absolute path); ``extras`` says, one line each, what waits."""
    listed = "\n".join(f"- {line}" for line in extras)
    message = (f"Do you trust the files in {folder}? This folder brings things that run commands on this machine:\n"
               f"{listed}\nUntil you trust it, they do not run; the session works without them.")
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
