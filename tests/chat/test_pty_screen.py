"""The pty harness reads a drawing client off a screen (``tests/chat/_pty.py``): prompt_toolkit
redraws only the cells that changed, so the bytes without their escape sequences are not the line
a person sees."""

from __future__ import annotations

from tests.chat._pty import _ESCAPES, Screen

# Recorded from the terminal client: the input line held ``/mcp__notes__re`` (its menu below), then
# Ctrl-U and ``see @notes:notes://rea`` arrived in one read. The redraw moves the cursor over the
# ``e`` at column 16, which the old line already had there.
PROMPT = b"\x1b[0m\x1b[1m> \x1b[0m/mcp__notes__re\r\n  \x1b[0;38;5;16;48;5;250m /mcp__notes__review \x1b[0m\x1b[A\r\x1b[17C"
REDRAW = b"\x1b[?25l\x1b[?7l\x1b[15D\x1b[0msee @notes:not\x1b[Cs://rea\x1b[0m\r\r\n\x1b[C\x1b[0m\x1b[K\x1b[A\x1b[23C\x1b[?7h\x1b[0m\x1b[?12l\x1b[?25h"


def test_a_cell_the_client_kept_is_read_from_the_screen() -> None:
    screen = Screen(columns=80, lines=10)
    screen.feed(PROMPT)
    assert screen.lines[:2] == ["> /mcp__notes__re", "   /mcp__notes__review"]
    screen.feed(REDRAW)
    assert screen.lines[:2] == ["> see @notes:notes://rea", ""]
    # What the harness read before: the kept cell is missing from the bytes.
    assert "see @notes:nots://rea" in _ESCAPES.sub("", (PROMPT + REDRAW).decode())

