"""`grep`: regular-expression search over text files.

Contract: searches files under `path` (default: the working directory), optionally only
those whose name or relative path matches `glob`; skips `.git`, binary files and files
larger than `max_file_bytes`; prints `relative/path:line: text` with each line cut at
`max_line_chars`; stops at `max_results` matches with a note. An invalid regex fails with
the compiler's message. Runs off the event loop and stops early when cancelled. Read-only.
"""

from __future__ import annotations

import asyncio
import re

from .._globs import glob_matches
from ..base import Tool, ToolContext, success_result
from ..content import text_content
from ..errors import ToolFailure, ToolInputError
from ..sandbox import allowed_roots
from ._files import SNIFF_BYTES, looks_binary
from ._walk import walk_files

__all__ = ["GrepTool"]


class GrepTool(Tool):
    """Searches file contents with a Python regular expression."""

    name = "grep"
    title = "Search Files"
    description = (
        "Search file contents with a regular expression (Python syntax). Returns 'path:line: text' "
        "for each matching line. Use glob (e.g. '*.py' or 'src/**/*.ts') to restrict which files are searched."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1, "description": "Regular expression to search for."},
            "path": {"type": "string", "minLength": 1, "description": "File or directory to search. Default: the working directory."},
            "glob": {"type": "string", "minLength": 1, "description": "Only search files matching this glob."},
            "case_insensitive": {"type": "boolean", "description": "Ignore case. Default false."},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "Maximum matches to return."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }
    annotations = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
    subject_kind = "path"

    def __init__(self, max_results: int = 200, max_line_chars: int = 300, max_file_bytes: int = 10_000_000) -> None:
        self.max_results = max_results
        self.max_line_chars = max_line_chars
        self.max_file_bytes = max_file_bytes

    def describe(self, args: dict) -> str:
        return f"Search for {args.get('pattern', '')!r}"

    def past_tense(self, args: dict) -> str:
        return f"Tried to search for {args.get('pattern', '')!r}"

    def policy_subject(self, args: dict) -> str | None:
        return args.get("path", ".")

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        try:
            regex = re.compile(args["pattern"], re.IGNORECASE if args.get("case_insensitive") else 0)
        except re.error as exc:
            raise ToolInputError(f"Invalid regular expression {args['pattern']!r}: {exc}.") from None
        shown = args.get("path", ".")
        base = ctx.resolve(shown)
        if not base.exists():
            raise ToolFailure(f"Path not found: {shown}", code="not_found")
        limit = min(args.get("max_results", self.max_results), 1000)
        file_glob = args.get("glob")
        roots = allowed_roots(ctx.working_directory, ctx.extra_roots)

        def candidates():
            if base.is_file():
                yield base, base.name
            else:
                yield from walk_files(base, roots)

        def search() -> tuple[list[str], int, int, bool]:
            hits: list[str] = []
            total = 0
            searched = 0
            stopped = False
            for path, relative in candidates():
                # Counting every match in a huge tree is wasted work once the page is full.
                if ctx.cancelled or total >= limit * 10:
                    stopped = True
                    break
                if file_glob and not glob_matches(file_glob, relative, match_basename=True):
                    continue
                try:
                    if path.stat().st_size > self.max_file_bytes:
                        continue
                    data = path.read_bytes()
                except OSError:
                    continue
                if looks_binary(data[:SNIFF_BYTES]):
                    continue
                searched += 1
                for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
                    if regex.search(line):
                        total += 1
                        if len(hits) < limit:
                            if len(line) > self.max_line_chars:
                                line = line[: self.max_line_chars] + " [… cut]"
                            hits.append(f"{relative}:{number}: {line}")
            return hits, total, searched, stopped

        hits, total, searched, stopped = await asyncio.to_thread(search)
        lines = hits or [f"No matches for {args['pattern']!r} in {searched} file(s)."]
        if total > len(hits):
            lines.append(f"(… {'at least ' if stopped else ''}{total - len(hits)} more matches not shown; narrow the search.)")
        return success_result(
            f"Found {total} match(es) for {args['pattern']!r}",
            [text_content("\n".join(lines))],
            {"matches": len(hits), "total": total, "filesSearched": searched, "truncated": total > len(hits)},
        )
