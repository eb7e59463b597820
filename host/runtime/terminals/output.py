"""Turning a pty's raw bytes into ``terminal/data`` text and shell-integration marks. Pure: no I/O.

``TerminalText.feed(chunk)`` decodes UTF-8 incrementally (a character split across reads is held
until its last byte arrives; invalid bytes become U+FFFD) and removes shell-integration escape
sequences (OSC 133 and OSC 633, which AHP says the host strips), holding back an escape sequence
cut at the end of a chunk until the rest of it arrives. Every other byte, colours and cursor
movements included, is passed through for the client's terminal emulator.

``TerminalText(nonce).segments(chunk)`` does the same but keeps the OSC 633 marks the host's own
shell integration wrote, in order, between the pieces of text: a ``Mark(code, value)`` for
``ESC ] 633 ; code [; value] ; nonce BEL`` (``A`` prompt start, ``B`` prompt end,
``E;<command line>``, ``C`` command executed, ``D;<exit code>`` command finished,
``P;Cwd=<directory>``), with ``value`` unescaped (``\\\\`` is a backslash, ``\\xHH`` a character).
Only a mark whose last field is this terminal's ``nonce`` (a secret only the shell integration
was given) is reported: a mark any program prints (``cat`` of a file, a build log) without it is
removed like every other integration sequence and means nothing. Without a nonce no mark is
reported. OSC 133 marks are removed without being reported (they carry no command line).

``bounded(previous, added, content, limit)`` decides how a terminal's scrollback stays under
``limit`` characters: None while ``previous + len(added)`` fits, else the text to start over with
(the newest ``limit // 2`` characters of ``content + added``).
"""

from __future__ import annotations

import codecs
import hmac
import re
from typing import NamedTuple

__all__ = ["Mark", "TerminalText", "bounded", "unescape"]

_INTEGRATION = re.compile(r"\x1b\](133|633);([^\x07\x1b]*)(?:\x07|\x1b\\)")
_OPEN_OSC = re.compile(r"\x1b(?:\](?:[^\x07\x1b]*(?:\x1b)?)?)?$")
_ESCAPED = re.compile(r"\\(\\|x[0-9a-fA-F]{2})")


class Mark(NamedTuple):
    code: str
    value: str | None


def unescape(value: str) -> str:
    """An OSC 633 parameter as the shell meant it: ``\\\\`` → ``\\``, ``\\xHH`` → that character."""
    return _ESCAPED.sub(lambda m: "\\" if m.group(1) == "\\" else chr(int(m.group(1)[1:], 16)), value)


class TerminalText:
    def __init__(self, nonce: str | None = None) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._held = ""
        self._nonce = nonce

    def feed(self, chunk: bytes, final: bool = False) -> str:
        return "".join(part for part in self.segments(chunk, final) if isinstance(part, str))

    def segments(self, chunk: bytes, final: bool = False) -> list[str | Mark]:
        text = self._held + self._decoder.decode(chunk, final)
        self._held = ""
        if not final:
            tail = _OPEN_OSC.search(text)
            if tail is not None and len(text) - tail.start() < 4096:
                self._held = text[tail.start():]
                text = text[: tail.start()]
        parts: list[str | Mark] = []
        position = 0
        for match in _INTEGRATION.finditer(text):
            if match.start() > position:
                parts.append(text[position:match.start()])
            position = match.end()
            if match.group(1) == "633":
                mark = self._mark(match.group(2))
                if mark is not None:
                    parts.append(mark)
        if position < len(text):
            parts.append(text[position:])
        return parts

    def _mark(self, payload: str) -> Mark | None:
        """The mark in an OSC 633 payload if it carries this terminal's nonce, else None."""
        fields = payload.split(";")
        if self._nonce is None or len(fields) < 2 or not hmac.compare_digest(fields[-1].encode(), self._nonce.encode()):
            return None
        value = ";".join(fields[1:-1]) if len(fields) > 2 else None
        return Mark(fields[0], unescape(value) if value is not None else None)


def bounded(previous: int, added: str, content: str, limit: int) -> str | None:
    """None if ``previous + len(added)`` fits in ``limit``; else the newest ``limit // 2``
    characters of ``content + added`` to replace the scrollback with."""
    if previous + len(added) <= limit:
        return None
    return (content + added)[-(limit // 2):]
