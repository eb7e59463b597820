"""Images as message attachments: image files the user names or pastes, and the clipboard's image.

An image goes to the host inline, as an AHP ``embeddedResource`` attachment (base64 ``data``,
``contentType``, ``displayKind: "image"``), read by the client: the file may be anywhere the user
can read (a screenshot in ``~/Pictures``, a path dragged into the terminal), unlike a text file,
which the host reads itself inside the session's folder. The host gives it to a model that sees
images (``SessionModelInfo.supportsVision``) as image content (OpenAI ``image_url``, Anthropic
``image`` blocks); to any other model it sends a note instead.

* ``IMAGE_TYPES``: the formats both providers take (PNG, JPEG, GIF, WebP); ``IMAGE_LIMIT``: the
  largest image sent (5 MiB, Anthropic's limit per image; also well inside the host's frame limit).
* ``image_attachment(data, label, content_type)`` → the attachment, or raises ``ImageError`` with
  a sentence saying what is wrong (too large, not an image the models take).
* ``read_image(path, label)`` → the attachment for an image file (``ImageError`` if unreadable).
* ``is_image_path(name)``: whether a file name has an image extension.
* ``pasted_image_paths(text)``: image files named in ``text`` by an absolute path, a ``~/`` path or
  a ``file://`` URI, bare, quoted or with escaped spaces, as a terminal pastes a dragged file;
  each ``(as written, path)``, only files that exist.
* ``model_sees_images(agents, state)``: whether the session's model takes images, from the host's
  agent list; None when the host does not say.
* ``clipboard_image(environ)`` (async): the clipboard's image through ``wl-paste`` (Wayland) or
  ``xclip`` (X11), whichever the session has; ``ImageError`` says what is missing.
"""

from __future__ import annotations

import asyncio
import base64
import mimetypes
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = [
    "ImageError", "IMAGE_TYPES", "IMAGE_LIMIT", "image_attachment", "read_image", "is_image_path",
    "pasted_image_paths", "model_sees_images", "clipboard_image",
]

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
IMAGE_LIMIT = 5 * 1024 * 1024
_EXTENSIONS = (".png", ".jpg", ".jpeg", ".gif", ".webp")
_CLIPBOARD_SECONDS = 5.0


class ImageError(ValueError):
    """The image cannot be attached; the message says why and what to do."""


def _size(count: int) -> str:
    return f"{count / 1024 / 1024:.1f} MB" if count >= 1024 * 1024 else f"{max(1, count // 1024)} KB"


def image_attachment(data: bytes, label: str, content_type: str) -> dict[str, Any]:
    """The ``embeddedResource`` attachment carrying ``data`` (see the module docstring)."""
    if content_type not in IMAGE_TYPES:
        raise ImageError(f"{label} is {content_type or 'not an image'}; models take PNG, JPEG, GIF and WebP images")
    if len(data) > IMAGE_LIMIT:
        raise ImageError(f"{label} is {_size(len(data))}; images up to {_size(IMAGE_LIMIT)} are sent (make it smaller first)")
    return {
        "type": "embeddedResource",
        "label": label,
        "data": base64.b64encode(data).decode("ascii"),
        "contentType": content_type,
        "displayKind": "image",
    }


def is_image_path(name: str) -> bool:
    return name.lower().endswith(_EXTENSIONS)


def read_image(path: Path, label: str) -> dict[str, Any]:
    """The attachment for the image file at ``path``."""
    content_type = mimetypes.guess_type(path.name)[0] or ""
    try:
        size = path.stat().st_size
        if size > IMAGE_LIMIT:  # said before reading it all
            raise ImageError(f"{label} is {_size(size)}; images up to {_size(IMAGE_LIMIT)} are sent (make it smaller first)")
        with path.open("rb") as file:
            data = file.read(IMAGE_LIMIT + 1)
    except OSError as error:
        raise ImageError(f"{label} cannot be read ({error.strerror or error})") from None
    return image_attachment(data, label, content_type)


_PASTED = re.compile(r"""'([^']+)'|"([^"]+)"|(file://\S+)|((?:~|/)(?:\\.|\S)+)""")


