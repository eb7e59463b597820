"""`read_file`: show a text file with line numbers, optionally a line range.

Contract: lines are numbered from 1 and shown as `<number>\\t<line>`. `offset` is the first
line to show, `limit` how many. Output is bounded: at most `max_lines` lines (default
2000), each cut at `max_line_chars` characters; whenever anything is left out the output
ends with a note saying what and how to read on. Binary files are refused with a clear
message, and so are FIFOs, sockets and devices (at once: reading one could wait for ever).
Read-only; the path goes through the sandbox. A `path` that is a content reference
(`scheme:/...`, not `file:`) is read from the session's content store instead: that is how the
model reads the whole of a tool output the host cut short for it.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

from regular_files import NotARegularFile, open_regular

from ..base import Tool, ToolContext, success_result
from ..content import text_content
from ..errors import ToolFailure
from ._files import SNIFF_BYTES, file_work, looks_binary, not_regular

__all__ = ["ReadFileTool"]

_CONTENT_REFERENCE = re.compile(r"^[a-z][a-z0-9+.-]*:/")


class ReadFileTool(Tool):
    """Reads a text file in bounded pages."""

    name = "read_file"
    title = "Read File"
    description = (
        "Read a text file. Returns numbered lines ('<line>\\t<text>'). Use offset (first line, 1-based) "
        "and limit (number of lines) to page through large files. Binary files are refused."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "description": "File path, relative to the working directory or absolute."},
            "offset": {"type": "integer", "minimum": 1, "description": "First line to read (1-based). Default 1."},
            "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of lines to read."},
        },
        "required": ["path"],
        "additionalProperties": False,
    }
    annotations = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
    subject_kind = "path"

    def __init__(self, max_lines: int = 2000, max_line_chars: int = 2000) -> None:
        self.max_lines = max_lines
        self.max_line_chars = max_line_chars

    def describe(self, args: dict) -> str:
        return f"Read {args.get('path', 'a file')}"

    def past_tense(self, args: dict) -> str:
        return f"Tried to read {args.get('path', 'a file')}"

    def policy_subject(self, args: dict) -> str | None:
        return args.get("path")

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        shown = args["path"]
        offset = args.get("offset", 1)
        limit = min(args.get("limit", self.max_lines), self.max_lines)
        if _CONTENT_REFERENCE.match(shown) and not shown.startswith("file:"):
            # Stored content (e.g. the full output of a tool whose result was cut for the model).
            data = ctx.content_store.get(shown)
            if data is None:
                raise ToolFailure(f"Nothing is stored at {shown}; check the reference.", code="not_found")
            shown_lines, total, cut_lines = self._collect(io.BytesIO(data), offset, limit)
            path: Path | None = None
        else:
            path = ctx.resolve_readable(shown)
            # Counting lines of a large file is blocking work: keep it off the event loop.
            shown_lines, total, cut_lines = await file_work(shown, self._read, path, shown, offset, limit)

        notes: list[str] = []
        last = offset + len(shown_lines) - 1
        if total == 0:
            notes.append("(The file is empty.)")
        elif offset > total:
            notes.append(f"(The file has only {total} lines; offset {offset} is past the end.)")
        elif last < total:
            notes.append(f"(Showing lines {offset}-{last} of {total}. Use offset={last + 1} to read more.)")
        if cut_lines:
            notes.append(f"({cut_lines} long line(s) were cut at {self.max_line_chars} characters.)")
        body = "".join(f"{offset + i}\t{line}\n" for i, line in enumerate(shown_lines))
        text = body + "\n".join(notes)
        structured: dict[str, Any] = {"path": str(path) if path is not None else shown, "totalLines": total, "truncated": last < total or bool(cut_lines)}
        if shown_lines:
            structured["startLine"] = offset
            structured["endLine"] = last
        display = ctx.display_path(path) if path is not None else "stored output"
        message = f"Read {display}" if not shown_lines or (offset == 1 and last == total) else f"Read {display}, lines {offset}-{last}"
        return success_result(message, [text_content(text)], structured)

    def _read(self, path: Path, shown: str, offset: int, limit: int) -> tuple[list[str], int, int]:
        if path.is_dir():
            raise ToolFailure(f"{shown} is a directory; use list_dir to see its contents.", code="is_directory")
        if not path.exists():
            raise ToolFailure(f"File not found: {shown}", code="not_found")
        try:
            with open_regular(path) as handle:
                head = handle.read(SNIFF_BYTES)
                if looks_binary(head):
                    size = path.stat().st_size
                    raise ToolFailure(
                        f"{shown} is a binary file ({size} bytes); read_file only shows text.", code="binary_file"
                    )
                handle.seek(0)
                return self._collect(handle, offset, limit)
        except NotARegularFile as exc:
            raise not_regular(exc, shown) from None
        except OSError as exc:
            raise ToolFailure(f"Cannot read {shown}: {exc.strerror or type(exc).__name__}.", code="io_error") from None

    def _collect(self, handle: Any, offset: int, limit: int) -> tuple[list[str], int, int]:
        """Lines [offset, offset+limit) decoded, the total line count, and how many were cut."""
        lines: list[str] = []
        total = 0
        cut = 0
        for raw in handle:
            total += 1
            if offset <= total < offset + limit:
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                if len(line) > self.max_line_chars:
                    line = line[: self.max_line_chars] + " [… line cut …]"
                    cut += 1
                lines.append(line)
        return lines, total, cut
