"""How what a user types after ``/mcp__server__prompt`` becomes the prompt's arguments, and how
``@server:uri`` mentions are found (pure functions)."""

from __future__ import annotations

import pytest

from host.runtime.customizations.mcp_prompts import McpPrompt, PromptUsageError, argument_hint, prompt_arguments
from host.runtime.customizations.mcp_resources import MENTION_LIMIT, mentions


def prompt(*arguments: tuple[str, bool]) -> McpPrompt:
    return McpPrompt(server="s", mcp_name="p", name="mcp__s__p", description=None,
                     argument_hint=argument_hint(tuple(arguments)), arguments=tuple(arguments))


def test_words_fill_the_declared_arguments_in_order_and_the_last_takes_the_rest() -> None:
    review = prompt(("code", True), ("focus", False))
    assert prompt_arguments(review, "x=1") == {"code": "x=1"}  # not a declared name: a positional word
    assert prompt_arguments(review, '"x = 1" style and speed') == {"code": "x = 1", "focus": "style and speed"}
    assert prompt_arguments(review, "focus=speed main.py") == {"focus": "speed", "code": "main.py"}
    assert prompt_arguments(prompt(("text", True)), "all of   this") == {"text": "all of this"}
    assert prompt_arguments(prompt(("text", True)), "it's fine") == {"text": "it's fine"}  # unbalanced quote


def test_missing_or_surplus_arguments_say_how_to_call_the_prompt() -> None:
    review = prompt(("code", True), ("focus", False))
    with pytest.raises(PromptUsageError, match=r"^/mcp__s__p needs 'code'. Usage: /mcp__s__p <code> \[focus\]$"):
        prompt_arguments(review, "focus=style")
    with pytest.raises(PromptUsageError, match="takes no arguments"):
        prompt_arguments(prompt(), "anything")
    with pytest.raises(PromptUsageError, match="Too many arguments"):
        prompt_arguments(prompt(("a", False)), "a=1 extra")
    assert prompt_arguments(prompt(), "  ") == {}


def test_mentions_name_known_servers_only_once_each_without_trailing_punctuation() -> None:
    text = "see @docs:file:///a.md, @docs:notes://x. and @other:y://z or mail@docs:no and @docs:file:///a.md"
    assert mentions(text, {"docs"}) == [("docs", "file:///a.md"), ("docs", "notes://x")]
    many = " ".join(f"@d:u://{i}" for i in range(MENTION_LIMIT + 5))
    assert len(mentions(many, {"d"})) == MENTION_LIMIT
