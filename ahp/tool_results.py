"""An AHP ``ToolCallResult`` (or a running call's content) as plain text: the one renderer.

The model reads a tool's result as text (``host.runtime.conversation``), an AG-UI front end shows it as
text (``host.transport.agui``), and the terminal client prints it (``chat.render``). All three call this
module, so a result reads the same wherever it appears.

* ``content_text(items)``: each ``ToolResultContent`` item on its own line: text as it is; a
  file edit as ``[edited URI (+added -removed)]``; a resource as ``[URI]``; embedded data as
  ``[embedded CONTENT-TYPE]``; a terminal or a sub-agent as ``[terminal TITLE]`` /
  ``[subagent TITLE]``. Items that are not objects or of unknown types are skipped.
* ``result_text(result)``: the content; when there is none, the structured content as JSON; then
  the error message unless the output already says it (as ``Error: MESSAGE`` after output,
  alone as it is); when all of that is empty, the past-tense message (or ``Done.`` /
  ``The tool failed.``). Never empty.

Pure: no I/O, no terminal escapes (callers that print text from a tool sanitise it themselves).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["content_text", "result_text"]


def _item_text(item: Mapping[str, Any]) -> str | None:
    kind = item.get("type")
    if kind == "text":
        text = item.get("text")
        return text if isinstance(text, str) else None
    if kind == "fileEdit":
        target = (item.get("after") or item.get("before") or {}).get("uri") or "a file"
        diff = item.get("diff")
        counts = f" (+{diff.get('added', 0)} -{diff.get('removed', 0)})" if isinstance(diff, Mapping) else ""
        return f"[edited {target}{counts}]"
    if kind == "resource":
        return f"[{item.get('uri', '')}]"
    if kind == "embeddedResource":
        return f"[embedded {item.get('contentType') or 'data'}]"
    if kind in ("terminal", "subagent"):
        return f"[{kind} {item.get('title') or item.get('resource') or ''}]".replace(" ]", "]")
    return None


def content_text(items: Iterable[Any] | None) -> str:
    """The content items of a result (or of a running call), one per line."""
    pieces = (_item_text(item) for item in items or () if isinstance(item, Mapping))
    return "\n".join(piece for piece in pieces if piece)


def result_text(result: Mapping[str, Any]) -> str:
    """What a finished call's result says, as text; never empty."""
    pieces: list[str] = []
    content = content_text(result.get("content"))
    if content:
        pieces.append(content)
    elif result.get("structuredContent") is not None:
        pieces.append(json.dumps(result["structuredContent"], ensure_ascii=False))
    error = result.get("error")
    if isinstance(error, Mapping) and error.get("message") and str(error["message"]) not in content:
        pieces.append(f"Error: {error['message']}" if pieces else str(error["message"]))
    if not pieces:
        past = result.get("pastTenseMessage")
        if isinstance(past, Mapping):
            past = past.get("markdown") or past.get("text")
        pieces.append(str(past or ("Done." if result.get("success", True) else "The tool failed.")))
    return "\n".join(pieces)
