"""`edit_file`: replace an exact string in a text file.

Contract: `old_string` must occur exactly once unless `replace_all` is true; a missing
string, an ambiguous one, an empty one, or `old_string == new_string` fail with a message
that says what to do instead. Binary files are refused. `prepare` shows the proposed
`FileEdit` without writing; `call` re-reads the file, applies the edit and writes
atomically, so a file changed since the preview is edited as it is now (or the call
fails if the string is gone). Line endings are matched byte-for-byte.
"""

from __future__ import annotations

from ..base import Tool, ToolContext, success_result
from ..content import file_edit, file_edit_content, text_content
from ..errors import ToolFailure
from ._files import file_work, read_text, write_bytes

__all__ = ["EditFileTool"]


class EditFileTool(Tool):
    """Exact-string replacement in a single file."""

    name = "edit_file"
    title = "Edit File"
    description = (
        "Replace an exact string in a text file. old_string must match the file exactly (including "
        "whitespace and indentation) and be unique, unless replace_all is true. Include enough "
        "surrounding lines to make it unique."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "description": "File path, relative to the working directory or absolute."},
            "old_string": {"type": "string", "minLength": 1, "description": "Exact text to replace."},
            "new_string": {"type": "string", "description": "Replacement text."},
            "replace_all": {"type": "boolean", "description": "Replace every occurrence instead of exactly one. Default false."},
        },
        "required": ["path", "old_string", "new_string"],
        "additionalProperties": False,
    }
    annotations = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": False}
    subject_kind = "path"

    def describe(self, args: dict) -> str:
        return f"Edit {args.get('path', 'a file')}"

    def past_tense(self, args: dict) -> str:
        return f"Tried to edit {args.get('path', 'a file')}"

    def confirmation_title(self, args: dict) -> str:
        return f"Edit {args.get('path')}?"

    def policy_subject(self, args: dict) -> str | None:
        return args.get("path")

    def _plan(self, args: dict, ctx: ToolContext):
        shown = args["path"]
        old, new = args["old_string"], args["new_string"]
        if old == new:
            raise ToolFailure("old_string and new_string are identical; there is nothing to change.", code="no_change")
        path = ctx.resolve(shown)
        text = read_text(path, shown)
        count = text.count(old)
        if count == 0:
            hint = ""
            if old.strip() and old.strip() in text:
                hint = " (it does occur with different leading/trailing whitespace; copy it exactly)"
            raise ToolFailure(f"old_string was not found in {shown}{hint}.", code="not_found_in_file")
        if count > 1 and not args.get("replace_all", False):
            raise ToolFailure(
                f"old_string occurs {count} times in {shown}; include more surrounding context to make it "
                "unique, or set replace_all to true.",
                code="not_unique",
            )
        updated = text.replace(old, new) if args.get("replace_all", False) else text.replace(old, new, 1)
        return shown, path, text.encode("utf-8"), updated.encode("utf-8"), count

    async def preview(self, args: dict, ctx: ToolContext) -> list[dict]:
        _, path, before, after, _ = await file_work(args.get("path", ""), self._plan, args, ctx)
        return [file_edit(ctx.content_store, path, before, after)]

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        shown, path, before, after, count = await file_work(args.get("path", ""), self._plan, args, ctx)
        await file_work(shown, write_bytes, path, after, shown)
        edit = file_edit_content(ctx.content_store, path, before, after)
        display = ctx.display_path(path)
        replaced = count if args.get("replace_all", False) else 1
        stats = edit["diff"]
        summary = (
            f"Edited {display}: replaced {replaced} occurrence(s) (+{stats['added']} -{stats['removed']} lines)."
        )
        return success_result(
            f"Edited {display}", [edit, text_content(summary)], {"path": str(path), "replacements": replaced, **stats}
        )
