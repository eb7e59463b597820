"""The tools through which the model pulls customization text in on demand.

* ``load_skill`` (``SKILL_TOOL``): offered when at least one usable skill or command allows model
  invocation; its description is the catalogue (name + description). Calling it returns the
  skill's full instructions and, for folder skills, where its resources live.
* ``load_rule`` (``RULE_TOOL``): offered when a rule is "agent decides" (no ``alwaysApply``) and
  relevant (no globs, or a matching file in play); returns the rule's text.

Both are read-only (auto-approved by the confirmation policy) and never touch the file system:
the text comes from the parsed plugins. A name may be qualified (``plugin:name``) or bare.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tools.base import Tool, ToolContext, failure_result, success_result

if TYPE_CHECKING:  # plugins is imported where used: the host starts without it
    from plugins import Command, Rule, Skill

__all__ = ["CatalogEntry", "LoadTextTool", "SKILL_TOOL", "RULE_TOOL"]

SKILL_TOOL = "load_skill"
RULE_TOOL = "load_rule"


@dataclass(frozen=True)
class CatalogEntry:
    """One loadable item: its qualified name, bare name and source."""

    name: str
    short_name: str
    item: Skill | Command | Rule


def qualified(container: object, name: str) -> str:
    from plugins import LoadedPlugin

    return f"{container.name}:{name}" if isinstance(container, LoadedPlugin) else name


class LoadTextTool(Tool):
    """Returns the full text of one catalogue entry."""

    annotations = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}

    def __init__(self, name: str, noun: str, entries: list[CatalogEntry]) -> None:
        self.name = name
        self.noun = noun
        self.title = f"Load {noun}"
        self.entries = entries
        listing = "\n".join(f"- {e.name}: {(e.item.description or '').strip()}" for e in entries)
        self.description = (
            f"Load the full instructions of a {noun} before doing a task it covers. "
            f"Available {noun}s:\n{listing}"
        )
        self.input_schema = {
            "type": "object",
            "properties": {"name": {"type": "string", "description": f"The {noun} name, as listed.",
                                    "enum": [e.name for e in entries]}},
            "required": ["name"],
        }

    def describe(self, args: dict) -> str:
        return f"Load the {args.get('name', '')} {self.noun}"

    def past_tense(self, args: dict) -> str:
        return f"Loaded the {args.get('name', '')} {self.noun}"

    def find(self, name: str) -> CatalogEntry | None:
        exact = [e for e in self.entries if e.name == name]
        if not exact:
            exact = [e for e in self.entries if e.short_name == name]
        return exact[0] if len(exact) == 1 else None

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        from plugins import Skill

        name = str(args.get("name", ""))
        entry = self.find(name)
        if entry is None:
            known = ", ".join(e.name for e in self.entries)
            return failure_result(f"Did not load {name}", f"There is no {self.noun} named {name!r}; choose one of: {known}.",
                                  "not_found")
        text = entry.item.body.strip()
        if isinstance(entry.item, Skill):
            text += f"\n\n(This skill's files are in {entry.item.folder}; read them when the instructions refer to them.)"
        return success_result(self.past_tense({"name": entry.name}), [{"type": "text", "text": text}])
