"""Glob semantics for rule globs and applyTo patterns."""

from __future__ import annotations

import pytest

from plugins import glob_matches


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("**/*.py", "main.py", True),
        ("**/*.py", "a/b/c.py", True),
        ("*.py", "a/b/c.py", True),  # no slash: matches the basename at any depth
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/sub/a.py", False),
        ("docs/**/*.md", "docs/guide/intro.md", True),
        ("docs/**/*.md", "docs/intro.md", True),
        ("docs/**/*.md", "other/docs/intro.md", False),
        ("**", "any/thing", True),
        ("./migrations/*.sql", "migrations/1.sql", True),
        ("*.{ts,tsx}", "ui/app.tsx", True),
        ("file?.txt", "file1.txt", True),
        ("file[!0-9].txt", "file1.txt", False),
        ("*.PY", "main.py", False),
    ],
)
def test_glob_matching(pattern: str, path: str, expected: bool) -> None:
    assert glob_matches(pattern, path) is expected


def test_absolute_paths_need_a_root_and_must_be_inside_it() -> None:
    assert glob_matches("*.py", "/repo/x.py", root="/repo")
    assert not glob_matches("*.py", "/repo/x.py")
    assert not glob_matches("*.py", "/other/x.py", root="/repo")
