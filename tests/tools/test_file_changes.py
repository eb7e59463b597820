"""What a command changed in a directory: created, changed and deleted files with their bytes."""

from __future__ import annotations

from pathlib import Path

from tools.file_changes import DirectorySnapshot


def test_created_changed_and_deleted_files_are_found_with_their_content(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("same")
    (tmp_path / "edit.txt").write_text("before")
    (tmp_path / "gone.txt").write_text("doomed")
    (tmp_path / ".gitignore").write_text("build/\n")
    (tmp_path / "build").mkdir()
    snapshot = DirectorySnapshot.take(tmp_path)
    assert snapshot is not None
    (tmp_path / "edit.txt").write_text("after!")
    (tmp_path / "gone.txt").unlink()
    (tmp_path / "new.txt").write_text("fresh")
    (tmp_path / "build" / "out.o").write_text("ignored")
    changes = {path.name: (before, after) for path, before, after in snapshot.changes()}
    assert changes == {"edit.txt": (b"before", b"after!"), "gone.txt": (b"doomed", None), "new.txt": (None, b"fresh")}


def test_files_over_the_budget_are_not_reported_and_huge_trees_are_not_tracked(tmp_path: Path) -> None:
    (tmp_path / "big.bin").write_bytes(b"x" * 100)
    snapshot = DirectorySnapshot.take(tmp_path, max_file_bytes=10)
    assert snapshot is not None
    (tmp_path / "big.bin").write_bytes(b"y" * 100)
    assert snapshot.changes() == []
    for i in range(5):
        (tmp_path / f"f{i}").write_text("")
    assert DirectorySnapshot.take(tmp_path, max_files=3) is None


def test_a_single_file_or_a_path_not_there_yet_can_be_watched_too(tmp_path: Path) -> None:
    existing, missing, folder = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "later"
    existing.write_text("old")
    snapshots = [DirectorySnapshot.take(path) for path in (existing, missing, folder)]
    existing.write_text("new")
    missing.write_text("made")
    folder.mkdir()
    (folder / "c.txt").write_text("inside")
    found = [change for snapshot in snapshots for change in snapshot.changes()]
    assert found == [(existing, b"old", b"new"), (missing, None, b"made"), (folder / "c.txt", None, b"inside")]
