"""Content items, content references and file-edit descriptions in AHP wire shape.

Contract:
* `ContentStore` is the small interface the host implements so tools can hand out
  `ContentRef`s for large text (the before/after of a file edit) instead of inlining it:
  `put(data, content_type) -> uri` and `get(uri) -> bytes | None`. The host serves those
  URIs through `resourceRead`. Two implementations live here: `InMemoryContentStore`
  (content-addressed, for tests and single-process hosts) and `DataUriContentStore`
  (self-contained `data:` URIs, nothing to serve, only sensible for small content).
* `file_edit(...)` builds an AHP `FileEdit` (the shape used both in `toolCallReady.edits`
  and, with `type: "fileEdit"`, as a tool result content item): `before`/`after` are
  `{uri: file URI, content: ContentRef}`; a creation has only `after`, a deletion only
  `before`; `diff{added, removed}` counts changed lines.
* Every builder returns plain JSON-shaped dicts with camelCase keys; absent values are
  omitted, never `None`.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
from pathlib import Path
from typing import Protocol, runtime_checkable
from urllib.parse import quote, unquote_to_bytes

__all__ = [
    "ContentStore",
    "InMemoryContentStore",
    "DataUriContentStore",
    "text_content",
    "content_ref",
    "file_uri",
    "diff_stats",
    "file_edit",
    "file_edit_content",
]


@runtime_checkable
class ContentStore(Protocol):
    """Maps URIs to bytes so large content can travel as a `ContentRef`."""

    def put(self, data: bytes, content_type: str, name: str | None = None) -> str:
        """Store `data` and return the URI clients will read it from; `name` (a file's name, when
        the data is a version of a file) ends the URI where the store's URIs have a path."""
        ...

    def get(self, uri: str) -> bytes | None:
        """The bytes behind `uri`, or None when this store does not know it."""
        ...


class InMemoryContentStore:
    """Content-addressed store: the same bytes always get the same URI."""

    def __init__(self, scheme: str = "agent-host-content") -> None:
        self._scheme = scheme
        self._blobs: dict[str, bytes] = {}
        self._types: dict[str, str] = {}

    def put(self, data: bytes, content_type: str, name: str | None = None) -> str:
        key = f"{self._scheme}:/sha256/{hashlib.sha256(data).hexdigest()}"
        self._blobs[key] = bytes(data)
        self._types[key] = content_type
        return key + ("/" + quote(name, safe="") if name else "")

    def _key(self, uri: str) -> str:
        head, sha, rest = uri.partition("/sha256/")
        return head + sha + rest.split("/", 1)[0]

    def get(self, uri: str) -> bytes | None:
        return self._blobs.get(self._key(uri))

    def content_type(self, uri: str) -> str | None:
        """The content type given when `uri` was stored."""
        return self._types.get(self._key(uri))


class DataUriContentStore:
    """Encodes content into `data:` URIs; nothing is retained."""

    def put(self, data: bytes, content_type: str, name: str | None = None) -> str:
        return f"data:{content_type};base64,{base64.b64encode(data).decode('ascii')}"

    def get(self, uri: str) -> bytes | None:
        if not uri.startswith("data:") or "," not in uri:
            return None
        header, _, payload = uri[5:].partition(",")
        if header.endswith(";base64"):
            try:
                return base64.b64decode(payload, validate=True)
            except ValueError:
                return None
        return unquote_to_bytes(payload)


def text_content(text: str) -> dict:
    """A `ToolResultTextContent` item."""
    return {"type": "text", "text": text}


def content_ref(store: ContentStore, data: bytes, content_type: str, name: str | None = None) -> dict:
    """Store `data` and return the `ContentRef` pointing at it (`name`: the file it is a version of)."""
    return {"uri": store.put(data, content_type, name), "sizeHint": len(data), "contentType": content_type}


def file_uri(path: Path) -> str:
    """The `file://` URI of an absolute path."""
    return path.as_uri()


def _lines(data: bytes) -> list[str] | None:
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return None


def diff_stats(before: bytes | None, after: bytes | None) -> dict:
    """`{added, removed}` line counts between two versions (None = the file is absent).

    Binary content (not UTF-8) counts as no lines, so only the text side is counted.
    """
    old = _lines(before) if before is not None else []
    new = _lines(after) if after is not None else []
    old = old or []
    new = new or []
    added = removed = 0
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    return {"added": added, "removed": removed}


def _content_type(data: bytes) -> str:
    return "text/plain; charset=utf-8" if _lines(data) is not None else "application/octet-stream"


def file_edit(store: ContentStore, path: Path, before: bytes | None, after: bytes | None) -> dict:
    """An AHP `FileEdit` for `path` going from `before` to `after` (None = absent)."""
    edit: dict = {}
    uri = file_uri(path)
    if before is not None:
        edit["before"] = {"uri": uri, "content": content_ref(store, before, _content_type(before), path.name)}
    if after is not None:
        edit["after"] = {"uri": uri, "content": content_ref(store, after, _content_type(after), path.name)}
    edit["diff"] = diff_stats(before, after)
    return edit


def file_edit_content(store: ContentStore, path: Path, before: bytes | None, after: bytes | None) -> dict:
    """The same edit as a `ToolResultFileEditContent` item (`type: "fileEdit"`)."""
    return {"type": "fileEdit", **file_edit(store, path, before, after)}
