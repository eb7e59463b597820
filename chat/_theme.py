"""Which colours suit the terminal: a dark or a light background (``chat._markdown.THEMES`` by name).

``theme = "dark"`` or ``"light"`` (the client's settings, or ``--theme``) is taken as said.
``"auto"`` (the default) finds out, in this order:

1. ``COLORFGBG`` (``"15;0"``: foreground 15 on background 0), which rxvt, Konsole and others set:
   a background of 0-6 or 8 is dark, 7 or 9-15 light.
2. Asking the terminal (``query_background``): OSC 11 (``ESC ] 11 ; ? ESC \\``) asks for the
   background colour, followed by the primary device attributes request (``ESC [ c``) that every
   terminal answers, so that the wait ends as soon as that answer arrives, whether the colour came
   first or not at all; at most ``QUERY_SECONDS``. A background whose luminance is above one half
   is light. It runs before the input line takes the terminal, only when stdin and stdout are
   terminals; keys typed in that moment are lost.
3. Otherwise dark (most terminals are).

``theme_from_colorfgbg`` and ``theme_from_reply`` are pure; ``query_background`` does the I/O.
Themes are named here (``"dark"``, ``"light"``): this module does not load rich.
"""

from __future__ import annotations

import os
import re
import select
import sys
import termios
import time
from collections.abc import Callable, Mapping

DARK, LIGHT = "dark", "light"

__all__ = ["resolve_theme", "theme_from_colorfgbg", "theme_from_reply", "query_background", "QUERY_SECONDS"]

QUERY_SECONDS = 0.5
_OSC11 = re.compile(rb"\x1b\]11;rgba?:([0-9a-fA-F]{1,4})/([0-9a-fA-F]{1,4})/([0-9a-fA-F]{1,4})")
_DA1 = re.compile(rb"\x1b\[\?[0-9;]*c")


def theme_from_colorfgbg(value: str | None) -> str | None:
    """The theme ``COLORFGBG``'s background colour says, or None when it says none."""
    background = (value or "").split(";")[-1].strip()
    if not background.isdigit():
        return None
    return DARK if int(background) in (0, 1, 2, 3, 4, 5, 6, 8) else LIGHT


def theme_from_reply(reply: bytes) -> str | None:
    """The theme an OSC 11 answer (``ESC ] 11 ; rgb:RRRR/GGGG/BBBB``) says, or None without one."""
    match = _OSC11.search(reply)
    if match is None:
        return None
    red, green, blue = (int(part, 16) / (16 ** len(part) - 1) for part in match.groups())
    luminance = 0.2126 * red + 0.7152 * green + 0.0722 * blue
    return LIGHT if luminance > 0.5 else DARK


def query_background(timeout: float = QUERY_SECONDS) -> bytes:
    """What the terminal answers to the OSC 11 and device attributes requests (b"" when it cannot
    be asked); see the module docstring."""
    try:
        fd_in, fd_out = sys.stdin.fileno(), sys.stdout.fileno()
        if not (os.isatty(fd_in) and os.isatty(fd_out)):
            return b""
        saved = termios.tcgetattr(fd_in)
    except (OSError, ValueError, AttributeError):
        return b""
    raw = list(saved)
    raw[3] &= ~(termios.ICANON | termios.ECHO)
    raw[6] = list(raw[6])
    raw[6][termios.VMIN], raw[6][termios.VTIME] = 0, 0
    answer = b""
    try:
        termios.tcsetattr(fd_in, termios.TCSANOW, raw)
        os.write(fd_out, b"\x1b]11;?\x1b\\\x1b[c")
        deadline = time.monotonic() + timeout
        while not _DA1.search(answer):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd_in], [], [], left)[0]:
                break
            chunk = os.read(fd_in, 1024)
            if not chunk:
                break
            answer += chunk
    except OSError:
        pass
    finally:
        termios.tcsetattr(fd_in, termios.TCSANOW, saved)
    return answer


def resolve_theme(setting: str, environ: Mapping[str, str] | None = None,
                  query: Callable[[], bytes] = query_background) -> str:
    """The theme for ``setting`` (``auto``, ``dark`` or ``light``), finding out for ``auto``."""
    if setting in (DARK, LIGHT):
        return setting
    environ = os.environ if environ is None else environ
    return theme_from_colorfgbg(environ.get("COLORFGBG")) or theme_from_reply(query()) or DARK
