"""Strict JSON parsing that also reports where each object member sits in the text.

Contract:
- :func:`parse_json` returns the decoded value (exactly what ``json.loads`` gives) and a map
  from member path (a tuple of keys; array items use their int index) to a :class:`Span`.
- A member's span runs from the opening quote of its key to one past the last character of
  its value, as zero-based line/character positions (the convention AHP ``TextRange`` uses
  in the sample fixtures: ``end`` is exclusive).
- Invalid JSON raises :class:`JsonSyntaxError` whose message names the parser's line and
  column (one-based, as editors show them); no other exception escapes.

Why a second pass: ``json`` exposes no positions, so after ``json.loads`` has validated the
text a small scanner walks it again to record offsets. The scanner may assume valid input.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

__all__ = ["JsonSyntaxError", "Position", "Span", "parse_json"]

_WS = re.compile(r"[ \t\n\r]*")
_SCALAR_END = re.compile(r"[^,\]}\s]*")


class JsonSyntaxError(ValueError):
    """The text is not valid JSON; the message carries the position."""


@dataclass(frozen=True)
class Position:
    """Zero-based line and character."""

    line: int
    character: int


@dataclass(frozen=True)
class Span:
    """A member's extent: start at its key's opening quote, end exclusive after its value."""

    start: Position
    end: Position

    def to_wire(self) -> dict[str, Any]:
        """AHP ``TextRange``."""
        return {
            "start": {"line": self.start.line, "character": self.start.character},
            "end": {"line": self.end.line, "character": self.end.character},
        }


Path = tuple["str | int", ...]


def parse_json(text: str) -> tuple[Any, dict[Path, Span]]:
    """Decode ``text`` and return ``(value, spans)``; raise JsonSyntaxError if it is invalid."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonSyntaxError(f"{exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def position(offset: int) -> Position:
        line = bisect_right(line_starts, offset) - 1
        return Position(line, offset - line_starts[line])

    spans: dict[Path, Span] = {}
    _Scanner(text, spans, position).value(_skip_ws(text, 0), ())
    return value, spans


def _skip_ws(text: str, index: int) -> int:
    return _WS.match(text, index).end()  # type: ignore[union-attr]  # "[...]*" matches everywhere


class _Scanner:
    """Walks valid JSON text, recording member spans. Returns end offsets of values."""

    def __init__(self, text: str, spans: dict[Path, Span], position: Any) -> None:
        self.text = text
        self.spans = spans
        self.position = position

    def value(self, index: int, path: Path) -> int:
        char = self.text[index]
        if char == "{":
            return self.obj(index, path)
        if char == "[":
            return self.array(index, path)
        if char == '"':
            return json.decoder.scanstring(self.text, index + 1)[1]  # type: ignore[attr-defined]  # public, not in typeshed
        return _SCALAR_END.match(self.text, index).end()  # type: ignore[union-attr]  # "[...]*" matches everywhere

    def obj(self, index: int, path: Path) -> int:
        index = _skip_ws(self.text, index + 1)
        if self.text[index] == "}":
            return index + 1
        while True:
            key_start = index
            key, index = json.decoder.scanstring(self.text, index + 1)  # type: ignore[attr-defined]  # public, not in typeshed
            index = _skip_ws(self.text, index)
            index = _skip_ws(self.text, index + 1)  # past ':'
            member = path + (key,)
            end = self.value(index, member)
            # Duplicate keys: json.loads keeps the last one, so the last span wins too.
            self.spans[member] = Span(self.position(key_start), self.position(end))
            index = _skip_ws(self.text, end)
            if self.text[index] == "}":
                return index + 1
            index = _skip_ws(self.text, index + 1)  # past ','

    def array(self, index: int, path: Path) -> int:
        index = _skip_ws(self.text, index + 1)
        if self.text[index] == "]":
            return index + 1
        item = 0
        while True:
            start = index
            end = self.value(index, path + (item,))
            self.spans[path + (item,)] = Span(self.position(start), self.position(end))
            index = _skip_ws(self.text, end)
            if self.text[index] == "]":
                return index + 1
            index = _skip_ws(self.text, index + 1)
            item += 1
