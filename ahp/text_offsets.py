"""AHP text offsets: the protocol counts positions in UTF-16 code units, Python in code points.

Where the protocol carries an offset into text (``completions``' ``offset``, ``rangeStart`` and
``rangeEnd``), an astral character such as an emoji counts 2. Host and clients convert at their
boundary with these, and nowhere else. Pure functions, no I/O.
"""

from __future__ import annotations

__all__ = ["utf16_length", "utf16_to_index", "index_to_utf16"]


def _units(char: str) -> int:
    return 2 if ord(char) > 0xFFFF else 1


def utf16_length(text: str) -> int:
    """How many UTF-16 code units ``text`` takes (the offset of its end)."""
    return len(text.encode("utf-16-le")) // 2


def utf16_to_index(text: str, offset: int) -> int:
    """The Python string index at UTF-16 ``offset``, clamped to the text (an offset inside a
    surrogate pair gives the index after the character)."""
    units = 0
    for index, char in enumerate(text):
        if units >= offset:
            return index
        units += _units(char)
    return len(text)


def index_to_utf16(text: str, index: int) -> int:
    """The UTF-16 offset of Python string index ``index``."""
    return utf16_length(text[:index])
