"""Namespaced tool names for MCP tools.

Contract: the tool `<tool>` of server `<server>` is offered to the model as
`mcp__<server>__<tool>`, where:
* every character outside `[A-Za-z0-9_-]` (the set OpenAI and Anthropic accept) becomes
  `_`, and an empty part becomes `_`;
* the result is at most `MAX_TOOL_NAME` (64) characters: a longer name keeps its first
  57 characters and ends with `_` plus 6 hex digits of the SHA-1 of `server\\0tool`, so
  truncation is stable and two long names that share a prefix stay distinct;
* collisions (two different (server, tool) pairs that sanitize to the same name, or a
  name already taken by another tool) are resolved deterministically: the pair that sorts
  first keeps the plain name, each other one gets the same `_<6 hex>` suffix.
`allocate_names` is pure: the same inputs always give the same names, whatever the order.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

__all__ = ["MAX_TOOL_NAME", "PREFIX", "namespaced_name", "allocate_names"]

MAX_TOOL_NAME = 64
"""The longest tool name provider APIs accept."""
PREFIX = "mcp"

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def _clean(part: str) -> str:
    return _UNSAFE.sub("_", part) or "_"


def _digest(server: str, tool: str) -> str:
    return hashlib.sha1(f"{server}\0{tool}".encode()).hexdigest()[:6]


def _with_suffix(base: str, server: str, tool: str) -> str:
    suffix = "_" + _digest(server, tool)
    return base[: MAX_TOOL_NAME - len(suffix)] + suffix


def namespaced_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, sanitized and length-bounded (without collision handling)."""
    base = f"{PREFIX}__{_clean(server)}__{_clean(tool)}"
    return base if len(base) <= MAX_TOOL_NAME else _with_suffix(base, server, tool)


def allocate_names(pairs: Iterable[tuple[str, str]], taken: Iterable[str] = ()) -> dict[tuple[str, str], str]:
    """A unique provider-safe name for each (server, tool) pair; see the module contract."""
    used = set(taken)
    names: dict[tuple[str, str], str] = {}
    for server, tool in sorted(set(pairs)):
        name = namespaced_name(server, tool)
        if name in used:
            name = _with_suffix(name, server, tool)
            counter = 2
            while name in used:  # only a SHA-1 prefix collision gets here
                name = _with_suffix(f"{name}_{counter}", server, tool)
                counter += 1
        used.add(name)
        names[(server, tool)] = name
    return names
