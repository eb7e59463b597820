"""AHP turns ⇄ the neutral conversation (``providers.messages``) a model is sent.

* ``to_user_message`` turns an AHP ``Message`` (text + attachments) into a neutral one:
  embedded images go to vision models only (others get a note in the text); ``file://``
  resource attachments inside the session's working directory are read and given as text (an
  image file, PNG, JPEG, GIF or WebP up to 5 MiB, as an image, under the same rule), any
  other URI is refused with a note; simple attachments use their ``modelRepresentation``.
  Content this host served by reference (``agent-host-content:/sha256/<hex>``: a file-edit
  preview, a tool's output) is read from the host's content store (``content``) when attached,
  also in the form VS Code sends it back (``vscode-agent-host://<authority>/<path>?_ah=<base64 of
  {"scheme": "agent-host-content", ...}>``, its name for a URI of the host it is connected to).
  It also returns the notes meant for the user (shown as system notifications). ``@path`` words in
  the text that name a file inside the working directory and were not attached by the client are
  read the same way, so every client gets Claude Code's ``@file`` behaviour (a mention whose
  label an attachment has, such as an image the client sent inline, is that attachment).
* ``rebuild_turn`` reconstructs a finished turn's messages from its AHP state, for turns that
  have no stored transcript (forked from an older host, say). Reasoning is dropped there: without
  the provider's signature it cannot be sent back.
  A ``systemNotification`` starting with :data:`STEERING_PREFIX` marks where a steering message
  was taken in; it is rebuilt as a user message at that point.
* ``partial_reply`` keeps what a cancelled or failed model call had streamed (text, and tool
  calls whose arguments are complete JSON) without native payloads, which are unfinished.
* ``history`` assembles the conversation of a session's finished turns, preferring transcripts.
* ``repair`` makes a message list acceptable to every provider: consecutive user messages are
  merged and tool calls left without results (a cancelled turn) get an error result.

Pure functions apart from reading attachment files; nothing here touches the store.
"""

from __future__ import annotations

import base64
import binascii
import json
import mimetypes
import operator
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeGuard
from urllib.parse import parse_qs, unquote, urlparse

from ahp.tool_results import result_text
from host.runtime.agents.base import BLOCKED_BY_HOOK
from providers import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    TextPart,
    ToolCallPart,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
)
from regular_files import NotARegularFile, read_regular

__all__ = [
    "to_user_message",
    "host_content_uri",
    "rebuild_turn",
    "history",
    "repair",
    "repair_after",
    "steering_note",
    "partial_reply",
    "ATTACHMENT_TEXT_LIMIT",
    "STEERING_PREFIX",
]

