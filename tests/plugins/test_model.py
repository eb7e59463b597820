"""Pure helpers of the runtime model: argument substitution, rule activation, event names."""

from __future__ import annotations

from pathlib import Path

import pytest

from plugins import HookEvent, LifecyclePoint, Rule, substitute_arguments


def test_arguments_placeholder_is_replaced_by_everything_typed() -> None:
    assert substitute_arguments("Version: $ARGUMENTS.", "  2.1.0 rc  ") == "Version: 2.1.0 rc."
    assert substitute_arguments("A ${ARGUMENTS} B", "x") == "A x B"


def test_positional_placeholders_take_shell_words() -> None:
    body = "from $1 to $2 (then $3)"
    assert substitute_arguments(body, '"src dir" dest') == "from src dir to dest (then )"


def test_zero_based_indexed_arguments_are_the_words_counted_from_zero() -> None:
    body = "move $ARGUMENTS[0] to $ARGUMENTS[1]; $ARGUMENTS[5] is missing"
    assert substitute_arguments(body, "'my widget' React") == "move my widget to React;  is missing"


def test_arguments_are_appended_as_claude_code_does_when_the_body_has_no_placeholder() -> None:
    assert substitute_arguments("Clean the cache.\n", "only build/") == "Clean the cache.\n\nARGUMENTS: only build/"
    assert substitute_arguments("Clean the cache.\n", "") == "Clean the cache.\n"


def test_empty_arguments_leave_an_empty_placeholder() -> None:
    assert substitute_arguments("Name: $ARGUMENTS", "") == "Name: "


def test_shell_text_that_only_looks_like_a_placeholder_is_kept() -> None:
    body = 'git log --author="$(git config user.email)" $ARGUMENTSX'
    assert substitute_arguments(body, "") == body


def _rule(**kwargs) -> Rule:
    return Rule(name="r", description=None, body="", path=Path("/p/r.mdc"), **kwargs)


def test_rule_with_globs_applies_only_to_matching_files() -> None:
    rule = _rule(always_apply=True, globs=("**/*.py", "migrations/**/*.sql"))
    assert rule.applies_to("src/app/main.py")
    assert rule.applies_to("/work/repo/migrations/2024/01.sql", root="/work/repo")
    assert not rule.applies_to("docs/readme.md")
    assert not rule.applies_to("/elsewhere/x.py", root="/work/repo")


def test_rule_without_globs_applies_everywhere() -> None:
    assert _rule(always_apply=True).applies_to("anything/at/all.txt")
    assert _rule().activation == "on_request"


@pytest.mark.parametrize(
    ("name", "event"),
    [
        ("PreToolUse", HookEvent.PRE_TOOL_USE),
        ("preToolUse", HookEvent.PRE_TOOL_USE),
        ("userPromptSubmitted", HookEvent.USER_PROMPT_SUBMIT),
        ("beforeSubmitPrompt", HookEvent.USER_PROMPT_SUBMIT),
        ("agentStop", HookEvent.STOP),
        ("afterFileEdit", HookEvent.AFTER_FILE_EDIT),
        ("SomeFutureEvent", None),
    ],
)
def test_hook_event_names_from_every_dialect(name: str, event: HookEvent | None) -> None:
    assert HookEvent.parse(name) is event


def test_every_hook_event_maps_to_a_lifecycle_point() -> None:
    assert {event.point for event in HookEvent} <= set(LifecyclePoint)
    assert HookEvent.BEFORE_SHELL_EXECUTION.point is LifecyclePoint.BEFORE_TOOL_CALL
    assert HookEvent.POST_TOOL_USE_FAILURE.point is LifecyclePoint.AFTER_TOOL_CALL_FAILURE
