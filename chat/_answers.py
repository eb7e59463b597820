"""Turning what the user typed into AHP values. Pure: no I/O except ``attachments_in`` (a stat,
and reading the images it attaches).

* ``parse_answer(question, line)`` → a ``SessionInputAnswer`` (``submitted``/``skipped``), or
  ``AnswerError`` with a sentence saying what to type instead. Empty input takes the question's
  ``defaultValue``, else skips an optional question, else is an error for a required one.
* ``parse_choice(line, count, editable)`` → which confirmation option was picked (1-based
  numbers, ``e`` to edit, ``y``/``n`` as the first approve / first deny option).
* ``session_directory(state, fallback)`` → the session's working directory (where ``@path`` is resolved).
* ``attachments_in(text, cwd, vision=, model=)`` → ``resource`` attachments for every ``@path``
  naming an existing file or directory inside ``cwd`` (paths outside it are refused: the host only
  reads there), and image attachments (``chat._images``) for every ``@image.png`` and every image
  file pasted as a path (``pasted_image_paths``), wherever it is: the client sends those inline.
  When the model is known not to see images (``vision`` False) an image is not sent: the user is
  told, and the model gets a ``simple`` attachment saying so.
* ``model_selection(args, models)`` → a ``ModelSelection`` from ``/model ID key=value ...``,
  checked against the model's ``configSchema``.
"""

from __future__ import annotations

import mimetypes
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from chat._images import ImageError, is_image_path, pasted_image_paths, read_image

__all__ = [
    "AnswerError",
    "parse_answer",
    "parse_choice",
    "attachments_in",
    "model_selection",
]


class AnswerError(ValueError):
    """The typed text does not answer the question; the message says what would."""


_YES = {"y", "yes", "true", "1", "on"}
_NO = {"n", "no", "false", "0", "off"}


def _submitted(value: dict[str, Any]) -> dict[str, Any]:
    return {"state": "submitted", "value": value}


def _default_answer(question: Mapping[str, Any]) -> dict[str, Any] | None:
    default = question.get("defaultValue")
    kind = question.get("kind", "text")
    if default is None:
        return None
    if kind == "boolean":
        return _submitted({"kind": "boolean", "value": bool(default)})
    if kind in ("number", "integer"):
        return _submitted({"kind": "number", "value": default})
    return _submitted({"kind": "text", "value": str(default)})


def _number(question: Mapping[str, Any], text: str) -> float | int:
    kind = question.get("kind")
    try:
        value: float | int = int(text) if kind == "integer" else float(text)
    except ValueError:
        raise AnswerError("type a whole number" if kind == "integer" else "type a number") from None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    low, high = question.get("min"), question.get("max")
    if isinstance(low, (int, float)) and value < low:
        raise AnswerError(f"the smallest allowed value is {low:g}")
    if isinstance(high, (int, float)) and value > high:
        raise AnswerError(f"the largest allowed value is {high:g}")
    return value


