"""Remembered choices on the wire: a session's project, the entries clients see, and what a
client's new list revokes (pure, except ``project_root`` looking for ``.git``)."""

from __future__ import annotations

from pathlib import Path

from host.runtime.tools.remembered import entries, project_root, revoked, scope_of, value_problem
from host.runtime.tools.settings import Remembered

STORED = (Remembered("write_file", "/work/app", 5), Remembered("shell(git status:*)", None, 7))


def test_a_project_is_the_nearest_directory_with_git_else_the_working_directory(tmp_path: Path) -> None:
    repo, worktree, plain = tmp_path / "repo", tmp_path / "worktree", tmp_path / "plain"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "deep").mkdir(parents=True)
    worktree.mkdir()
    (worktree / ".git").write_text("gitdir: /elsewhere\n")  # a worktree or submodule: .git is a file
    (plain / "sub").mkdir(parents=True)
    assert project_root(repo / "src" / "deep") == repo
    assert project_root(worktree) == worktree
    assert project_root(plain / "sub") == plain / "sub"  # no repository: exactly the working directory


def test_entries_say_their_scope_and_a_list_without_one_revokes_it() -> None:
    listed = entries(STORED)
    assert listed == [{"rule": "write_file", "scope": "project", "project": "/work/app", "addedAt": 5},
                      {"rule": "shell(git status:*)", "scope": "host", "addedAt": 7}]
    assert [scope_of(item) for item in listed] == [("write_file", "/work/app"), ("shell(git status:*)", None)]
    assert revoked(STORED, listed[1:]) == [("write_file", "/work/app")]
    assert revoked(STORED, []) == [("write_file", "/work/app"), ("shell(git status:*)", None)]
    assert revoked(STORED, None) == [] and revoked(STORED, "everything") == []  # only a list revokes


def test_a_malformed_list_is_refused_saying_what_it_holds() -> None:
    assert value_problem([]) is None and value_problem(entries(STORED)) is None
    assert "list of remembered approvals" in (value_problem({"rule": "x"}) or "")
    assert "entry 0" in (value_problem([{"rule": "x", "scope": "project"}]) or "")  # a project scope needs its path
    assert "entry 1" in (value_problem([entries(STORED)[0], {"rule": "x", "scope": "project", "project": "relative"}]) or "")
    assert "entry 0" in (value_problem([{"rule": "x", "scope": "everywhere"}]) or "")
