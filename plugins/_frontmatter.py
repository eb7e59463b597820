"""Split a Markdown file into YAML frontmatter and body.

Contract:
- Frontmatter is a block at the very top: a ``---`` line, YAML, then a closing ``---`` line.
  A UTF-8 BOM and CRLF line endings are tolerated.
- :func:`split_frontmatter` returns ``(None, text)`` when there is no such block; the caller
  decides whether that is a problem.
- It raises :class:`FrontmatterError` when the block exists but is unterminated, is not valid
  YAML, or is not a mapping. The message carries YAML's line number, never a traceback.
- Cursor-style unquoted globs (``globs: *.ts,*.tsx``) are invalid YAML (``*`` starts an alias);
  such a value is quoted before parsing, because real-world rule files are written that way.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

__all__ = ["FrontmatterError", "split_frontmatter"]

_FENCE = re.compile(r"^---[ \t]*$")
_BARE_GLOB_LINE = re.compile(r"^(\s*(?:globs|applyTo|paths)\s*:\s*)(\*[^\n#]*?)\s*$")


class FrontmatterError(ValueError):
    """The frontmatter block exists but cannot be read."""


def split_frontmatter(text: str) -> tuple[dict[str, Any] | None, str]:
    """Return ``(frontmatter mapping or None, body)``."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n")
    lines = text.split("\n")
    if not lines or not _FENCE.match(lines[0]):
        return None, text
    for index in range(1, len(lines)):
        if _FENCE.match(lines[index]):
            break
    else:
        raise FrontmatterError("the frontmatter block opened by '---' is never closed")
    yaml_lines = [_quote_bare_glob(line) for line in lines[1:index]]
    body = "\n".join(lines[index + 1 :]).lstrip("\n")
    try:
        data = yaml.safe_load("\n".join(yaml_lines))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise FrontmatterError(f"frontmatter is not valid YAML: {problem}{where}") from None
    if data is None:
        return {}, body
    if not isinstance(data, dict):
        raise FrontmatterError("frontmatter must be a YAML mapping of keys to values")
    return {str(key): value for key, value in data.items()}, body


def _quote_bare_glob(line: str) -> str:
    match = _BARE_GLOB_LINE.match(line)
    if not match:
        return line
    value = match.group(2).replace("\\", "\\\\").replace('"', '\\"')
    return f'{match.group(1)}"{value}"'
