"""Streaming markdown, rendered with rich a finished block at a time.

An answer arrives a few characters at a time, but markdown can only be rendered right once a
block is whole (a fence closed, a paragraph ended). ``MarkdownStream.feed(text)`` returns the
blocks the new text completed, rendered for the terminal, and keeps the rest; ``tail()`` renders
that unfinished rest for the live region (it is drawn again as it grows, never printed); and
``finish()`` renders whatever is left when the part ends.

A block ends at a blank line outside a fenced code block, or at the line closing a fence. No
I/O: rich renders into a string (``render_markdown``); the caller decides where text goes.
"""

from __future__ import annotations

import io
import re
from typing import Callable

from rich.console import Console
from rich.markdown import Markdown
from rich.syntax import Syntax

__all__ = ["MarkdownStream", "render_markdown", "render_diff", "block_end"]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_PADDING = re.compile(r"[ ]+(?=\n|$)")


def _console(width: int) -> Console:
    return Console(
        file=io.StringIO(), force_terminal=True, width=max(20, width), color_system="256",
        highlight=False, emoji=False, markup=False, soft_wrap=False,
    )


def render_markdown(text: str, width: int) -> str:
    """``text`` as rich renders markdown (word-wrapped to ``width``, code highlighted)."""
    console = _console(width)
    console.print(Markdown(text, code_theme="monokai", hyperlinks=False))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    return _PADDING.sub("", out)  # rich pads plain lines to the width; a resize would wrap them


def render_diff(diff: str, width: int) -> str:
    """A unified diff, syntax-highlighted."""
    console = _console(width)
    console.print(Syntax(diff, "diff", theme="monokai", background_color="default", word_wrap=True))
    return _PADDING.sub("", console.file.getvalue())  # type: ignore[attr-defined]


def block_end(text: str) -> int:
    """How much of ``text`` is whole blocks: the offset after the last block that ended."""
    end = 0
    fence: str | None = None
    offset = 0
    for line in text.splitlines(keepends=True):
        offset += len(line)
        if not line.endswith("\n"):
            break  # the last line is still being written
        match = _FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)[0] * len(match.group(1))
            elif not line.strip():
                end = offset
        elif match and match.group(1).startswith(fence) and not line.strip().strip(fence[0]):
            fence = None
            end = offset
    return end


class MarkdownStream:
    """One markdown part as it streams (see the module docstring)."""

    def __init__(self, width: int, render: Callable[[str, int], str] = render_markdown) -> None:
        self.width = width
        self._render = render
        self._pending = ""
        self._blocks = 0

    def feed(self, text: str) -> str:
        self._pending += text
        end = block_end(self._pending)
        if not end:
            return ""
        done, self._pending = self._pending[:end], self._pending[end:]
        return self._emit(done)

    def tail(self) -> str:
        return self._render(self._pending, self.width).rstrip("\n") if self._pending.strip() else ""

    def finish(self) -> str:
        done, self._pending = self._pending, ""
        return self._emit(done)

    def _emit(self, text: str) -> str:
        if not text.strip():
            return ""
        rendered = self._render(text, self.width).rstrip("\n") + "\n"
        spaced = ("\n" if self._blocks else "") + rendered  # blocks apart, as rich spaces them
        self._blocks += 1
        return spaced
