"""The @-file walk of ``host.runtime.customizations.completions`` (offsets: ``tests/ahp/test_text_offsets.py``)."""

from __future__ import annotations

from pathlib import Path

from host.runtime.customizations.completions import complete_user_message


def test_file_completion_skips_git_and_ranks_prefix_matches_first(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("x")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "config.md").write_text("x")
    (tmp_path / "config.toml").write_text("x")
    items = complete_user_message("@conf", 5, entries=[], working_directory=tmp_path)
    inserted = [item["insertText"] for item in items]
    assert inserted[:2] == ["@config.toml ", "@docs/config.md "]
    assert not any(".git" in text for text in inserted)


def test_a_slash_after_other_words_is_not_a_command(tmp_path: Path) -> None:
    assert complete_user_message("hello /tri", 10, entries=[], working_directory=tmp_path) == []
