"""Turning a pty's raw bytes into ``terminal/data`` text. Pure: no I/O.

``TerminalText.feed(chunk)`` decodes UTF-8 incrementally (a character split across reads is held
until its last byte arrives; invalid bytes become U+FFFD) and removes shell-integration escape
sequences (OSC 133 and OSC 633, which AHP says the host strips), holding back an escape sequence
cut at the end of a chunk until the rest of it arrives. Every other byte, colours and cursor
movements included, is passed through for the client's terminal emulator.

``bounded(previous, added, content, limit)`` decides how a terminal's scrollback stays under
``limit`` characters: None while ``previous + len(added)`` fits, else the text to start over with
(the newest ``limit // 2`` characters of ``content + added``).
"""

from __future__ import annotations

import codecs
import re

__all__ = ["TerminalText", "bounded"]

_INTEGRATION = re.compile(r"\x1b\](?:133|633);[^\x07\x1b]*(?:\x07|\x1b\\)")
_OPEN_OSC = re.compile(r"\x1b(?:\](?:[^\x07\x1b]*(?:\x1b)?)?)?$")


class TerminalText:
    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._held = ""

    def feed(self, chunk: bytes, final: bool = False) -> str:
        text = self._held + self._decoder.decode(chunk, final)
        self._held = ""
        if not final:
            tail = _OPEN_OSC.search(text)
            if tail is not None and len(text) - tail.start() < 4096:
                self._held = text[tail.start():]
                text = text[: tail.start()]
        return _INTEGRATION.sub("", text)


def bounded(previous: int, added: str, content: str, limit: int) -> str | None:
    """None if ``previous + len(added)`` fits in ``limit``; else the newest ``limit // 2``
    characters of ``content + added`` to replace the scrollback with."""
    if previous + len(added) <= limit:
        return None
    return (content + added)[-(limit // 2):]
