"""Slash commands and completion candidates over plugins and prompt directories."""

from __future__ import annotations

from plugins import WORKSPACE_DIRECTORIES, complete_slash, load_directory, load_plugin, parse_slash, slash_entries

from .conftest import SAMPLES


def _entries():
    prompts = next(spec for spec in WORKSPACE_DIRECTORIES if spec.relative == ".github/prompts")
    containers = [
        load_plugin(SAMPLES / "sample-toolkit"),
        load_plugin(SAMPLES / "sample-broken"),
        load_directory(SAMPLES / "workspace-dirs", prompts),
    ]
    return slash_entries(containers)


def test_entries_cover_skills_commands_and_prompts_but_not_broken_plugins() -> None:
    names = sorted(e.name for e in _entries())
    assert names == ["explain-diff", "sample-toolkit:db-reset", "sample-toolkit:release-notes",
                     "sample-toolkit:standup", "sample-toolkit:triage", "sample-toolkit:wipe-cache"]


def test_qualified_command_substitutes_arguments() -> None:
    invocation = parse_slash("/sample-toolkit:db-reset staging", _entries())
    assert invocation is not None
    assert (invocation.entry.kind, invocation.arguments) == ("skill", "staging")
    assert "Requested name: staging" in invocation.prompt
    assert invocation.prompt.startswith(f"Base directory for this skill: {invocation.entry.target.folder}\n\n")


def test_unique_bare_name_is_accepted() -> None:
    invocation = parse_slash("/triage src/", _entries())
    assert invocation is not None and invocation.entry.name == "sample-toolkit:triage"
    assert "(or only the path given here: src/)" in invocation.prompt


def test_command_without_arguments_placeholder_gets_them_appended() -> None:
    invocation = parse_slash("/sample-toolkit:wipe-cache dist only", _entries())
    assert invocation is not None and invocation.prompt.endswith("\n\nARGUMENTS: dist only")


def test_unknown_names_and_plain_messages_are_not_invocations() -> None:
    entries = _entries()
    assert parse_slash("/nope", entries) is None
    assert parse_slash("/sample-broken:orphan-skill", entries) is None
    assert parse_slash("please run /triage", entries) is None
    assert parse_slash("/usr/bin/env is a path", entries) is None


def test_completions_match_qualified_and_bare_prefixes() -> None:
    entries = _entries()
    assert [e.name for e in complete_slash("/sample-toolkit:", entries)] == [
        "sample-toolkit:db-reset", "sample-toolkit:release-notes", "sample-toolkit:standup",
        "sample-toolkit:triage", "sample-toolkit:wipe-cache"]
    assert len(complete_slash("/s", entries)) == 5
    assert [e.name for e in complete_slash("/st", entries)] == ["sample-toolkit:standup"]
    assert [e.name for e in complete_slash("/ex", entries)] == ["explain-diff"]
    assert [e.name for e in complete_slash("/TR", entries)] == ["sample-toolkit:triage"]
    assert len(complete_slash("/", entries)) == 6
