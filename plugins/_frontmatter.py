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
- :func:`read_leniently` is the fallback Claude Code users rely on: many published agents and
  commands have frontmatter that is not YAML (``description: Use this agent when ... Examples:
  <example>Context: ...``, with colons and quotes unescaped). It reads the block line by line:
  ``key: value`` starts a key, any other line continues the previous value, ``- item`` lines under
  an empty key make a list, and matching quotes around a value are dropped. Given the ``keys`` the
  file kind knows, a ``Word:`` line that is not one of them continues the previous value instead
  (``Context: ...`` and ``user: "..."`` lines of an agent's examples belong to its description). The caller reports a
  warning, so the author can see the file was not strict YAML, and the component still loads.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["FrontmatterError", "split_frontmatter", "read_leniently"]

_FENCE = re.compile(r"^---[ \t]*$")
_KEY_LINE = re.compile(r"^([A-Za-z_][\w.-]*)[ \t]*:(?:[ \t]+(.*?))?[ \t]*$")
_LIST_ITEM = re.compile(r"^[ \t]+-[ \t]+(.*?)[ \t]*$")
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
        import yaml  # on first use: start-up does not read frontmatter

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


def read_leniently(text: str, keys: set[str] | None = None) -> tuple[dict[str, Any], str]:
    """``(mapping, body)`` read line by line from a frontmatter block YAML could not parse;
    ``keys``: the keys the file kind knows (see the module docstring)."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n")
    lines = text.split("\n")
    if not lines or not _FENCE.match(lines[0]):
        return {}, text
    end = next((i for i in range(1, len(lines)) if _FENCE.match(lines[i])), len(lines))
    values: dict[str, Any] = {}
    key: str | None = None
    for line in lines[1:end]:
        match = _KEY_LINE.match(line) if not line[:1].isspace() else None
        if match and keys is not None and key is not None and match.group(1) not in keys:
            match = None  # an unknown word followed by a colon, inside the previous value
        if match:
            key = match.group(1)
            values[key] = _unquote(match.group(2) or "")
            continue
        if key is None or not line.strip():
            continue
        item = _LIST_ITEM.match(line)
        current = values[key]
        if item and (current == "" or isinstance(current, list)):
            values[key] = [*(current or []), _unquote(item.group(1))]
        elif isinstance(current, str):
            values[key] = f"{current}\n{line.strip()}" if current else line.strip()
    body = "\n".join(lines[end + 1 :]).lstrip("\n")
    return values, body


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value
