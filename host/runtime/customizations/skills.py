"""The tools through which the model pulls customization text in on demand.

* ``load_skill`` (``SKILL_TOOL``): offered when at least one usable skill or command allows model
  invocation; its description is the catalogue: bounded and ranked (``host.runtime.catalogue``,
  ``SKILL_BUDGET`` bytes: skills used earlier in the session and those matching the session's
  first message first, each name with the first sentence of its description, then how many more
  there are). Calling it returns the skill's full instructions and, for folder skills, where its
  files are (readable with the file tools); a name that matches nothing (or a word) answers
  with the closest entries, so what the listing left out can still be found. Shell commands in
  a loaded text (``!`cmd```, ```` ```! ````) are not run (nobody confirmed them); the model is
  told to run those it needs with the shell tool.
* ``load_rule`` (``RULE_TOOL``): offered when a rule is "agent decides" (no ``alwaysApply``) and
  relevant (no globs, or a matching file in play); returns the rule's text.

``load_rule``'s catalogue is bounded the same way (``RULE_BUDGET``). Both are read-only
(auto-approved by the confirmation policy) and never touch the file system: the text comes from
the parsed plugins. A name may be qualified (``plugin:name``) or bare.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import plugins
from host.runtime.catalogue import CatalogueItem, catalogue, closest
from host.runtime.command_bodies import BANG_COMMAND
from tools.base import Tool, ToolContext, failure_result, success_result

__all__ = ["CatalogEntry", "LoadTextTool", "SKILL_TOOL", "RULE_TOOL", "SKILL_BUDGET", "RULE_BUDGET"]

SKILL_TOOL = "load_skill"
RULE_TOOL = "load_rule"

SKILL_BUDGET = 3072
"""Bytes of skill catalogue sent with each model request (some 25 skills)."""
RULE_BUDGET = 2048
"""Bytes of the on-request rules catalogue."""


@dataclass(frozen=True)
class CatalogEntry:
    """One loadable item: its qualified name, bare name and source."""

    name: str
    short_name: str
    item: plugins.Skill | plugins.Command | plugins.Rule


def qualified(container: object, name: str) -> str:
    return f"{container.name}:{name}" if isinstance(container, plugins.LoadedPlugin) else name


class LoadTextTool(Tool):
    """Returns the full text of one catalogue entry."""

    annotations = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}

    def __init__(self, name: str, noun: str, entries: list[CatalogEntry], *, budget: int, query: str = "",
                 used: Iterable[str] = (), on_load: Callable[[str], None] | None = None) -> None:
        """``query``: the message the catalogue is ranked by; ``used``: names loaded
        earlier in the session, oldest first; ``on_load(name)``: told of each successful load."""
        self.name = name
        self.noun = noun
        self.title = f"Load {noun}"
        self.entries = entries
        self._on_load = on_load
        more = (f"- ... and {{count}} more {noun}s not listed here: call {name} with a name the user gives, or with "
                f"a word of what you need, and it answers with the {noun}s that match.")
        listing = catalogue(self._items(), budget=budget, query=query, used=used, more=more)
        self.description = (
            f"Load the full instructions of a {noun} before doing a task it covers. "
            f"Available {noun}s:\n{listing}"
        )
        self.input_schema = {
            "type": "object",
            "properties": {"name": {"type": "string", "description": f"The {noun} name, as listed (or a word, to find one)."}},
            "required": ["name"],
        }

    def _items(self) -> list[CatalogueItem]:
        return [CatalogueItem(e.name, e.item.description or "") for e in self.entries]

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
        name = str(args.get("name", ""))
        entry = self.find(name)
        if entry is None:
            matches = closest(self._items(), name)
            found = "\n".join(f"- {m.name}: {' '.join(m.description.split())[:200]}" for m in matches)
            text = (f"There is no {self.noun} named {name!r}. " + (f"These match:\n{found}" if matches else
                    f"None matches that either; try another word, or ask the user which {self.noun} they mean."))
            return failure_result(f"Did not load {name}", text, "not_found")
        text = entry.item.body.strip()
        if BANG_COMMAND.search(text):
            # Run by /name, these run before the model reads the text; loaded here, they cannot
            # (nobody confirmed them), so the model is told what they are.
            text += ("\n\n(The !`command` spans and ```! blocks above are shell commands whose output belongs in their "
                     "place: run the ones you need with the shell tool.)")
        if isinstance(entry.item, plugins.Skill):
            text += (f"\n\n(This skill's files are in {entry.item.folder}: read them with the file tools when the "
                     "instructions refer to them.)")
        if self._on_load is not None:
            self._on_load(entry.name)
        return success_result(self.past_tense({"name": entry.name}), [{"type": "text", "text": text}])
