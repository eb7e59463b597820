"""Rich rendering for a colour terminal: streaming markdown, a finished block at a time, and
file edits as unified diffs with the code highlighted for the file's language.

An answer arrives a few characters at a time, but markdown can only be rendered right once a
block is whole (a fence closed, a paragraph ended). ``MarkdownStream.feed(text)`` returns the
blocks the new text completed, rendered for the terminal, and keeps the rest; ``tail()`` renders
that unfinished rest for the live region (it is drawn again as it grows, never printed); and
``finish()`` renders whatever is left when the part ends.

A block ends at a blank line outside a fenced code block, or at the line closing a fence.

``drawn(chunks, answer)`` is how a turn's pieces (``TurnView.update_split``) become terminal
text: ``answer`` pieces go through the part's ``MarkdownStream``, anything else (tool calls,
reasoning, usage) first finishes the answer block before it. A live turn and a replayed history
are drawn by it alike.

``render_edit(path, before, after, width)`` is the diff shown before an edit is approved: the
hunks of a unified diff (``difflib``), each line highlighted by the lexer rich (pygments) picks
for the path, removed lines on a red and added lines on a green background.

Both take a ``Theme``: ``DARK`` (the default: monokai, dark tints) or ``LIGHT`` (a pygments style
drawn for white backgrounds, pale tints), for the terminal's background (``chat._theme``).

No I/O: rich renders into a string; the caller decides where text goes.
"""

from __future__ import annotations

import difflib
import io
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.markdown import Markdown
from rich.syntax import Syntax
from rich.text import Text

__all__ = ["MarkdownStream", "render_markdown", "render_edit", "block_end", "drawn", "Theme", "DARK", "LIGHT", "THEMES"]

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_PADDING = re.compile(r"[ ]+(?=\n|$)")


def _console(width: int) -> tuple[Console, io.StringIO]:
    """A console that renders into the returned buffer."""
    buffer = io.StringIO()
    console = Console(
        file=buffer, force_terminal=True, width=max(20, width), color_system="256",
        highlight=False, emoji=False, markup=False, soft_wrap=False,
    )
    return console, buffer


@dataclass(frozen=True)
class Theme:
    """Colours of rendered answers and diffs for one kind of terminal background."""

    name: str
    code: str
    """The pygments style code is highlighted with."""
    removed: str
    """The rich style of a removed line's background."""
    added: str
    """The rich style of an added line's background."""


DARK = Theme("dark", "monokai", "on #3f1d1d", "on #1d3f1d")
LIGHT = Theme("light", "friendly", "on #ffe4e4", "on #e2f7e2")
THEMES = {theme.name: theme for theme in (DARK, LIGHT)}


def render_markdown(text: str, width: int, theme: Theme = DARK) -> str:
    """``text`` as rich renders markdown (word-wrapped to ``width``, code highlighted)."""
    console, buffer = _console(width)
    console.print(Markdown(text, code_theme=theme.code, hyperlinks=False))
    out = buffer.getvalue()
    return _PADDING.sub("", out)  # rich pads plain lines to the width; a resize would wrap them


def render_edit(path: str, before: str | None, after: str | None, width: int, theme: Theme = DARK) -> str:
    """One file edit as a highlighted unified diff (creation when ``before`` is None, deletion
    when ``after`` is); empty when nothing changes."""
    old, new = (before or "").splitlines(), (after or "").splitlines()
    lexer = Syntax.guess_lexer(path, after or before or "")
    old_lines, new_lines = _highlighted(before or "", lexer, len(old), theme), _highlighted(after or "", lexer, len(new), theme)
    console, buffer = _console(width)
    groups = list(difflib.SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(3))
    if not groups:
        return ""
    console.print(Text("--- " + ("/dev/null" if before is None else f"a/{path}"), style="bold"))
    console.print(Text("+++ " + ("/dev/null" if after is None else f"b/{path}"), style="bold"))
    for group in groups:
        first, last = group[0], group[-1]
        console.print(Text(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@", style="cyan"))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for line in old_lines[i1:i2]:
                    console.print(Text(" ") + line)
                continue
            for line in old_lines[i1:i2]:
                console.print(_marked("-", line, theme.removed, "red"))
            for line in new_lines[j1:j2]:
                console.print(_marked("+", line, theme.added, "green"))
    return _PADDING.sub("", buffer.getvalue())


def _highlighted(code: str, lexer: str, count: int, theme: Theme) -> list[Text]:
    """``code``'s lines, highlighted (exactly ``count`` of them, as ``splitlines`` counts)."""
    if not count:
        return []
    lines = Syntax(code, lexer, theme=theme.code, background_color="default").highlight(code).split("\n", allow_blank=True)
    out = [line for line in lines][:count]
    return out + [Text("")] * (count - len(out))


def _marked(sign: str, line: Text, background: str, color: str) -> Text:
    text = Text(sign, style=f"bold {color}") + line
    text.stylize(background)
    return text


def _range(start: int, stop: int) -> str:
    """A unified diff's ``start,length`` for the lines ``start:stop`` (as ``difflib`` writes it)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if not length else start + 1},{length}"


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

    def __init__(self, width: int, render: Callable[[str, int], str] | None = None, theme: Theme = DARK) -> None:
        self.width = width
        self._render = render or (lambda text, width: render_markdown(text, width, theme))
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


def drawn(chunks: Sequence[tuple[str, str]], answer: MarkdownStream) -> str:
    """``chunks`` as the terminal shows them (see the module docstring)."""
    out = []
    for channel, text in chunks:
        out.append(answer.feed(text) if channel == "answer" else answer.finish() + text)
    return "".join(out)
