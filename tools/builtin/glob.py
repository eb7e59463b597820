"""`glob`: find files by path pattern.

Contract: the pattern is matched against paths relative to `path` (default: the working
directory) with the syntax of `tools._globs` (`*`, `?`, `[...]`, `**`). Patterns may not
be absolute or contain `..`; the walk leaves out what the project ignores (`.gitignore`,
`.ignore`, version-control and dependency folders; see `_walk`) unless `include_ignored` is set,
and never follows directory links.
Results are sorted, bounded by `max_results` with a note when more matched. Read-only.
"""

from __future__ import annotations

import asyncio

from .._globs import compile_glob
from .._walk import walk_files
from ..base import Tool, ToolContext, success_result
from ..content import text_content
from ..errors import ToolFailure, ToolInputError
from ..sandbox import allowed_roots

__all__ = ["GlobTool"]


class GlobTool(Tool):
    """Finds files whose relative path matches a glob pattern."""

    name = "glob"
    title = "Find Files"
    description = (
        "Find files by glob pattern, relative to path (default: the working directory). "
        "'*' matches within one directory level, '**' across levels: '**/*.py' finds every Python file."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "description": "Glob pattern, e.g. 'src/**/*.ts'."},
            "path": {"type": "string", "minLength": 1, "description": "Directory to search in. Default: the working directory."},
            "include_ignored": {"type": "boolean", "description": "Also look at what .gitignore/.ignore exclude and dependency folders (node_modules, .venv...). Default false."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }
    annotations = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
    subject_kind = "path"

    def __init__(self, max_results: int = 500) -> None:
        self.max_results = max_results

    def describe(self, args: dict) -> str:
        return f"Find files matching {args.get('pattern', '')}"

    def past_tense(self, args: dict) -> str:
        return f"Tried to find files matching {args.get('pattern', '')}"

    def policy_subject(self, args: dict) -> str | None:
        return args.get("path", ".")

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        pattern = args["pattern"]
        if pattern.startswith("/") or ".." in pattern.split("/"):
            raise ToolInputError(
                "The pattern must be relative and must not contain '..'; use the path argument to pick the directory.",
            )
        shown = args.get("path", ".")
        base = ctx.resolve_readable(shown)
        if not base.is_dir():
            raise ToolFailure(f"Directory not found: {shown}", code="not_found")
        regex = compile_glob(pattern)
        roots = allowed_roots(ctx.working_directory, (*ctx.extra_roots, *ctx.read_roots))

        def search() -> tuple[list[str], int]:
            found: list[str] = []
            total = 0
            for _, relative in walk_files(base, roots, include_ignored=bool(args.get("include_ignored"))):
                if ctx.cancelled:
                    break
                if regex.fullmatch(relative):
                    total += 1
                    if len(found) < self.max_results:
                        found.append(relative)
            return found, total

        found, total = await asyncio.to_thread(search)
        lines = list(found) or [f"No files match {pattern}."]
        if total > len(found):
            lines.append(f"(… {total - len(found)} more matches not shown; narrow the pattern.)")
        return success_result(
            f"Found {total} file(s) matching {pattern}",
            [text_content("\n".join(lines))],
            {"matches": found, "total": total, "truncated": total > len(found)},
        )
