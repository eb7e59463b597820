"""``@path`` imports in instruction files (``CLAUDE.md``, ``AGENTS.md``), expanded once.

Claude Code lets an instruction file pull in another with a word ``@path`` (relative to the file
that names it, or ``@~/...``). ``expand_imports(text, source, roots, seen)`` returns the text with
each imported file appended once, under a heading naming it, and the real paths it imported:

* only words that stand alone (start of line or after whitespace) count, and never inside fenced
  code blocks or inline code spans, so ``user@example.com`` and code samples stay as they are;
* a target must be an existing file whose real path lies inside one of ``roots`` (the session's
  working directory and allowed roots): an instruction file cannot make the host read
  ``~/.ssh/id_rsa`` into a prompt;
* ``seen`` holds real paths already in the prompt (the instruction files themselves, earlier
  imports): a file is included once however often it is named, which also ends import cycles;
* imports nest up to ``MAX_DEPTH`` levels and each file is cut at ``MAX_BYTES``.

Hand-written because no maintained library implements this convention; it is a small text scan.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from regular_files import read_regular

__all__ = ["expand_imports", "MAX_DEPTH", "MAX_BYTES"]

MAX_DEPTH = 5
MAX_BYTES = 64 * 1024

_WORD = re.compile(r"(?:(?<=\s)|^)@((?:~/|\.{1,2}/|/)?[\w.\-/]+\.[\w]+)")
_FENCE = re.compile(r"^\s*(```|~~~)")
_CODE_SPAN = re.compile(r"`[^`]*`")


def expand_imports(text: str, source: Path, roots: list[Path], seen: set[Path], depth: int = 0) -> tuple[str, list[Path]]:
    """``text`` (read from ``source``) with its imports appended, and the real paths imported."""
    imported: list[Path] = []
    sections: list[str] = []
    if depth >= MAX_DEPTH:
        return text, imported
    for target in _targets(text, source.parent):
        real = Path(os.path.realpath(target))
        if real in seen or not real.is_file() or not any(real == r or r in real.parents for r in roots):
            continue
        seen.add(real)
        try:
            body = read_regular(real, MAX_BYTES).decode("utf-8", errors="replace")
        except OSError:
            continue
        imported.append(real)
        body, nested = expand_imports(body, real, roots, seen, depth + 1)
        imported.extend(nested)
        sections.append(f"## Imported from {_shown(real, roots)}\n\n{body.strip()}")
    if not sections:
        return text, imported
    return text.rstrip() + "\n\n" + "\n\n".join(sections) + "\n", imported


def _targets(text: str, base: Path) -> list[Path]:
    found: list[Path] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for match in _WORD.finditer(_CODE_SPAN.sub(" ", line)):
            word = match.group(1).rstrip(".")
            path = Path(os.path.expanduser(word)) if word.startswith("~/") else base / word
            if path not in found:
                found.append(path)
    return found


def _shown(path: Path, roots: list[Path]) -> str:
    for root in roots:
        if root in path.parents:
            return str(path.relative_to(root))
    return str(path)
