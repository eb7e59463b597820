"""Slash commands and their completions (FORMAT.md 7.2 and 7.4). Pure functions.

Contract:
- :func:`slash_entries` lists what a user can invoke: every plugin skill and command as
  ``<plugin>:<name>`` (except ``user-invocable: false``), and directory skills, commands and
  prompts under their bare name. Containers in state ``error`` contribute nothing; the caller
  passes only enabled containers.
- :func:`parse_slash` reads ``/name args`` at the start of a user message. ``name`` may be the
  qualified ``plugin:name`` or a bare name that identifies exactly one entry (an ambiguous or
  unknown name gives None, so the message is sent as typed). It returns the entry and the
  prompt with ``$ARGUMENTS`` substituted; a folder skill's prompt starts with ``Base directory for
  this skill: <folder>`` (Claude Code's first line), so the model can find the files it names.
- :func:`complete_slash` returns entries whose qualified or bare name starts with the typed
  prefix (case-insensitive), qualified-name matches first, each group sorted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from plugins.model import Command, LoadedContainer, LoadedPlugin, Prompt, Skill

__all__ = ["SlashEntry", "SlashInvocation", "complete_slash", "parse_slash", "slash_entries"]

_SLASH = re.compile(r"^\s*/([A-Za-z0-9_.:-]+)(?:[ \t]+|\n|$)(.*)\Z", re.DOTALL)


@dataclass(frozen=True)
class SlashEntry:
    """One invocable item."""

    name: str
    """What the user types after ``/``: ``plugin:name`` for plugins, the bare name otherwise."""
    short_name: str
    kind: Literal["skill", "command", "prompt"]
    target: Skill | Command | Prompt
    container: str
    description: str | None
    argument_hint: str | None


@dataclass(frozen=True)
class SlashInvocation:
    """A parsed ``/name args`` message."""

    entry: SlashEntry
    arguments: str
    prompt: str
    """The body with the arguments substituted: what the turn sends as the instruction."""


def slash_entries(containers: Iterable[LoadedContainer]) -> list[SlashEntry]:
    """Every invocable skill, command and prompt, in container order."""
    entries: list[SlashEntry] = []
    for container in containers:
        if container.state.kind == "error":
            continue
        prefix = f"{container.name}:" if isinstance(container, LoadedPlugin) else ""
        items: list[tuple[Literal["skill", "command", "prompt"], Skill | Command | Prompt]] = [
            *(("skill", s) for s in container.skills),
            *(("command", c) for c in container.commands),
            *(("prompt", p) for p in container.prompts),
        ]
        for kind, item in items:
            if not getattr(item, "user_invocable", True):
                continue
            entries.append(SlashEntry(
                name=prefix + item.name, short_name=item.name, kind=kind, target=item,
                container=container.name, description=item.description, argument_hint=item.argument_hint,
            ))
    return entries


def parse_slash(message: str, entries: Iterable[SlashEntry]) -> SlashInvocation | None:
    """The invocation at the start of ``message``, or None when it does not name one entry."""
    match = _SLASH.match(message)
    if not match:
        return None
    typed, arguments = match.group(1), match.group(2).strip()
    candidates = list(entries)
    exact = [e for e in candidates if e.name == typed]
    if not exact and ":" not in typed:
        exact = [e for e in candidates if e.short_name == typed]
    if len(exact) != 1:
        return None
    entry = exact[0]
    prompt = entry.target.render(arguments)
    if isinstance(entry.target, Skill) and entry.target.path.name == "SKILL.md":
        prompt = f"Base directory for this skill: {entry.target.folder}\n\n{prompt}"
    return SlashInvocation(entry=entry, arguments=arguments, prompt=prompt)


def complete_slash(prefix: str, entries: Iterable[SlashEntry]) -> list[SlashEntry]:
    """Entries matching what the user typed so far (with or without the leading ``/``)."""
    typed = prefix.lstrip().removeprefix("/").lower()
    candidates = list(entries)
    qualified = sorted((e for e in candidates if e.name.lower().startswith(typed)), key=lambda e: e.name)
    bare = sorted((e for e in candidates if e not in qualified and e.short_name.lower().startswith(typed)),
                  key=lambda e: e.name)
    return qualified + bare
