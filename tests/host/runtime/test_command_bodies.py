"""Which of a command's own shell commands run without asking: plain, read-only ones only."""

from __future__ import annotations

import pytest

from host.runtime.command_bodies import context_rules


def test_read_only_context_lines_become_exact_rules_each_command_of_a_block_its_own() -> None:
    body = ("- !`git status`\n- !`git diff HEAD --stat`\n- !`git branch --show-current`\n- !`git log --oneline -10`\n"
            "```!\ngit status --porcelain\ngit log -1 --format='%s by %an'\n```\n")
    assert context_rules(body) == [
        "shell(git status)", "shell(git diff HEAD --stat)", "shell(git branch --show-current)",
        "shell(git log --oneline -10)", "shell(git status --porcelain)", "shell(git log -1 '--format=%s by %an')",
    ]


@pytest.mark.parametrize("command", [
    "git branch feature",  # creates a branch
    "git remote add origin x",
    "git diff --output=patch.txt",
    "git status > status.txt",  # a redirection is not plain
    "git log $(cat ref)",
    "git status && rm -rf build",  # every command of the line must be read-only
    "GIT_DIR=/elsewhere git status",
    "npm test",
])
def test_anything_that_may_change_something_is_left_to_the_rules(command: str) -> None:
    assert context_rules(f"!`{command}`") == []
