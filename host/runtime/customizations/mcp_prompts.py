"""MCP prompts as slash commands, the way Claude Code offers them.

Contract:
- Each prompt of a running server of the session is a slash entry named
  ``mcp__<server>__<prompt>`` (``tools.mcp.naming``: sanitized, at most 64 characters), kind
  ``prompt``, with the prompt's description and an argument hint built from its declared
  arguments (``<required> [optional]``). Entries are listed, completed and parsed like the
  plugins' (``plugins.slash``); only the full name matches (a bare prompt name could shadow a
  plugin command).
- ``prompt_arguments(prompt, typed)`` maps what the user typed after the name onto the declared
  arguments: ``name=value`` words set that argument, the other words fill the remaining arguments
  in declaration order (shell-style quoting groups words; the last argument takes any words left
  over, so a single-argument prompt gets the whole text). A missing required argument, or words
  for a prompt that declares none, raise ``PromptUsageError`` whose message shows the usage.
- ``prompt_message(result, label)`` turns a ``prompts/get`` result into the user's turn: the
  text of its messages (an ``assistant`` message is marked as such), text resources embedded as
  text, images and other binary contents as ``embeddedResource`` attachments (the conversation
  layer gives images to vision models and refuses binaries with a note), resource links named.
  Everything is bounded by ``PROMPT_TEXT_LIMIT`` characters of text.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["McpPrompt", "PromptUsageError", "argument_hint", "prompt_arguments", "prompt_message", "PROMPT_TEXT_LIMIT"]

PROMPT_TEXT_LIMIT = 256 * 1024
"""Characters of prompt text sent as the user's message at most."""


class PromptUsageError(ValueError):
    """The arguments typed for a prompt do not fit it; the message shows how to call it."""


@dataclass(frozen=True)
class McpPrompt:
    """A server's prompt as the target of a slash entry (the shape ``plugins.slash`` expects)."""

    server: str
    mcp_name: str
    name: str
    """The slash name, ``mcp__<server>__<prompt>``."""
    description: str | None
    argument_hint: str | None
    arguments: tuple[tuple[str, bool], ...]
    """``(name, required)`` in declaration order."""
    path: Path | None = None
    """No file: the prompt lives on the server (``plugins.slash`` and trust checks read ``path``)."""
    user_invocable: bool = True

    def render(self, arguments: str) -> str:
        """What ``plugins.slash`` calls; the real text comes from the server (``prompts/get``)."""
        return arguments


def argument_hint(arguments: tuple[tuple[str, bool], ...]) -> str | None:
    """``<required> [optional]`` for the declared arguments, or None when there are none."""
    return " ".join(f"<{name}>" if required else f"[{name}]" for name, required in arguments) or None


def usage(prompt: McpPrompt) -> str:
    return f"/{prompt.name}" + (f" {prompt.argument_hint}" if prompt.argument_hint else "")


def prompt_arguments(prompt: McpPrompt, typed: str) -> dict[str, str]:
    """The ``prompts/get`` arguments for what was typed (see the module contract)."""
    try:
        words = shlex.split(typed)
    except ValueError:  # an unbalanced quote: take the words as they are
        words = typed.split()
    names = [name for name, _ in prompt.arguments]
    values: dict[str, str] = {}
    positional: list[str] = []
    for word in words:
        key, equals, value = word.partition("=")
        if equals and key in names and key not in values:
            values[key] = value
        else:
            positional.append(word)
    if positional and not names:
        raise PromptUsageError(f"/{prompt.name} takes no arguments (got {typed.strip()!r}).")
    remaining = [name for name in names if name not in values]
    if positional and not remaining:
        raise PromptUsageError(f"Too many arguments for /{prompt.name}: {' '.join(positional)!r}. Usage: {usage(prompt)}")
    for index, name in enumerate(remaining):
        if index >= len(positional):
            break
        values[name] = " ".join(positional[index:]) if index == len(remaining) - 1 else positional[index]
    missing = [name for name, required in prompt.arguments if required and not values.get(name)]
    if missing:
        raise PromptUsageError(f"/{prompt.name} needs {', '.join(repr(m) for m in missing)}. Usage: {usage(prompt)}")
    return values


def _content(content: Any, label: str, texts: list[str], attachments: list[dict[str, Any]]) -> None:
    kind = getattr(content, "type", None)
    if kind == "text":
        texts.append(str(content.text))
    elif kind in ("image", "audio"):
        attachments.append({"type": "embeddedResource", "label": f"{label} ({kind})",
                            "contentType": str(content.mime_type), "data": str(content.data),
                            "displayKind": "image" if kind == "image" else "document"})
    elif kind == "resource":
        resource = content.resource
        if getattr(resource, "text", None) is not None:
            texts.append(f"[Resource {resource.uri}]\n{resource.text}")
        else:
            attachments.append({"type": "embeddedResource", "label": str(resource.uri),
                                "contentType": str(resource.mime_type or "application/octet-stream"),
                                "data": str(resource.blob)})
    elif kind == "resource_link":
        texts.append(f"[Resource link: {content.uri}" + (f" ({content.description})" if content.description else "") + "]")


def prompt_message(result: Any, label: str) -> tuple[str, list[dict[str, Any]]]:
    """The user's turn text and attachments for a ``GetPromptResult`` (see the module contract)."""
    texts: list[str] = []
    attachments: list[dict[str, Any]] = []
    for message in result.messages:
        before = len(texts)
        _content(message.content, label, texts, attachments)
        if message.role == "assistant" and len(texts) > before:
            texts[before] = f"[The prompt's assistant message]\n{texts[before]}"
    text = "\n\n".join(texts)
    if len(text) > PROMPT_TEXT_LIMIT:
        text = text[:PROMPT_TEXT_LIMIT] + f"\n[The prompt {label} was cut at {PROMPT_TEXT_LIMIT // 1024} KiB.]"
    return text, attachments
