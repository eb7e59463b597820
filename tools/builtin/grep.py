"""`grep`: regular-expression search over text files.

Contract: searches files under `path` (default: the working directory), optionally only
those whose name or relative path matches `glob`; leaves out what the project ignores
(`.gitignore`, `.ignore`, version-control and dependency folders; see `_walk`) unless
`include_ignored` is set, and skips binary files and files larger than `max_file_bytes`; prints
`relative/path:line: text` with each line cut at `max_line_chars`; stops at `max_results`
matches with a note. An invalid regex fails with the compiler's message; a `path` that is a FIFO,
socket or device fails at once, and such files met in a walk are skipped. Read-only.

Two engines give the same output: ripgrep (`rg`) when it is on PATH, which is many times faster on
big trees, and a Python walk otherwise. ripgrep is asked for the same rules (hidden files
included, ignore files honoured even outside git, dependency folders excluded, sorted by path);
a pattern ripgrep's regex engine does not accept (look-arounds, back-references) falls back to
the Python walk, so the Python syntax the tool promises always works. Both stop early when
cancelled.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import stat

import child_processes
from regular_files import NotARegularFile, check_regular, read_regular

from .._globs import glob_matches
from .._walk import DEPENDENCY_DIRECTORIES, SKIPPED_DIRECTORIES, walk_files
from ..base import Tool, ToolContext, success_result
from ..content import text_content
from ..errors import ToolFailure, ToolInputError
from ..sandbox import allowed_roots
from ._files import SNIFF_BYTES, file_work, looks_binary, not_regular

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
            "include_ignored": {"type": "boolean", "description": "Also search what .gitignore/.ignore exclude and dependency folders (node_modules, .venv...). Default false."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }
    annotations = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
    subject_kind = "path"

    def __init__(
        self, max_results: int = 200, max_line_chars: int = 300, max_file_bytes: int = 10_000_000,
        ripgrep: str | None = "auto",
    ) -> None:
        self.max_results = max_results
        self.max_line_chars = max_line_chars
        self.max_file_bytes = max_file_bytes
        self.ripgrep = shutil.which("rg") if ripgrep == "auto" else ripgrep
        """Path of the ``rg`` binary to use, or None for the Python walk only."""

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
        base = ctx.resolve_readable(shown)
        is_dir = await file_work(shown, _is_searchable, base, shown)
        limit = min(args.get("max_results", self.max_results), 1000)
        file_glob = args.get("glob")
        roots = allowed_roots(ctx.working_directory, (*ctx.extra_roots, *ctx.read_roots))

        include_ignored = bool(args.get("include_ignored"))

        def candidates():
            if not is_dir:
                yield base, base.name
            else:
                yield from walk_files(base, roots, include_ignored=include_ignored)

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
                    data = read_regular(path)
                except OSError:  # gone, unreadable, or swapped for a FIFO since the walk saw it
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

        found = None
        if self.ripgrep is not None and is_dir:
            found = await self._ripgrep(args, base, limit, include_ignored, ctx)
        hits, total, searched, stopped = found if found is not None else await asyncio.to_thread(search)
        if hits:
            lines = list(hits)
        elif searched is None:
            lines = [f"No matches for {args['pattern']!r}."]
        else:
            lines = [f"No matches for {args['pattern']!r} in {searched} file(s)."]
        if total > len(hits):
            lines.append(f"(… {'at least ' if stopped else ''}{total - len(hits)} more matches not shown; narrow the search.)")
        return success_result(
            f"Found {total} match(es) for {args['pattern']!r}",
            [text_content("\n".join(lines))],
            {"matches": len(hits), "total": total, "truncated": total > len(hits), "engine": "python" if searched is not None else "ripgrep",
             **({"filesSearched": searched} if searched is not None else {})},
        )

    def _cut(self, line: str) -> str:
        return line[: self.max_line_chars] + " [… cut]" if len(line) > self.max_line_chars else line

    async def _ripgrep(
        self, args: dict, base, limit: int, include_ignored: bool, ctx: ToolContext
    ) -> tuple[list[str], int, int | None, bool] | None:
        """Search with ripgrep; None when it cannot take the pattern (the caller falls back)."""
        assert self.ripgrep is not None  # the caller searches with ripgrep only when it was found
        command = [
            self.ripgrep, "--line-number", "--no-heading", "--null", "--color", "never", "--hidden", "--sort", "path",
            "--no-messages", "--max-filesize", str(self.max_file_bytes), "--glob", "!.git/", "--glob", "!.hg/", "--glob", "!.svn/",
        ]
        if include_ignored:
            command.append("--no-ignore")
        else:
            command += ["--no-require-git", *(f"--glob=!{name}/" for name in sorted(DEPENDENCY_DIRECTORIES - SKIPPED_DIRECTORIES))]
        if args.get("case_insensitive"):
            command.append("--ignore-case")
        if args.get("glob"):
            pattern = args["glob"]
            command += ["--glob", pattern if "/" in pattern else f"**/{pattern}"]
        command += ["--regexp", args["pattern"], "--", "."]
        try:
            process = await child_processes.create_subprocess_exec(
                *command, cwd=base, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env={**os.environ, "RIPGREP_CONFIG_PATH": ""},
            )
        except OSError:
            return None
        assert process.stdout is not None
        hits: list[str] = []
        total = 0
        stopped = False
        last = None
        # ripgrep opens every ignore file it meets, and opening a FIFO named .gitignore blocks until
        # someone writes to it. A search still running after RIPGREP_PATIENCE has the tree checked
        # for such files (off the loop, only in that slow case); if one is there, ripgrep is ended
        # and the Python walk, which skips them, answers instead.
        watchdog = asyncio.ensure_future(_end_if_blocked_by_an_ignore_file(process, base))
        try:
            while True:
                raw = await process.stdout.readline()
                if not raw:
                    break
                path, _, rest = raw.decode("utf-8", "replace").rstrip("\n").partition("\0")
                # Like the Python walk: stop between files once the page is well over full.
                if ctx.cancelled or (total >= limit * 10 and path != last):
                    stopped = True
                    break
                last = path
                number, _, text = rest.partition(":")
                total += 1
                if len(hits) < limit:
                    hits.append(f"{path.removeprefix('./')}:{number}: {self._cut(text)}")
        finally:
            if process.returncode is None and stopped:
                process.kill()
            _, err = await process.communicate()
            watchdog.cancel()
        if not watchdog.cancelled() and watchdog.done() and watchdog.result():
            return None  # blocked on a FIFO ignore file: the Python walk answers
        if process.returncode == 2 and not hits and b"regex" in err.lower():
            return None  # a pattern only Python's engine understands
        return hits, total, None, stopped


RIPGREP_PATIENCE = 0.5
"""Seconds a ripgrep search runs before the tree is checked for ignore files it could block on."""

_RIPGREP_IGNORE_FILES = frozenset({".gitignore", ".ignore", ".rgignore"})


async def _end_if_blocked_by_an_ignore_file(process: asyncio.subprocess.Process, base) -> bool:
    """After ``RIPGREP_PATIENCE``, end ``process`` if an ignore file below ``base`` is not a regular
    file (ripgrep would wait on it for ever); True when it did."""
    await asyncio.sleep(RIPGREP_PATIENCE)
    if process.returncode is not None or not await asyncio.to_thread(_has_irregular_ignore_file, base):
        return False
    if process.returncode is None:
        process.kill()
    return True


def _has_irregular_ignore_file(base) -> bool:
    for top, directories, files in os.walk(base):
        directories[:] = [name for name in directories if name not in (".git", ".hg", ".svn")]
        for name in _RIPGREP_IGNORE_FILES.intersection(files):
            try:
                if not stat.S_ISREG(os.stat(os.path.join(top, name)).st_mode):
                    return True
            except OSError:
                continue
    return False


def _is_searchable(base, shown: str) -> bool:
    """Whether ``base`` is a directory (else a regular file); anything else fails."""
    if base.is_dir():
        return True
    try:
        check_regular(base)
    except FileNotFoundError:
        raise ToolFailure(f"Path not found: {shown}", code="not_found") from None
    except NotARegularFile as exc:
        raise not_regular(exc, shown) from None
    except OSError as exc:
        raise ToolFailure(f"Cannot search {shown}: {exc.strerror or type(exc).__name__}.", code="io_error") from None
    return False
