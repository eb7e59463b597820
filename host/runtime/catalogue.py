"""The bounded, ranked catalogues of skills and agents the model is offered with every request.

With many plugins enabled, listing every skill and agent with its whole description costs more
than the conversation (93 published plugins: about 160 KB per request). A catalogue is therefore
cut to a byte budget, and what makes the cut is chosen, not left to chance:

* **ranked**: entries used earlier in the session first, then those sharing the most words with
  the message it is ranked by (callers pass the session's first, so that a listing stays the
  same from request to request and a provider's prompt cache holds), then the rest in the order
  the caller gives (the workspace's own before plugins, in configuration order);
* **short**: each entry is its name and the first sentence of its description, at most
  ``DESCRIPTION_CHARS`` characters (the full text comes on demand through the tool that loads it);
* **bounded**: lines are added while the listing stays within ``budget`` bytes (UTF-8); the
  listing then ends with one line saying how many more there are and how to reach them by name.

:func:`closest` is what a tool answers when the model names an entry that does not exist: the
entries whose names or descriptions match the words it used, so a name the listing left out can
still be found. Pure functions: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["DESCRIPTION_CHARS", "CatalogueItem", "catalogue", "closest", "short_description"]

DESCRIPTION_CHARS = 160
"""Longest description kept for one entry of a catalogue."""

_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_STOP_WORDS = frozenset({"the", "and", "for", "use", "this", "that", "with", "when", "you", "your", "are", "from",
                         "can", "will", "into", "any", "all", "has", "have", "not", "but", "its", "should"})


@dataclass(frozen=True)
class CatalogueItem:
    """One entry a catalogue may list."""

    name: str
    description: str


def short_description(text: str, limit: int = DESCRIPTION_CHARS) -> str:
    """The first sentence of ``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join(text.split())
    first = _SENTENCE_END.split(flat, maxsplit=1)[0]
    if len(first) <= limit:
        return first
    return first[: limit - 1].rstrip() + "…"


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _STOP_WORDS}


def _ranked(items: Sequence[CatalogueItem], query: str, used: Iterable[str]) -> list[CatalogueItem]:
    wanted = _words(query)
    recent = {name: rank for rank, name in enumerate(reversed(list(used)))}

    def key(pair: tuple[int, CatalogueItem]) -> tuple[int, int, int]:
        order, item = pair
        overlap = len(wanted & _words(f"{item.name} {item.description}")) if wanted else 0
        return (recent.get(item.name, len(recent)), -overlap, order)

    return [item for _, item in sorted(enumerate(items), key=key)]


def catalogue(items: Sequence[CatalogueItem], *, budget: int, query: str = "", used: Iterable[str] = (),
              more: str) -> str:
    """The listing: ``- name: description`` lines within ``budget`` bytes, then, when some were
    left out, ``more`` formatted with ``{count}`` (how many)."""
    lines: list[str] = []
    size = 0
    ranked = _ranked(items, query, used)
    for index, item in enumerate(ranked):
        line = f"- {item.name}: {short_description(item.description)}" if item.description.strip() else f"- {item.name}"
        cost = len(line.encode("utf-8")) + 1
        if size + cost > budget:
            lines.append(more.format(count=len(ranked) - index))
            break
        lines.append(line)
        size += cost
    return "\n".join(lines)


def closest(items: Sequence[CatalogueItem], asked: str, limit: int = 15) -> list[CatalogueItem]:
    """Entries matching what the model asked for: the name contains it, or it shares words with
    the name or description (most shared first)."""
    text = asked.strip().lower()
    wanted = _words(asked)
    scored: list[tuple[int, int, CatalogueItem]] = []
    for order, item in enumerate(items):
        name = item.name.lower()
        score = 100 if text and (text in name or name.split(":")[-1] in text) else 0
        score += len(wanted & _words(f"{item.name} {item.description}"))
        if score:
            scored.append((-score, order, item))
    return [item for _, _, item in sorted(scored, key=lambda s: (s[0], s[1]))[:limit]]
