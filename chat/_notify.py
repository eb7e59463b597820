"""Calling the user back to the chat: a terminal bell, and a desktop notification where the
terminal shows one. Pure: ``Notifier`` decides and composes the bytes; the terminal writes them.

When: a turn waits for the user (a tool call to confirm, a result to accept, a question) unless
the terminal reported that its window has the focus; a turn ended while the window did not have
the focus; or, where the terminal does not report focus (or has not yet), a turn that ended after
running ``after`` seconds or more (``notify_after``, 30 by default).

How (``notify`` in the client's settings):

* ``auto`` (the default): the bell, plus a desktop notification in terminals known to show one:
  OSC 9 in iTerm2, WezTerm, ghostty and Windows Terminal, OSC 777 in VTE terminals (GNOME Terminal,
  Tilix...), foot and urxvt. Inside tmux or screen the bell only (they do not pass the others on).
* ``bell``: the bell only; ``osc9`` / ``osc777``: the bell and that notification, whatever the
  terminal; ``off``: nothing.

Focus: ``FOCUS_ON`` asks the terminal to report focus changes (``ESC [ I`` in, ``ESC [ O`` out,
xterm's mode 1004, which most terminals have), ``FOCUS_OFF`` stops it. Notification text is
host text made safe: no control characters, and no ``;`` in the OSC 777 title.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["Notifier", "desktop_kind", "notification", "FOCUS_ON", "FOCUS_OFF", "BELL"]

BELL = "\x07"
FOCUS_ON = "\x1b[?1004h"
FOCUS_OFF = "\x1b[?1004l"
_TITLE = "agent-host"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_OSC9_TERMINALS = ("iTerm.app", "WezTerm", "ghostty")


def desktop_kind(environ: Mapping[str, str]) -> str | None:
    """The desktop notification this terminal is known to show (``osc9``, ``osc777``), or None."""
    if environ.get("TMUX") or environ.get("STY") or environ.get("TERM", "").startswith(("screen", "tmux")):
        return None
    if environ.get("TERM_PROGRAM") in _OSC9_TERMINALS or environ.get("WT_SESSION"):
        return "osc9"
    if environ.get("VTE_VERSION") or environ.get("TERM", "").startswith(("foot", "rxvt-unicode")):
        return "osc777"
    return None


def _safe(text: str, limit: int = 200) -> str:
    text = " ".join(_CONTROL.sub(" ", text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def notification(kind: str | None, body: str) -> str:
    """The bell followed by the ``kind`` notification saying ``body`` (just the bell for None)."""
    body = _safe(body)
    if kind == "osc9":
        return BELL + f"\x1b]9;{_TITLE}: {body}\x07"
    if kind == "osc777":
        return BELL + f"\x1b]777;notify;{_TITLE};{body.replace(';', ',')}\x07"
    return BELL


class Notifier:
    """Decides when to call the user back and what to write (see the module docstring)."""

    def __init__(self, method: str = "auto", after: float = 30.0, environ: Mapping[str, str] | None = None) -> None:
        self.method = method
        self.after = after
        self.kind = desktop_kind(environ or {}) if method == "auto" else method if method in ("osc9", "osc777") else None

    @property
    def enabled(self) -> bool:
        return self.method != "off"

    def waiting(self, what: str, focused: bool | None) -> str:
        """What to write when a turn waits for the user (``what`` it waits for), or ""."""
        if not self.enabled or focused is True:
            return ""
        return notification(self.kind, what)

    def turn_ended(self, summary: str, elapsed: float, focused: bool | None) -> str:
        """What to write when a turn ended after ``elapsed`` seconds, or ""."""
        if not self.enabled or focused is True:
            return ""
        if focused is None and elapsed < self.after:
            return ""
        return notification(self.kind, summary)