def _options(question: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [o for o in question.get("options") or () if isinstance(o, Mapping)]


def _pick(question: Mapping[str, Any], token: str) -> str | None:
    """An option id for a typed number, id or label (case-insensitive); None if none matches."""
    options = _options(question)
    if token.isdigit() and 1 <= int(token) <= len(options):
        return str(options[int(token) - 1].get("id"))
    lowered = token.casefold()
    for option in options:
        if lowered in (str(option.get("id", "")).casefold(), str(option.get("label", "")).casefold()):
            return str(option.get("id"))
    return None


def parse_answer(question: Mapping[str, Any], line: str) -> dict[str, Any]:
    """The answer the user typed for ``question`` (see the module docstring)."""
    text = line.strip()
    kind = question.get("kind", "text")
    if not text:
        default = _default_answer(question)
        if default is not None:
            return default
        if question.get("required"):
            raise AnswerError("this question needs an answer")
        return {"state": "skipped"}
    if kind == "text":
        low, high = question.get("min"), question.get("max")
        if isinstance(low, (int, float)) and len(text) < low:
            raise AnswerError(f"type at least {low:g} characters")
        if isinstance(high, (int, float)) and len(text) > high:
            raise AnswerError(f"type at most {high:g} characters")
        return _submitted({"kind": "text", "value": text})
    if kind in ("number", "integer"):
        return _submitted({"kind": "number", "value": _number(question, text)})
    if kind == "boolean":
        if text.casefold() in _YES:
            return _submitted({"kind": "boolean", "value": True})
        if text.casefold() in _NO:
            return _submitted({"kind": "boolean", "value": False})
        raise AnswerError("type y or n")
    if kind == "single-select":
        chosen = _pick(question, text)
        if chosen is not None:
            return _submitted({"kind": "selected", "value": chosen})
        if question.get("allowFreeformInput"):
            return _submitted({"kind": "selected", "value": "", "freeformValues": [text]})
        raise AnswerError(f"type a number from 1 to {len(_options(question))}")
    if kind == "multi-select":
        chosen_ids: list[str] = []
        freeform: list[str] = []
        for token in (t.strip() for t in text.split(",")):
            if not token:
                continue
            picked = _pick(question, token)
            if picked is not None:
                if picked not in chosen_ids:
                    chosen_ids.append(picked)
            elif question.get("allowFreeformInput"):
                freeform.append(token)
            else:
                raise AnswerError(f"{token!r} is not one of the options; type numbers from 1 to {len(_options(question))}")
        count = len(chosen_ids) + len(freeform)
        low, high = question.get("min"), question.get("max")
        if isinstance(low, (int, float)) and count < low:
            raise AnswerError(f"pick at least {low:g}")
        if isinstance(high, (int, float)) and count > high:
            raise AnswerError(f"pick at most {high:g}")
        value: dict[str, Any] = {"kind": "selected-many", "value": chosen_ids}
        if freeform:
            value["freeformValues"] = freeform
        return _submitted(value)
    return _submitted({"kind": "text", "value": text})


def parse_choice(line: str, options: Sequence[Mapping[str, Any]], editable: bool) -> int | str:
    """A 0-based option index, ``"edit"``, or raises ``AnswerError``."""
    text = line.strip().casefold()
    if editable and text in ("e", "edit"):
        return "edit"
    if text.isdigit() and 1 <= int(text) <= len(options):
        return int(text) - 1
    wanted = "approve" if text in ("y", "yes") else "deny" if text in ("n", "no") else None
    if wanted is not None:
        for index, option in enumerate(options):
            if option.get("kind") == wanted:
                return index
    extra = ", e to edit" if editable else ""
    raise AnswerError(f"type a number from 1 to {len(options)} (y/n for the first allow/deny){extra}")


_AT_PATH = re.compile(r"(?:(?<=\s)|^)@(\"[^\"]+\"|[^\s]+)")


def session_directory(state: Mapping[str, Any] | None, fallback: Path) -> Path:
    """Where ``@path`` is resolved: the session's working directory when it is a local directory."""
    uri = ((state or {}).get("summary") or {}).get("workingDirectory")
    if isinstance(uri, str):
        parsed = urlsplit(uri)
        if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
            path = Path(unquote(parsed.path))
            if path.is_dir():
                return path
    return fallback


def attachments_in(
    text: str, cwd: Path, *, vision: bool | None = None, model: str = "this model",
) -> tuple[list[dict[str, Any]], list[str]]:
    """Attachments for each ``@path`` and pasted image path in ``text``, and problems to report."""
    root = Path(os.path.realpath(cwd))
    attachments: list[dict[str, Any]] = []
    problems: list[str] = []

    def image(label: str, path: Path) -> None:
        if vision is False:
            problems.append(f"{label} is an image and {model} cannot see images; pick a model that can with /model")
            note = f"[The user attached the image {label}; it was not sent: this model cannot see images.]"
            attachments.append({"type": "simple", "label": label, "modelRepresentation": note})
            return
        try:
            attachments.append(read_image(path, label))
        except ImageError as error:
            problems.append(str(error))

    for match in _AT_PATH.finditer(text):
        raw = match.group(1)
        if raw.startswith('"'):
            raw = raw.strip('"')
        elif not os.path.lexists(root / os.path.expanduser(raw)):
            raw = raw.rstrip(".,;:!?)]}'\"") or raw  # "look at @a.py." means a.py, as the host reads it
        path = Path(os.path.realpath(root / os.path.expanduser(raw)))
        if is_image_path(raw) and path.is_file():
            if not any(a.get("label") == raw for a in attachments):
                image(raw, path)
            continue
        if path != root and root not in path.parents:
            problems.append(f"@{raw} is outside the working directory {root}; the host will not read it")
            continue
        if not path.exists():
            problems.append(f"@{raw}: no such file")
            continue
        attachment: dict[str, Any] = {
            "type": "resource",
            "uri": path.as_uri(),
            "label": raw,
        }
        if path.is_dir():
            attachment["displayKind"] = "directory"
        else:
            attachment["sizeHint"] = path.stat().st_size
            content_type = mimetypes.guess_type(path.name)[0]
            if content_type:
                attachment["contentType"] = content_type
            attachment["displayKind"] = "document"
        if not any(a.get("uri") == attachment["uri"] for a in attachments):
            attachments.append(attachment)
    for written, path in pasted_image_paths(text):
        image(written.strip("'\""), path)
    return attachments, problems


def model_selection(args: Sequence[str], models: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``ModelSelection{id, config?}`` from ``ID key=value ...``; raises ``AnswerError``."""
    if not args:
        raise AnswerError("name a model: /model ID [option=value ...]")
    model_id, settings = args[0], args[1:]
    model = next((m for m in models if m.get("id") == model_id), None)
    if model is None and models:
        known = ", ".join(str(m.get("id")) for m in models)
        raise AnswerError(f"this agent has no model {model_id!r} (models: {known})")
    properties = ((model or {}).get("configSchema") or {}).get("properties") or {}
    config: dict[str, str] = {}
    for setting in settings:
        key, sep, value = setting.partition("=")
        if not sep or not key:
            raise AnswerError(f"write model options as key=value, not {setting!r}")
        prop = properties.get(key)
        if prop is None:
            known = ", ".join(properties) or "none"
            raise AnswerError(f"model {model_id} has no option {key!r} (options: {known})")
        allowed = prop.get("enum")
        if allowed and value not in [str(v) for v in allowed]:
            raise AnswerError(f"{key} must be one of {', '.join(str(v) for v in allowed)}")
        config[key] = value
    selection: dict[str, Any] = {"id": model_id}
    if config:
        selection["config"] = config
    return selection
