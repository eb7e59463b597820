"""Remembered *Always allow* choices on the wire: their scope, and how clients list and revoke them.

**Scope.** An *Always allow* choice applies to the project it was given in. A session's project is
``project_root(working directory)``: the nearest enclosing directory (the working directory
itself included) that holds ``.git``, so a session started in a subdirectory of a repository shares
the repository's choices; without one, the working directory itself. A choice applies to sessions
whose project is exactly that directory, never to its parent or to unrelated directories. Choices
kept by an earlier version had no directory: they stay host-wide (every project) and are shown as
such (``host.runtime.tools.settings`` migrates them).

**Listing and revoking: the root config.** The host declares the root config property
``rememberedApprovals`` (``ROOT_PROPERTY``) and keeps its value equal to the stored choices, in the
order they were given: ``[{"rule", "scope": "project" | "host", "project": absolute path (project
scope only), "addedAt": ms}]``. Every AHP client already subscribes to the root and mirrors its config, so
every client (VS Code, the terminal client, a 0.2.0 or 0.7.0 client, a script) lists them with no new
method, sees a choice the moment another client or a confirmation adds it, and revokes one with the
action it already has: ``root/configChanged`` whose ``rememberedApprovals`` is the list without
that entry. Only removal works this way: an entry the host does not remember is dropped again (so
two clients revoking at once cannot bring back what the other removed), and the host answers any
change by publishing its list again. Adding is done by answering a confirmation, or host-wide by
the ``[tools] allow`` rules of the config file. A change that leaves the key out (``replace``
without it) revokes nothing; the host puts the list back. A malformed value is refused with an
error that says what the list holds (``value_problem``, used by the validation of every dialect).

This file is pure except ``project_root``, which looks for ``.git`` on disk.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .settings import MAX_REMEMBERED, Remembered

__all__ = ["ROOT_KEY", "ROOT_PROPERTY", "Scope", "entry", "entries", "project_root", "revoked", "scope_of", "shown_path", "value_problem"]

ROOT_KEY = "rememberedApprovals"
ROOT_PROPERTY: dict[str, Any] = {
    "type": "array",
    "title": "Remembered approvals",
    "description": "The 'Always allow' choices this host remembers, each for one project (scope 'project', with its "
                   "directory) or for every project (scope 'host'). Remove an entry to revoke it; entries are added "
                   "by answering a tool confirmation.",
    "maxItems": MAX_REMEMBERED,
    "items": {
        "type": "object",
        "title": "Remembered approval",
        "properties": {
            "rule": {"type": "string", "title": "Rule", "description": "What it allows: 'tool' or 'tool(pattern)'."},
            "scope": {"type": "string", "title": "Scope", "enum": ["project", "host"],
                      "enumLabels": ["This project", "Every project (host-wide)"]},
            "project": {"type": "string", "title": "Project", "description": "The project's directory (an absolute path)."},
            "addedAt": {"type": "number", "title": "Added", "description": "When it was chosen (ms since the epoch)."},
        },
        "required": ["rule", "scope"],
    },
    "default": [],
}

Scope = tuple[str, str | None]
"""(rule, project path or None for host-wide): what identifies one remembered choice."""


def project_root(directory: Path) -> Path:
    """The project a working directory belongs to (see the module docstring)."""
    for candidate in (directory, *directory.parents):
        if os.path.lexists(candidate / ".git"):
            return candidate
    return directory


def shown_path(path: str) -> str:
    """A project path as people read it: the home directory as ``~``."""
    home = os.path.expanduser("~")
    if home not in ("", "/") and (path == home or path.startswith(home.rstrip("/") + "/")):
        return "~" + path[len(home.rstrip("/")):]
    return path


def entry(rule: str, project: str | None, added_at: int | None = None) -> dict[str, Any]:
    """One wire entry (also the ``_meta`` a call allowed by it carries, without ``addedAt``)."""
    value: dict[str, Any] = {"rule": rule, "scope": "project" if project else "host"}
    if project:
        value["project"] = project
    if added_at is not None:
        value["addedAt"] = added_at
    return value


def entries(remembered: Iterable[Remembered]) -> list[dict[str, Any]]:
    return [entry(item.rule, item.project, item.added_at) for item in remembered]


def scope_of(value: Any) -> Scope | None:
    """The identity of a well-formed wire entry, else None."""
    if not isinstance(value, dict) or not isinstance(value.get("rule"), str):
        return None
    if value.get("scope") == "host":
        return (value["rule"], None)
    project = value.get("project")
    if value.get("scope") == "project" and isinstance(project, str) and posixpath.isabs(project) and "\0" not in project:
        return (value["rule"], project)
    return None


def value_problem(value: Any) -> str | None:
    """Why a client's ``rememberedApprovals`` value is malformed, or None."""
    if not isinstance(value, list):
        return "must be the list of remembered approvals (remove an entry to revoke it)"
    if len(value) > MAX_REMEMBERED:
        return f"holds at most {MAX_REMEMBERED} entries (this host remembers no more)"
    for index, item in enumerate(value):
        if scope_of(item) is None:
            return (f"entry {index} must be an object with 'rule' and 'scope' ('host', or 'project' with the "
                    "project's absolute path in 'project'), as the host lists them")
    return None


def revoked(current: Iterable[Remembered], value: Any) -> list[Scope]:
    """The stored choices a client's new ``rememberedApprovals`` value leaves out (none when the
    value is absent or malformed: only an explicit list revokes)."""
    if not isinstance(value, list):
        return []
    kept = {scope_of(item) for item in value}
    return [(item.rule, item.project) for item in current if (item.rule, item.project) not in kept]