ATTACHMENT_TEXT_LIMIT = 256 * 1024
"""Largest attached file given to the model as text (bytes)."""

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""Image files the models take; one attached or mentioned in the working directory is sent as an image."""
IMAGE_LIMIT = 5 * 1024 * 1024
"""Largest image file sent (bytes; Anthropic's limit per image)."""

STEERING_PREFIX = "Steering: "
"""How the ``systemNotification`` marking a steering message taken into a turn begins."""

_CANCELLED_RESULT = "This tool call did not run to completion (the turn was cancelled or failed)."


ContentReader = Callable[[str], "bytes | None"]
"""The host's content store lookup: the bytes behind an ``agent-host-content:`` URI, or None."""


def to_user_message(
    message: Mapping[str, Any], *, working_directory: Path | None, vision: bool, model_name: str = "this model",
    content: ContentReader | None = None,
) -> tuple[UserMessage, list[str]]:
    """The neutral message for an AHP ``UserMessage`` and the notes to show the user."""
    text = str(message.get("text") or "")
    contents: list[Any] = []
    extra: list[str] = []
    notes: list[str] = []
    for attachment in message.get("attachments") or []:
        if not isinstance(attachment, Mapping):
            continue
        label = str(attachment.get("label") or "attachment")
        kind = attachment.get("type")
        if kind == "simple":
            extra.append(f"[Attachment {label}]\n{attachment.get('modelRepresentation') or label}")
        elif kind == "embeddedResource":
            _embedded(attachment, label, vision, model_name, contents, extra, notes)
        elif kind == "resource":
            _resource(attachment, label, working_directory, extra, notes, content, vision=vision, model_name=model_name, images=contents)
    attached = {str(a.get("uri")) for a in message.get("attachments") or [] if isinstance(a, Mapping)}
    labels = {str(a.get("label")) for a in message.get("attachments") or [] if isinstance(a, Mapping)}
    for label, uri in _mentions(text, working_directory):
        if uri not in attached and label not in labels:  # an image the client sent inline has no URI, only its label
            attached.add(uri)
            _resource({"uri": uri}, label, working_directory, extra, notes, vision=vision, model_name=model_name, images=contents)
    body = "\n\n".join([text, *extra]) if extra else text
    return UserMessage(content=(TextContent(text=body), *contents)), notes


_MENTION = re.compile(r"(?:(?<=\s)|^)@(\"[^\"]+\"|[^\s]+)")
_MENTION_LIMIT = 20


def _mentions(text: str, working_directory: Path | None) -> list[tuple[str, str]]:
    """``(label, file URI)`` for each ``@path`` in ``text`` naming a file in the working directory."""
    if working_directory is None or "@" not in text:
        return []
    root = Path(os.path.realpath(working_directory))
    found: list[tuple[str, str]] = []
    for match in _MENTION.finditer(text):
        raw = match.group(1)
        raw = raw[1:-1] if raw.startswith('"') else raw.rstrip(".,;:!?)]}'\"")
        if not raw or "\x00" in raw:
            continue
        path = Path(os.path.realpath(root / os.path.expanduser(raw)))
        if (root in path.parents) and path.is_file():
            found.append((raw, path.as_uri()))
            if len(found) >= _MENTION_LIMIT:
                break
    return found


def _embedded(
    attachment: Mapping[str, Any], label: str, vision: bool, model_name: str,
    contents: list[Any], extra: list[str], notes: list[str],
) -> None:
    content_type = str(attachment.get("contentType") or "application/octet-stream")
    data = str(attachment.get("data") or "")
    if content_type.startswith("image/"):
        if vision:
            contents.append(ImageContent(media_type=content_type, data=data))
        else:
            note = f"The image {label} was not sent: {model_name} cannot see images."
            extra.append(f"[{note}]")
            notes.append(note)
        return
    try:
        raw = base64.b64decode(data, validate=True)
        decoded = raw[:ATTACHMENT_TEXT_LIMIT].decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        note = f"The attachment {label} ({content_type}) was not sent: only text and images can be given to the model."
        extra.append(f"[{note}]")
        notes.append(note)
        return
    extra.append(_as_file_block(label, _select(decoded, attachment.get("selection"))))


def host_content_uri(uri: str) -> str | None:
    """The ``agent-host-content:`` URI ``uri`` names: itself, or VS Code's wrapped form of it."""
    if uri.startswith("agent-host-content:"):
        return uri
    parsed = urlparse(uri)
    if parsed.scheme != "vscode-agent-host":
        return None
    encoded = (parse_qs(unquote(parsed.query)).get("_ah") or [""])[0]  # VS Code escapes the "="
    try:
        original = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    except (binascii.Error, ValueError):
        return None
    if not isinstance(original, dict) or original.get("scheme") != "agent-host-content":
        return None
    return f"agent-host-content:{unquote(parsed.path)}"


def _resource(
    attachment: Mapping[str, Any], label: str, working_directory: Path | None, extra: list[str], notes: list[str],
    content: ContentReader | None = None, *, vision: bool = False, model_name: str = "this model", images: list[Any] | None = None,
) -> None:
    uri = str(attachment.get("uri") or "")
    stored_uri = host_content_uri(uri)
    if stored_uri is not None:
        stored = content(stored_uri) if content is not None else None
        if stored is None:
            note = f"The attachment {label} was not read: this host holds no content at {stored_uri}."
            extra.append(f"[{note}]")
            notes.append(note)
            return
        try:
            text = stored[:ATTACHMENT_TEXT_LIMIT].decode("utf-8")
        except UnicodeDecodeError:
            note = f"The attachment {label} was not sent: it is not text."
            extra.append(f"[{note}]")
            notes.append(note)
            return
        if len(stored) > ATTACHMENT_TEXT_LIMIT:
            notes.append(f"Only the first {ATTACHMENT_TEXT_LIMIT // 1024} KiB of {label} were sent to the model.")
        extra.append(_as_file_block(label, _select(text, attachment.get("selection"))))
        return
    path, refusal = _readable(uri, working_directory)
    if path is None:
        note = f"The attachment {label} was not read: {refusal}"
        extra.append(f"[{note}]")
        notes.append(note)
        return
    image_type = mimetypes.guess_type(path.name)[0]
    if image_type in IMAGE_TYPES and images is not None:
        _image_file(path, image_type, label, vision, model_name, images, extra, notes)
        return
    try:
        raw = read_regular(path, ATTACHMENT_TEXT_LIMIT + 1)
        text = raw[:ATTACHMENT_TEXT_LIMIT].decode("utf-8")
    except UnicodeDecodeError:
        note = f"The attachment {label} was not sent: it is not a text file."
        extra.append(f"[{note}]")
        notes.append(note)
        return
    except NotARegularFile as error:
        note = f"The attachment {label} was not read: {error.describe(str(path))}."
        extra.append(f"[{note}]")
        notes.append(note)
        return
    except OSError as error:
        note = f"The attachment {label} could not be read ({error.strerror or 'error'})."
        extra.append(f"[{note}]")
        notes.append(note)
        return
    if len(raw) > ATTACHMENT_TEXT_LIMIT:
        notes.append(f"Only the first {ATTACHMENT_TEXT_LIMIT // 1024} KiB of {label} were sent to the model.")
    extra.append(_as_file_block(label, _select(text, attachment.get("selection"))))


def _image_file(
    path: Path, media_type: str, label: str, vision: bool, model_name: str, images: list[Any], extra: list[str], notes: list[str],
) -> None:
    """An image file in the working directory: image content for a vision model, else a note."""
    note = None
    if not vision:
        note = f"The image {label} was not sent: {model_name} cannot see images."
    else:
        try:
            data = read_regular(path, IMAGE_LIMIT + 1)
        except (NotARegularFile, OSError):
            data = None
        if data is None:
            note = f"The image {label} could not be read."
        elif len(data) > IMAGE_LIMIT:
            note = f"The image {label} was not sent: it is larger than {IMAGE_LIMIT // (1024 * 1024)} MiB."
        else:
            images.append(ImageContent(media_type=media_type, data=base64.b64encode(data).decode("ascii")))
    if note is not None:
        extra.append(f"[{note}]")
        notes.append(note)


def _readable(uri: str, working_directory: Path | None) -> tuple[Path | None, str]:
    parsed = urlparse(uri)
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None, f"only file:// URIs can be attached ({uri} is not one)."
    if working_directory is None:
        return None, "this session has no working directory."
    raw = unquote(parsed.path)
    if "\x00" in raw:
        return None, "the path contains a NUL byte."
    path = Path(os.path.realpath(raw))
    root = Path(os.path.realpath(working_directory))
    if path != root and root not in path.parents:
        return None, f"it is outside the session's working directory ({root})."
    if not path.is_file():
        return None, "it is not a file that exists."
    return path, ""


def _select(text: str, selection: Any) -> str:
    """The selected lines/characters of ``text`` when a ``TextSelection`` is given."""
    if not isinstance(selection, Mapping) or not isinstance(selection.get("range"), Mapping):
        return text
    try:
        start, end = selection["range"]["start"], selection["range"]["end"]
        lines = text.splitlines(keepends=True)
        first, last = int(start["line"]), int(end["line"])
        chosen = lines[first : last + 1]
        if not chosen:
            return ""
        if first == last:
            return chosen[0][int(start["character"]) : int(end["character"])]
        chosen[0] = chosen[0][int(start["character"]) :]
        chosen[-1] = chosen[-1][: int(end["character"])]
        return "".join(chosen)
    except (KeyError, TypeError, ValueError):
        return text


def _as_file_block(label: str, text: str) -> str:
    return f"[Attached file {label}]\n```\n{text}\n```"


def steering_note(message: Mapping[str, Any]) -> str:
    """The system notification shown where a steering message entered the turn."""
    return STEERING_PREFIX + str(message.get("text") or "")


def partial_reply(message: AssistantMessage) -> AssistantMessage | None:
    """What an interrupted model call streamed that can safely be sent back, or None if nothing.

    Reasoning is dropped (without its signature or item id no provider takes it back), natives
    are dropped (the blocks are unfinished), and a tool call whose arguments were cut off is
    dropped (its input is not valid JSON, which Anthropic would refuse)."""
    parts: list[Any] = []
    for part in message.parts:
        if isinstance(part, TextPart) and part.text:
            parts.append(TextPart(text=part.text))
        elif isinstance(part, ToolCallPart):
            arguments = part.arguments.strip() or "{}"
            try:
                json.loads(arguments)
            except ValueError:
                continue
            parts.append(ToolCallPart(tool_call_id=part.tool_call_id, tool_name=part.tool_name, arguments=arguments))
    if not parts:
        return None
    return AssistantMessage(parts=tuple(parts), api=message.api, model=message.model)


def rebuild_turn(turn: Mapping[str, Any]) -> list[Message]:
    """A finished AHP turn as neutral messages (no reasoning, no native payloads)."""
    user = turn.get("message") or {}
    messages: list[Message] = [UserMessage.of(str(user.get("text") or ""))]
    parts: list[Any] = []
    results: list[ToolResult] = []

    def flush() -> None:
        if parts:
            messages.append(AssistantMessage(parts=tuple(parts)))
        if results:
            messages.append(ToolResultsMessage(results=tuple(results)))
        parts.clear()
        results.clear()

    for part in turn.get("responseParts") or []:
        if not isinstance(part, Mapping):
            continue
        kind = part.get("kind")
        if kind == "systemNotification" and str(part.get("content") or "").startswith(STEERING_PREFIX):
            flush()
            messages.append(UserMessage.of(str(part["content"])[len(STEERING_PREFIX) :]))
        elif kind == "markdown" and part.get("content"):
            if results:
                flush()
            parts.append(TextPart(text=str(part["content"])))
        elif kind == "toolCall":
            call = part.get("toolCall") or {}
            call_id, name = str(call.get("toolCallId", "")), str(call.get("toolName", ""))
            parts.append(ToolCallPart(tool_call_id=call_id, tool_name=name, arguments=str(call.get("toolInput") or "{}")))
            # toolCallComplete spreads the ToolCallResult into the call state (ahp.dialects.v0_2.state.tool_calls).
            if call.get("status") == "completed" and "success" in call:
                results.append(ToolResult.of(call_id, name, result_text(call), is_error=not call.get("success")))
            else:
                results.append(ToolResult.of(call_id, name, _CANCELLED_RESULT, is_error=True))
    flush()
    return messages



def history(turns: Sequence[Mapping[str, Any]], transcripts: Mapping[str, Sequence[Message]]) -> list[Message]:
    """The conversation of finished ``turns``: stored transcripts where present, else rebuilt. A
    prompt a ``UserPromptSubmit`` hook refused (``blockedByHook``) is left out, as Claude Code erases it."""
    messages: list[Message] = []
    for turn in turns:
        if _refused_by_hook(turn):
            continue
        stored = transcripts.get(str(turn.get("id")))
        messages.extend(stored if stored else rebuild_turn(turn))
    return messages


def _refused_by_hook(turn: Mapping[str, Any]) -> bool:
    """The turn ended with ``chat/error`` of type ``blockedByHook`` (its error part, or a 0.2.0 ``error``)."""
    # Asked of every finished turn before every turn: plain loops, and the abstract ``Mapping``
    # check (slow) only for what is not a plain dict, which turn states always are.
    error = turn.get("error")
    if _is_mapping(error) and error.get("errorType") == BLOCKED_BY_HOOK:
        return True
    for part in turn.get("responseParts") or ():
        if _is_mapping(part) and part.get("kind") == "error":
            error = part.get("error")
            if _is_mapping(error) and error.get("errorType") == BLOCKED_BY_HOOK:
                return True
    return False


def _is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return isinstance(value, dict) or (value is not None and isinstance(value, Mapping))


def repair(messages: Sequence[Message]) -> list[Message]:
    """Merge consecutive user messages; answer tool calls that were left without results."""
    # Run over the whole conversation before every model call: messages are told apart by their
    # ``role`` (the union's tag), which costs less than pydantic's ``isinstance``.
    fixed: list[Message] = []
    previous: Message | None = None
    for message in messages:
        role = message.role
        if previous is not None and previous.role == "assistant" and role != "tool" and _calls_tools(previous):
            fixed.append(_cancelled_results(previous))
            previous = fixed[-1]
        if role == "user" and previous is not None and previous.role == "user":
            previous = fixed[-1] = UserMessage(content=(*previous.content, *message.content))  # type: ignore[union-attr]  # both users
            continue
        fixed.append(message)
        previous = message
    if fixed and isinstance(fixed[-1], AssistantMessage) and fixed[-1].tool_calls:
        fixed.append(_cancelled_results(fixed[-1]))
    return fixed


def _calls_tools(message: Any) -> bool:
    """``bool(message.tool_calls)`` without building the tuple (asked of every assistant message
    of the conversation before every model call)."""
    for part in message.parts:
        if isinstance(part, ToolCallPart):
            return True
    return False


def _cancelled_results(message: AssistantMessage) -> ToolResultsMessage:
    return ToolResultsMessage(
        results=tuple(ToolResult.of(c.tool_call_id, c.tool_name, _CANCELLED_RESULT, is_error=True) for c in message.tool_calls)
    )


def repair_after(repaired: Sequence[Message], messages: Sequence[Message]) -> list[Message]:
    """``repair(messages)`` when ``messages`` begins with ``repaired``, a list ``repair`` returned:
    only what follows it is folded again (the fold's state after ``repaired`` is its last message),
    so a turn's model calls cost what the turn added, not the whole conversation. Whether
    ``messages`` begins with ``repaired`` is checked by identity; otherwise it is ``repair``."""
    count = len(repaired)
    if not count or len(messages) < count or not all(map(operator.is_, messages[:count], repaired)):
        return repair(messages)
    return [*repaired[:-1], *repair([repaired[-1], *messages[count:]])]
