"""The ``completions`` command for a user message being typed (AHP ``kind: userMessage``).

Contract:
- ``offset`` and every returned ``rangeStart``/``rangeEnd`` are UTF-16 code units (an emoji
  before the cursor counts 2), converted at this boundary only.
- The word being completed runs from the last whitespace before the cursor to the cursor.
  ``/prefix`` at the very start of the message completes usable skills, commands and prompts
  (``insertText`` = ``/name `` and a ``simple`` attachment describing what will run); ``@prefix``
  anywhere completes files and folders under the working directory (``resource`` attachment
  with the file URI), walking at most ``SCAN_LIMIT`` entries, skipping ``.git`` and other
  dot-folders unless the prefix names them, and returning at most ``ITEM_LIMIT`` items.
  ``@prefix`` also completes the resources of the session's running MCP servers
  (``resources``: ``(server, uri, name)``) as ``@server:uri`` (Claude Code's form), matched on
  ``server:uri`` or the resource name, listed before the files once the prefix has a ``:``, after
  them otherwise; their attachment is a ``resource`` whose ``_meta.mcpServer`` names the server
  (the turn reads it from there, see ``contributor``).
- Anything else returns no items: completions are best effort, never an error.
- ``TRIGGER_CHARACTERS`` are the characters that start a completable word; ``initialize`` tells
  clients (``completionTriggerCharacters``), so they ask as the user types one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import plugins
from ahp.text_offsets import index_to_utf16, utf16_to_index

__all__ = ["complete_user_message", "ITEM_LIMIT", "SCAN_LIMIT", "TRIGGER_CHARACTERS"]

TRIGGER_CHARACTERS = ("/", "@")
"""What begins a word this module completes: ``/`` commands and skills, ``@`` files and resources."""

ITEM_LIMIT = 50
SCAN_LIMIT = 5000
_SKIPPED = {".git", "node_modules", "__pycache__", ".venv", ".hg", ".svn"}


def complete_user_message(text: str, offset: int, *, entries: list[plugins.SlashEntry],
                          working_directory: Path | None,
                          resources: Sequence[tuple[str, str, str]] = ()) -> list[dict[str, Any]]:
    cursor = utf16_to_index(text, max(0, int(offset)))
    start = cursor
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    word = text[start:cursor]
    range_start, range_end = index_to_utf16(text, start), index_to_utf16(text, cursor)
    if word.startswith("/") and not text[:start].strip():
        return [_slash_item(entry, range_start, range_end) for entry in plugins.complete_slash(word, entries)[:ITEM_LIMIT]]
    if word.startswith("@"):
        typed = word[1:]
        mcp = [_resource_item(server, uri, name, range_start, range_end)
               for server, uri, name in _resources(resources, typed)]
        files = ([_file_item(path, working_directory, range_start, range_end) for path in _files(working_directory, typed)]
                 if working_directory is not None and working_directory.is_dir() else [])
        return (mcp + files if ":" in typed else files + mcp)[:ITEM_LIMIT]
    return []


def _resources(resources: Sequence[tuple[str, str, str]], typed: str) -> list[tuple[str, str, str]]:
    typed_lower = typed.lower()
    first = [r for r in resources if f"{r[0]}:{r[1]}".lower().startswith(typed_lower)]
    then = [r for r in resources if r not in first and typed_lower and typed_lower in r[2].lower()]
    return (first + then)[:ITEM_LIMIT]


def _resource_item(server: str, uri: str, name: str, start: int, end: int) -> dict[str, Any]:
    attachment: dict[str, Any] = {"type": "resource", "label": f"{server}:{name or uri}", "uri": uri,
                                  "displayKind": "document", "_meta": {"mcpServer": server}}
    return {"insertText": f"@{server}:{uri} ", "rangeStart": start, "rangeEnd": end, "attachment": attachment}


def _slash_item(entry: plugins.SlashEntry, start: int, end: int) -> dict[str, Any]:
    label = f"/{entry.name}"
    representation = f"The user invoked the {entry.kind} {entry.name}"
    if entry.description:
        representation += f": {entry.description}"
    attachment: dict[str, Any] = {"type": "simple", "label": label, "displayKind": entry.kind,
                                  "modelRepresentation": representation,
                                  "_meta": {"slash": entry.name, "kind": entry.kind}}
    return {"insertText": f"/{entry.name} ", "rangeStart": start, "rangeEnd": end, "attachment": attachment}


def _file_item(path: Path, root: Path, start: int, end: int) -> dict[str, Any]:
    relative = path.relative_to(root).as_posix()
    is_dir = path.is_dir()
    attachment: dict[str, Any] = {"type": "resource", "label": relative + ("/" if is_dir else ""),
                                  "uri": path.absolute().as_uri(), "displayKind": "directory" if is_dir else "document"}
    if not is_dir:
        try:
            attachment["sizeHint"] = path.stat().st_size
        except OSError:
            pass
    return {"insertText": f"@{relative}" + ("/" if is_dir else " "), "rangeStart": start, "rangeEnd": end,
            "attachment": attachment}


def _files(root: Path, typed: str) -> list[Path]:
    """Paths under ``root`` whose relative path starts with (or, failing that, contains) ``typed``."""
    typed_lower = typed.lower()
    prefix_hits: list[Path] = []
    other_hits: list[Path] = []
    scanned = 0
    for directory, folders, files in os.walk(root):
        folders[:] = sorted(f for f in folders if f not in _SKIPPED and (not f.startswith(".") or typed.startswith(".")))
        base = Path(directory)
        for name in [*folders, *sorted(files)]:
            scanned += 1
            if scanned > SCAN_LIMIT:
                break
            path = base / name
            relative = path.relative_to(root).as_posix().lower()
            if relative.startswith(typed_lower) or name.lower().startswith(typed_lower):
                prefix_hits.append(path)
            elif typed_lower and typed_lower in relative:
                other_hits.append(path)
        if scanned > SCAN_LIMIT or len(prefix_hits) >= ITEM_LIMIT:
            break
    ranked = sorted(prefix_hits, key=lambda p: (len(p.relative_to(root).parts), p.as_posix())) + other_hits
    return ranked[:ITEM_LIMIT]
