"""`write_file`: create a file or replace its whole content.

Contract: `prepare` shows the proposed `FileEdit` (before/after content refs and line
stats) without writing; `call` writes atomically (temp file + rename, mode kept),
creating missing parent directories, and returns a `fileEdit` content item for what it
actually changed. Writing into a directory path fails clearly. The path goes through
the sandbox, so links pointing outside the allowed roots are refused.
"""

from __future__ import annotations

from ..base import Tool, ToolContext, success_result
from ..content import file_edit, file_edit_content, text_content
from ..errors import ToolFailure
from ._files import file_work, read_existing, write_bytes

__all__ = ["WriteFileTool"]


class WriteFileTool(Tool):
    """Writes whole files."""

    name = "write_file"
    title = "Write File"
    description = (
        "Create a file or overwrite it with new content. Missing parent directories are created. "
        "Prefer edit_file for changing part of an existing file."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "description": "File path, relative to the working directory or absolute."},
            "content": {"type": "string", "description": "The complete new content of the file."},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    }
    annotations = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}
    subject_kind = "path"

    def describe(self, args: dict) -> str:
        return f"Write {args.get('path', 'a file')}"

    def past_tense(self, args: dict) -> str:
        return f"Tried to write {args.get('path', 'a file')}"

    def confirmation_title(self, args: dict) -> str:
        return f"Write {args.get('path')}?"

    def policy_subject(self, args: dict) -> str | None:
        return args.get("path")

    def _plan(self, args: dict, ctx: ToolContext):
        shown = args["path"]
        path = ctx.resolve(shown)
        if path.is_dir():
            raise ToolFailure(f"{shown} is a directory, not a file.", code="is_directory")
        return shown, path, read_existing(path, shown), args["content"].encode("utf-8")

    async def preview(self, args: dict, ctx: ToolContext) -> list[dict]:
        _, path, before, after = await file_work(args.get("path", ""), self._plan, args, ctx)
        return [file_edit(ctx.content_store, path, before, after)]

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        shown, path, before, after = await file_work(args.get("path", ""), self._plan, args, ctx)
        await file_work(shown, write_bytes, path, after, shown)
        edit = file_edit_content(ctx.content_store, path, before, after)
        display = ctx.display_path(path)
        stats = edit["diff"]
        if before is None:
            summary = f"Created {display} ({stats['added']} lines)."
            past = f"Created {display}"
        else:
            summary = f"Wrote {display} (+{stats['added']} -{stats['removed']} lines)."
            past = f"Wrote {display}"
        return success_result(past, [edit, text_content(summary)], {"path": str(path), "created": before is None, **stats})
