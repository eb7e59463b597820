"""Content stores, diff statistics and FileEdit shapes."""

from __future__ import annotations

from pathlib import Path

from tests.tools.wire import validate_wire
from tools.content import DataUriContentStore, InMemoryContentStore, diff_stats, file_edit, file_edit_content


def test_in_memory_store_round_trips_and_is_content_addressed():
    store = InMemoryContentStore()
    uri = store.put(b"hello", "text/plain")
    assert store.put(b"hello", "text/plain") == uri
    assert store.get(uri) == b"hello"
    assert store.content_type(uri) == "text/plain"
    assert store.get("agent-host-content:/sha256/unknown") is None


def test_data_uri_store_round_trips():
    store = DataUriContentStore()
    uri = store.put(b"a,b\n\x00", "application/octet-stream")
    assert uri.startswith("data:application/octet-stream;base64,")
    assert store.get(uri) == b"a,b\n\x00"
    assert store.get("data:text/plain,hi%20there") == b"hi there"
    assert store.get("https://example.com") is None


def test_diff_stats_count_changed_lines():
    assert diff_stats(None, b"a\nb\n") == {"added": 2, "removed": 0}
    assert diff_stats(b"a\nb\n", None) == {"added": 0, "removed": 2}
    assert diff_stats(b"a\nb\nc\n", b"a\nB\nc\nd\n") == {"added": 2, "removed": 1}
    assert diff_stats(b"same\n", b"same\n") == {"added": 0, "removed": 0}
    assert diff_stats(b"\x00\xff", b"text\n") == {"added": 1, "removed": 0}


def test_file_edit_shapes_for_create_edit_delete(tmp_path: Path):
    store = InMemoryContentStore()
    path = tmp_path / "f.txt"
    created = file_edit(store, path, None, b"x\n")
    edited = file_edit(store, path, b"x\n", b"y\n")
    deleted = file_edit(store, path, b"y\n", None)
    for edit in (created, edited, deleted):
        validate_wire("FileEdit", edit)
    assert set(created) == {"after", "diff"} and set(deleted) == {"before", "diff"}
    assert edited["before"]["uri"] == edited["after"]["uri"] == path.as_uri()
    assert edited["after"]["content"] == {
        "uri": store.put(b"y\n", "text/plain; charset=utf-8", "f.txt"),
        "sizeHint": 2,
        "contentType": "text/plain; charset=utf-8",
    }
    item = file_edit_content(store, path, b"x\n", b"y\n")
    validate_wire("ToolResultContent", item)
    assert item["type"] == "fileEdit"


def test_a_file_edits_contents_end_with_the_files_name(tmp_path: Path):
    store = InMemoryContentStore()
    edit = file_edit(store, tmp_path / "notes.md", b"old\n", b"new\n")
    for side in ("before", "after"):
        uri = edit[side]["content"]["uri"]
        assert uri.rsplit("/", 1)[1] == "notes.md"
    assert store.get(edit["after"]["content"]["uri"]) == b"new\n"
    assert store.content_type(edit["before"]["content"]["uri"]) == "text/plain; charset=utf-8"
