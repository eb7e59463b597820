"""`list_dir`: list one directory.

Contract: entries are sorted by name, directories first and marked with a trailing '/',
symbolic links marked with ' -> target'; at most `max_entries` are shown, with a note
saying how many were left out. What the project ignores (`.gitignore`, `.ignore`, version-control
and dependency folders: see `_walk`) is left out and counted in a note naming a few of them, unless
`include_ignored` is set. Read-only; the path goes through the sandbox.
"""

from __future__ import annotations

import os

from regular_files import kind_of

from .._walk import DEPENDENCY_DIRECTORIES, SKIPPED_DIRECTORIES, IgnoreRules
from ..base import Tool, ToolContext, success_result
from ..content import text_content
from ..errors import ToolFailure
from ._files import file_work

__all__ = ["ListDirTool"]


class ListDirTool(Tool):
    """Lists the entries of one directory."""

    name = "list_dir"
    title = "List Directory"
    description = "List the files and directories in a directory (not recursive). Directories end with '/'."
    input_schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 1, "description": "Directory path. Default: the working directory."},
            "include_ignored": {"type": "boolean", "description": "Also look at what .gitignore/.ignore exclude and dependency folders (node_modules, .venv...). Default false."},
        },
        "additionalProperties": False,
    }
    annotations = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
    subject_kind = "path"

    def __init__(self, max_entries: int = 1000) -> None:
        self.max_entries = max_entries

    def describe(self, args: dict) -> str:
        return f"List {args.get('path', '.')}"

    def past_tense(self, args: dict) -> str:
        return f"Tried to list {args.get('path', '.')}"

    def policy_subject(self, args: dict) -> str | None:
        return args.get("path", ".")

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        shown = args.get("path", ".")
        path = ctx.resolve_readable(shown)
        # A big folder, or ignore files on a slow file system, must not hold up the event loop.
        lines, entries, hidden, left_out = await file_work(shown, self._list, path, shown, bool(args.get("include_ignored")))
        display = ctx.display_path(path) if path != ctx.resolve(".") else "."
        return success_result(
            f"Listed {display}",
            [text_content("\n".join(lines))],
            {"path": str(path), "entries": len(entries), "ignored": len(hidden), "truncated": left_out > 0},
        )

    def _list(self, path, shown: str, include_ignored: bool) -> tuple[list[str], list, list[str], int]:
        if not path.exists():
            raise ToolFailure(f"Directory not found: {shown}", code="not_found")
        if not path.is_dir():
            kind = kind_of(path.stat().st_mode)
            if kind != "regular file":
                raise ToolFailure(f"{shown} is a {kind}, not a directory.", code="not_a_directory")
            raise ToolFailure(f"{shown} is a file, not a directory; use read_file to read it.", code="not_a_directory")
        try:
            with os.scandir(path) as scan:
                entries = list(scan)
        except OSError as exc:
            raise ToolFailure(f"Cannot list {shown}: {exc.strerror or type(exc).__name__}.", code="io_error") from None

        def is_dir(entry: os.DirEntry) -> bool:
            try:
                return entry.is_dir(follow_symlinks=False)
            except OSError:
                return False

        hidden: list[str] = []
        if not include_ignored:
            rules = IgnoreRules.for_directory(path)

            def ignored(entry: os.DirEntry) -> bool:
                folder = is_dir(entry)
                if folder and (entry.name in SKIPPED_DIRECTORIES or entry.name in DEPENDENCY_DIRECTORIES):
                    return True
                return rules.ignored(entry.path, folder)

            hidden = sorted(e.name + ("/" if is_dir(e) else "") for e in entries if ignored(e))
            entries = [e for e in entries if not ignored(e)]
        entries.sort(key=lambda e: (not is_dir(e), e.name))
        lines: list[str] = []
        for entry in entries[: self.max_entries]:
            if entry.is_symlink():
                try:
                    target = os.readlink(entry.path)
                except OSError:
                    target = "?"
                lines.append(f"{entry.name} -> {target}")
            else:
                lines.append(entry.name + ("/" if is_dir(entry) else ""))
        left_out = len(entries) - len(lines)
        if not entries:
            lines.append("(empty directory)")
        if left_out > 0:
            lines.append(f"(… {left_out} more entries not shown)")
        if hidden:
            named = ", ".join(hidden[:5]) + (", …" if len(hidden) > 5 else "")
            lines.append(f"({len(hidden)} ignored entries not shown: {named}; pass include_ignored to list them)")
        return lines, entries, hidden, left_out
