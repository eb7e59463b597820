"""Sessions by project, for ``/sessions``, ``/resume`` and ``agent-host --resume``. Pure.

``arrange(summaries, here, show_all)`` orders the host's ``listSessions`` items the way a user
picks one to resume: the sessions whose working directory (``working_directory``: the first of
``workingDirectories``) is ``here`` (the chat's directory)
first, then the others, each group most recently changed first. One-shot script runs
(``_meta.oneShot``, ``agent-host -p``) are hidden unless ``show_all``; how many were hidden is kept so the list can say so. The numbers the list
shows are positions in ``Listing.ordered``, which ``/resume N`` takes.

``render_session_list(listing, style, current=, now_ms=)``: one line per session with its title,
how long ago it changed (``modifiedAt``, epoch ms in 0.2.0, or ISO), its first message
(``_meta.firstMessage``, shown when the title does not already start with it), the agent and
model, and for other directories the directory (``~`` for the home folder). ``now_ms`` comes from
the caller, so nothing here reads the clock.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chat._session import shown_directory
from chat.render import Style, clean

__all__ = ["Listing", "arrange", "render_session_list", "age", "working_directory"]


@dataclass(frozen=True)
class Listing:
    ordered: list[Mapping[str, Any]]
    """The sessions shown, in the order (and numbering, from 1) they are shown."""
    here: int
    """How many of them, from the start, work in the chat's directory."""
    hidden: int
    """Sub-agent children and one-shot runs left out (``show_all`` False)."""
    directory: str
    """The chat's directory as a URI."""


def _meta(summary: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = summary.get("_meta")
    return meta if isinstance(meta, Mapping) else {}


def _epoch_ms(value: Any) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000
        except ValueError:
            return 0.0
    return 0.0


def working_directory(summary: Mapping[str, Any]) -> str | None:
    """A ``SessionSummary``'s working directory: the first of its ``workingDirectories``."""
    directories = summary.get("workingDirectories")
    first = directories[0] if isinstance(directories, list) and directories else None
    return first if isinstance(first, str) else None


def arrange(summaries: Sequence[Mapping[str, Any]], here: str, show_all: bool = False) -> Listing:
    shown = [s for s in summaries if show_all or not _meta(s).get("oneShot")]
    newest = sorted(shown, key=lambda s: _epoch_ms(s.get("modifiedAt")), reverse=True)
    mine = [s for s in newest if working_directory(s) == here]
    others = [s for s in newest if working_directory(s) != here]
    return Listing(ordered=mine + others, here=len(mine), hidden=len(summaries) - len(shown), directory=here)


def age(modified_ms: float, now_ms: float) -> str:
    """"just now", "12 min ago", "3 h ago", "5 d ago" (``modified_ms`` 0: unknown)."""
    if modified_ms <= 0:
        return "unknown age"
    seconds = max(0.0, (now_ms - modified_ms) / 1000)
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} d ago"


def _path(uri: Any) -> str:
    return clean(shown_directory(uri)) if isinstance(uri, str) and uri else "no directory"


def _status_label(status: Any) -> str:
    """What a session is doing when it is not idle (``SessionStatus`` bits), else ""."""
    value = int(status) if isinstance(status, (int, float)) else 1
    label = {2: "error", 8: "running", 24: "needs input"}.get(value & 0x1F, "")
    return (label + (" archived" if value & 64 else "")).strip()


def _line(index: int, summary: Mapping[str, Any], style: Style, current: str | None, now_ms: float, elsewhere: bool) -> str:
    mark = "*" if summary.get("resource") == current else " "
    title = clean(summary.get("title") or "untitled").strip()
    meta = _meta(summary)
    facts = [age(_epoch_ms(summary.get("modifiedAt")), now_ms)]
    first = " ".join(clean(meta.get("firstMessage") or "").split())
    if first and not first.lower().startswith(title.lower().rstrip("…. ")):
        facts.append("“" + (first if len(first) <= 60 else first[:59] + "…") + "”")
    if elsewhere:
        facts.append(_path(working_directory(summary)))
    model = (summary.get("model") or {}).get("id") if isinstance(summary.get("model"), Mapping) else None
    who = ", ".join(x for x in (clean(summary.get("provider", "")), clean(model or ""), _status_label(summary.get("status"))) if x)
    tags = "-p run" if meta.get("oneShot") else ""
    tail = style.dim(" (" + who + ")") if who else ""
    return f"{mark}{index:>3}) {style.bold(title)} · " + " · ".join(facts) + tail + (" " + style.yellow(f"[{tags}]") if tags else "")


def render_session_list(listing: Listing, style: Style, *, current: str | None = None, now_ms: float = 0.0) -> str:
    if not listing.ordered:
        hidden = f" ({listing.hidden} -p sessions hidden: --all lists them)" if listing.hidden else ""
        return f"No sessions to resume yet; type a message to start one.{hidden}\n"
    lines = []
    if listing.here:
        lines.append(style.bold(f"In {_path(listing.directory)}:"))
    for index, summary in enumerate(listing.ordered, 1):
        if index == listing.here + 1:
            lines.append(style.bold("In other directories:"))
        lines.append(_line(index, summary, style, current, now_ms, elsewhere=index > listing.here))
    if listing.hidden:
        lines.append(style.dim(f"({listing.hidden} -p sessions hidden: --all lists them)"))
    return "\n".join(lines) + "\n"
