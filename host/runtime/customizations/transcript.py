"""A session's conversation as Claude Code's JSONL transcript, for hooks' ``transcript_path``.

Hooks written for Claude Code read the file their input's ``transcript_path`` names: one JSON
object per line, compact (``"role":"assistant"`` with no space, as scripts grep for it), each a
``user`` or ``assistant`` entry whose ``message`` holds content blocks: the user's text, the
model's ``text`` / ``thinking`` / ``tool_use`` blocks (one block per line, as Claude Code writes
them, tools under their Claude Code names with Claude Code's ``input``), and ``tool_result`` blocks
in a ``user`` entry once a call finished. Entries chain by ``uuid`` / ``parentUuid`` and carry
``sessionId``, ``cwd``, ``timestamp``, ``isSidechain: false`` and ``userType: "external"``.

Contract (:class:`HookTranscript`):
- ``sync()`` brings the file up to date from the session's chat: completed turns (read from
  ``turns_from(start)``, only those not yet written) and the active turn; every part present is
  complete when hooks run (the model is not streaming then), so each is written once, in order.
  The first ``sync`` of a host process writes the file anew (a restarted host gives the same file),
  and so does one after turns it wrote were removed (``turn_ids`` lacks one: a clear or truncation).
  Returns the path.
- Bounded: a text or tool result longer than ``TEXT_LIMIT`` characters is cut (saying so); when the
  file grows over ``FILE_LIMIT`` bytes its older half is dropped (hooks read the recent end).
- ``remove()`` deletes the file (the session ended).
Paths: ``<data>/transcripts/<session id>.jsonl``, created with mode 0600 in a 0700 folder.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ahp.tool_results import result_text
from plugins.claude_code_tools import claude_name, to_claude_input

__all__ = ["FILE_LIMIT", "HookTranscript", "TEXT_LIMIT"]

TEXT_LIMIT = 100_000
FILE_LIMIT = 16 * 1024 * 1024


class HookTranscript:
    """The JSONL transcript of one session (see the module docstring)."""

    def __init__(self, path: Path, session_id: str, cwd: str | None, *,
                 turns_from: Callable[[int], Sequence[dict[str, Any]]],
                 active: Callable[[], dict[str, Any] | None], turn_ids: Callable[[], Sequence[Any]] | None = None) -> None:
        self.path = path
        self.session_id = session_id
        self.cwd = cwd
        self._turns_from = turns_from
        self._active = active
        self._turn_ids = turn_ids
        """The ids of the chat's completed turns now (one written that is gone: turns were removed)."""
        self._seen: set[str] = set()
        """The ids of the turns written so far."""
        self._written: set[tuple[str, ...]] = set()
        self._finished = 0
        """How many completed turns are entirely in the file."""
        self._parent: str | None = None
        self._fresh = True

    def sync(self) -> Path:
        active = self._active()
        if self._turn_ids is not None and self._seen:
            present = {str(ident) for ident in self._turn_ids()}
            if isinstance(active, dict):
                present.add(str(active.get("id")))
            if not self._seen <= present:
                # Turns were removed (the conversation was cleared or truncated): write it anew.
                self._written.clear()
                self._seen.clear()
                self._finished, self._parent, self._fresh = 0, None, True
        lines: list[str] = []
        finished = list(self._turns_from(self._finished))
        for turn in finished:
            lines.extend(self._turn_lines(turn))
        if isinstance(active, dict):
            lines.extend(self._turn_lines(active))
        self._finished += len(finished)
        self._write(lines)
        return self.path

    def remove(self) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    # -- entries -------------------------------------------------------------------------------

    def _turn_lines(self, turn: dict[str, Any]) -> list[str]:
        turn_id = str(turn.get("id"))
        self._seen.add(turn_id)
        lines: list[str] = []
        message = turn.get("userMessage") or turn.get("message") or {}
        text = message.get("text") if isinstance(message, dict) else None
        if isinstance(text, str):
            lines += self._entry((turn_id, "user"), "user", {"role": "user", "content": _cut(text)})
        for index, part in enumerate(turn.get("responseParts") or ()):
            if not isinstance(part, dict):
                continue
            kind = part.get("kind")
            if kind == "markdown" and part.get("content"):
                block = {"type": "text", "text": _cut(str(part["content"]))}
                lines += self._entry((turn_id, "part", str(part.get("id", index))), "assistant", _assistant(turn_id, block))
            elif kind == "reasoning" and part.get("content"):
                block = {"type": "thinking", "thinking": _cut(str(part["content"]))}
                lines += self._entry((turn_id, "part", str(part.get("id", index))), "assistant", _assistant(turn_id, block))
            elif kind == "toolCall" and isinstance(part.get("toolCall"), dict):
                lines += self._tool_lines(turn_id, part["toolCall"])
        return lines

    def _tool_lines(self, turn_id: str, call: dict[str, Any]) -> list[str]:
        status = call.get("status")
        if status == "streaming":
            return []
        call_id = str(call.get("toolCallId"))
        name = str(call.get("toolName") or "")
        arguments = _arguments(call.get("toolInput"))
        block = {"type": "tool_use", "id": call_id, "name": claude_name(name),
                 "input": to_claude_input(name, arguments, cwd=self.cwd)}
        lines = self._entry((turn_id, "use", call_id), "assistant", _assistant(turn_id, block))
        if status in ("completed", "cancelled"):
            failed = status == "cancelled" or not call.get("success")
            text = result_text(call) if status == "completed" else str(call.get("reasonMessage") or "The call was cancelled.")
            result = {"type": "tool_result", "tool_use_id": call_id, "content": _cut(text), "is_error": failed}
            lines += self._entry((turn_id, "result", call_id), "user", {"role": "user", "content": [result]})
        return lines

    def _entry(self, key: tuple[str, ...], kind: str, message: dict[str, Any]) -> list[str]:
        if key in self._written:
            return []
        self._written.add(key)
        ident = str(uuid.uuid5(uuid.NAMESPACE_URL, "\x00".join((self.session_id, *key))))
        entry = {"parentUuid": self._parent, "isSidechain": False, "userType": "external", "cwd": self.cwd,
                 "sessionId": self.session_id, "type": kind, "message": message, "uuid": ident,
                 "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")}
        self._parent = ident
        return [json.dumps(entry, ensure_ascii=False, separators=(",", ":"))]

    # -- the file ------------------------------------------------------------------------------

    def _write(self, lines: list[str]) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        mode = "w" if self._fresh else "a"
        self._fresh = False
        if lines or mode == "w":
            descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if mode == "w" else os.O_APPEND), 0o600)
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.writelines(line + "\n" for line in lines)
        if self.path.stat().st_size > FILE_LIMIT:
            self._shrink()

    def _shrink(self) -> None:
        kept = self.path.read_text(encoding="utf-8").splitlines(keepends=True)
        size = sum(len(line.encode("utf-8")) for line in kept)
        start = 0
        while start < len(kept) and size > FILE_LIMIT // 2:
            size -= len(kept[start].encode("utf-8"))
            start += 1
        kept = kept[start:]
        temporary = self.path.with_suffix(".tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.writelines(kept)
        os.replace(temporary, self.path)


def _assistant(turn_id: str, block: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"msg_{turn_id}", "type": "message", "role": "assistant", "content": [block]}


def _arguments(text: Any) -> dict[str, Any]:
    if isinstance(text, dict):
        return text
    try:
        value = json.loads(text) if isinstance(text, str) and text.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _cut(text: str) -> str:
    if len(text) <= TEXT_LIMIT:
        return text
    return text[:TEXT_LIMIT] + f"\n[... {len(text) - TEXT_LIMIT} more characters left out of the transcript]"
