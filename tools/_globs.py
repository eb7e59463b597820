"""Glob patterns over '/'-separated relative paths, compiled to regular expressions.

Contract: `compile_glob(pattern)` returns a compiled regex that matches a whole relative
POSIX path. Syntax: `*` any run of characters except '/', `?` one character except '/',
`[abc]`/`[!abc]` character classes, and `**` as a whole path component matching zero or
more components (`src/**` matches everything under src, `**/*.py` every .py file at any
depth). A trailing `/**` also matches the directory itself. Pure: no file-system access.
"""

from __future__ import annotations

import functools
import re

__all__ = ["compile_glob", "glob_matches"]


def _translate_component(component: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(component):
        char = component[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = component.find("]", i + 2 if component[i + 1 : i + 2] in ("!", "]") else i + 1)
            if end == -1:
                out.append(re.escape(char))
            else:
                body = component[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=256)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """Compile `pattern` (see module docstring) to a full-match regex."""
    components = [c for c in pattern.strip("/").split("/") if c not in ("", ".")]
    regex = ""
    for index, component in enumerate(components):
        last = index == len(components) - 1
        if component == "**":
            # Zero or more whole components, including their trailing separator.
            regex += "(?:.*)" if last else "(?:[^/]+/)*"
        else:
            regex += _translate_component(component) + ("" if last else "/")
    if components and components[-1] == "**" and len(components) > 1:
        # `src/**` should also match `src` itself: make the final "/" plus tail optional.
        head = regex[: -len("(?:.*)")]
        regex = head[:-1] + "(?:/.*)?"
    return re.compile(regex, re.DOTALL)


def glob_matches(pattern: str, relative_path: str, *, match_basename: bool = False) -> bool:
    """Whether `relative_path` matches; with `match_basename`, slash-free patterns test the name only."""
    if match_basename and "/" not in pattern.strip("/"):
        relative_path = relative_path.rsplit("/", 1)[-1]
    return compile_glob(pattern).fullmatch(relative_path) is not None