def pasted_image_paths(text: str) -> list[tuple[str, Path]]:
    """Image files ``text`` names the way a terminal pastes a dragged file (see the module docstring)."""
    found: list[tuple[str, Path]] = []
    for match in _PASTED.finditer(text):
        start = match.start()
        if start > 0 and text[start - 1] == "@":
            continue  # an @mention: ``attachments_in`` reads those
        single, double, uri, bare = match.groups()
        if uri is not None:
            parsed = urlsplit(uri)
            if parsed.netloc not in ("", "localhost"):
                continue
            raw = unquote(parsed.path)
        elif bare is not None:
            raw = re.sub(r"\\(.)", r"\1", bare)
        else:
            raw = single or double or ""
            if not raw.startswith(("/", "~", "file://")):
                continue
            if raw.startswith("file://"):
                raw = unquote(urlsplit(raw).path)
        if not is_image_path(raw):
            continue
        path = Path(os.path.expanduser(raw))
        if path.is_file() and all(path != seen for _, seen in found):
            found.append((match.group(0), path))
    return found


def model_sees_images(agents: Sequence[Mapping[str, Any]], state: Mapping[str, Any] | None) -> tuple[bool | None, str]:
    """``(sees images, model name)`` for the session's model: True or False as the host's
    ``AgentInfo`` says it, None when it does not say (or there is no session yet)."""
    summary = (state or {}).get("summary") or {}
    model_id = (summary.get("model") or {}).get("id")
    agent = next((a for a in agents if a.get("provider") == summary.get("provider")), None)
    models = [m for m in (agent or {}).get("models") or () if isinstance(m, Mapping)]
    model = next((m for m in models if m.get("id") == model_id), None)
    if model is None and len(models) == 1 and not model_id:
        model = models[0]
    if model is None or not isinstance(model.get("supportsVision"), bool):
        return None, str(model_id or "this model")
    return model["supportsVision"], str(model.get("name") or model.get("id"))


async def clipboard_image(environ: Mapping[str, str] | None = None) -> tuple[bytes, str]:
    """The clipboard's image and its type, through ``wl-paste`` or ``xclip`` (see the module docstring)."""
    environ = os.environ if environ is None else environ
    path = environ.get("PATH")
    tools = []
    if environ.get("WAYLAND_DISPLAY") and shutil.which("wl-paste", path=path):
        tools.append((["wl-paste", "--list-types"], lambda kind: ["wl-paste", "--no-newline", "--type", kind]))
    if environ.get("DISPLAY") and shutil.which("xclip", path=path):
        tools.append((["xclip", "-selection", "clipboard", "-t", "TARGETS", "-o"],
                      lambda kind: ["xclip", "-selection", "clipboard", "-t", kind, "-o"]))
    if not tools:
        raise ImageError("no clipboard to read here: /paste-image uses wl-paste (wl-clipboard, on Wayland) or xclip (on X11); "
                         "attach an image file with @path instead")
    for list_types, fetch in tools:
        offered = (await _run(list_types, environ)).decode("utf-8", "replace").split()
        kind = next((k for k in IMAGE_TYPES if k in offered), None)
        if kind is None:
            continue
        data = await _run(fetch(kind), environ, limit=IMAGE_LIMIT + 1)
        if data:
            return data, kind
    raise ImageError("the clipboard holds no image (PNG, JPEG, GIF or WebP): copy one first")


async def _run(argv: list[str], environ: Mapping[str, str], *, limit: int = 64 * 1024) -> bytes:
    """What ``argv`` prints (at most ``limit`` bytes); empty when it fails or takes too long."""
    try:
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            env=dict(environ),
        )
    except OSError:
        return b""
    assert process.stdout is not None
    stdout = process.stdout

    async def read_all() -> bytes:
        chunks: list[bytes] = []
        size = 0
        while size < limit:
            chunk = await stdout.read(limit - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)

    try:
        data = await asyncio.wait_for(read_all(), _CLIPBOARD_SECONDS)
    except TimeoutError:
        _stop(process)
        await process.wait()
        return b""
    if len(data) >= limit:  # more than wanted: it is still writing (``image_attachment`` says too large)
        _stop(process)
        await process.wait()
        return data
    # It closed its output: wait for its status, never signal it (killing a child that has just
    # exited reaps it behind asyncio's child watcher, which then reports 255).
    try:
        status = await asyncio.wait_for(process.wait(), _CLIPBOARD_SECONDS)
    except TimeoutError:  # it closed its output but lingers
        _stop(process)
        await process.wait()
        return b""
    return data if status == 0 else b""


def _stop(process: asyncio.subprocess.Process) -> None:
    try:
        process.kill()
    except ProcessLookupError:
        pass
