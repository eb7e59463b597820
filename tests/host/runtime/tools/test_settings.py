"""The approvals file: "Always allow" choices per project or host-wide, bounded, and an earlier
version's directory-less choices migrated as host-wide (real SQLite files)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from host.runtime.tools.settings import MAX_REMEMBERED, Remembered, ToolSettings
from tools.policy import parse_rule


def test_choices_are_kept_per_project_and_revoked_one_at_a_time(tmp_path: Path) -> None:
    settings = ToolSettings(tmp_path / "tool_settings.sqlite3")
    settings.add(["write_file", "shell(npm test:*)"], "/work/a")
    settings.add(["write_file"], "/work/b")
    settings.add(["write_file"], "/work/a")  # again: nothing new
    assert settings.project_allow("/work/a") == (parse_rule("write_file"), parse_rule("shell(npm test:*)"))
    assert settings.project_allow("/work/c") == () and settings.host_allow() == ()
    assert settings.revoke("write_file", "/work/a") is True
    assert settings.revoke("write_file", "/work/a") is False
    settings.close()
    again = ToolSettings(tmp_path / "tool_settings.sqlite3")  # durable
    assert [(r.rule, r.project) for r in again.remembered()] == [("shell(npm test:*)", "/work/a"), ("write_file", "/work/b")]


def test_an_earlier_versions_rules_become_host_wide_once(tmp_path: Path) -> None:
    path = tmp_path / "tool_settings.sqlite3"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE always_allow (rule TEXT PRIMARY KEY, added_at INTEGER NOT NULL)")
    db.executemany("INSERT INTO always_allow VALUES (?, ?)", [("write_file", 5), ("shell(git status:*)", 7)])
    db.commit()
    db.close()
    settings = ToolSettings(path)
    assert settings.remembered() == (Remembered("write_file", None, 5), Remembered("shell(git status:*)", None, 7))
    assert settings.host_allow() == (parse_rule("write_file"), parse_rule("shell(git status:*)"))
    settings.revoke("write_file", None)
    settings.close()
    reopened = ToolSettings(path)  # the old table is gone: a revoked choice does not come back
    assert reopened.remembered() == (Remembered("shell(git status:*)", None, 7),)


def test_only_the_newest_choices_are_kept_beyond_the_bound() -> None:
    settings = ToolSettings(None)
    settings.add([f"mcp__s__tool{i}" for i in range(MAX_REMEMBERED)], "/work/a")
    settings.add(["write_file"], "/work/b")
    kept = settings.remembered()
    assert len(kept) == MAX_REMEMBERED and kept[-1] == Remembered("write_file", "/work/b", kept[-1].added_at)
    assert "mcp__s__tool0" not in {r.rule for r in kept}
