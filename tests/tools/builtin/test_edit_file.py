"""`edit_file`: exact replacement, uniqueness, replace_all, binary refusal, FileEdit stats."""

from __future__ import annotations

from tests.tools.wire import assert_wire, validate_wire
from tools.builtin.edit_file import EditFileTool


async def test_replaces_a_unique_string(ctx, workspace, store):
    (workspace / "app.py").write_text("def f():\n    return 1\n")
    result = await EditFileTool().call({"path": "app.py", "old_string": "return 1", "new_string": "x = 2\n    return x"}, ctx)
    assert result["success"] is True
    assert (workspace / "app.py").read_text() == "def f():\n    x = 2\n    return x\n"
    edit = result["content"][0]
    assert edit["diff"] == {"added": 2, "removed": 1}
    assert store.get(edit["before"]["content"]["uri"]) == b"def f():\n    return 1\n"
    assert result["content"][1]["text"] == "Edited app.py: replaced 1 occurrence(s) (+2 -1 lines)."
    assert_wire("ToolCallResult", result)


async def test_missing_string_fails_clearly(ctx, workspace):
    (workspace / "a.txt").write_text("hello\n")
    result = await EditFileTool().call({"path": "a.txt", "old_string": "bye", "new_string": "x"}, ctx)
    assert result["error"] == {"message": "old_string was not found in a.txt.", "code": "not_found_in_file"}
    assert (workspace / "a.txt").read_text() == "hello\n"


async def test_whitespace_mismatch_gets_a_hint(ctx, workspace):
    (workspace / "a.txt").write_text("    indented\n")
    result = await EditFileTool().call({"path": "a.txt", "old_string": "  indented  ", "new_string": "x"}, ctx)
    assert "different leading/trailing whitespace" in result["error"]["message"]


async def test_ambiguous_string_fails_unless_replace_all(ctx, workspace):
    (workspace / "a.txt").write_text("x = 1\nx = 1\nx = 1\n")
    result = await EditFileTool().call({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 2"}, ctx)
    assert result["error"]["code"] == "not_unique"
    assert "occurs 3 times in a.txt" in result["error"]["message"]
    assert "replace_all" in result["error"]["message"]
    result = await EditFileTool().call({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 2", "replace_all": True}, ctx)
    assert result["success"] is True
    assert (workspace / "a.txt").read_text() == "x = 2\nx = 2\nx = 2\n"
    assert result["structuredContent"]["replacements"] == 3
    assert result["content"][0]["diff"] == {"added": 3, "removed": 3}


async def test_identical_strings_are_refused(ctx, workspace):
    (workspace / "a.txt").write_text("a")
    result = await EditFileTool().call({"path": "a.txt", "old_string": "a", "new_string": "a"}, ctx)
    assert result["error"]["code"] == "no_change"


async def test_empty_old_string_is_refused(ctx, workspace):
    (workspace / "a.txt").write_text("a")
    result = await EditFileTool().call({"path": "a.txt", "old_string": "", "new_string": "b"}, ctx)
    assert "argument 'old_string' must not be empty" in result["error"]["message"]


async def test_missing_file(ctx):
    result = await EditFileTool().call({"path": "ghost.py", "old_string": "a", "new_string": "b"}, ctx)
    assert result["error"] == {"message": "File not found: ghost.py", "code": "not_found"}


async def test_binary_file_is_refused(ctx, workspace):
    (workspace / "blob.bin").write_bytes(b"ab\x00cd")
    result = await EditFileTool().call({"path": "blob.bin", "old_string": "ab", "new_string": "x"}, ctx)
    assert result["error"]["code"] == "binary_file"
    assert (workspace / "blob.bin").read_bytes() == b"ab\x00cd"


async def test_crlf_is_preserved(ctx, workspace):
    (workspace / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    await EditFileTool().call({"path": "w.txt", "old_string": "two", "new_string": "2"}, ctx)
    assert (workspace / "w.txt").read_bytes() == b"one\r\n2\r\n"


async def test_prepare_previews_without_writing(ctx, workspace, store):
    (workspace / "c.txt").write_text("a\nb\nc\n")
    prep = await EditFileTool().prepare({"path": "c.txt", "old_string": "b\n", "new_string": ""}, ctx)
    assert (workspace / "c.txt").read_text() == "a\nb\nc\n"
    (edit,) = prep.edits
    validate_wire("FileEdit", edit)
    assert edit["diff"] == {"added": 0, "removed": 1}
    assert store.get(edit["after"]["content"]["uri"]) == b"a\nc\n"
    assert prep.ready_fields()["confirmationTitle"] == "Edit c.txt?"


async def test_prepare_reports_a_missing_string_as_failure(ctx, workspace):
    (workspace / "c.txt").write_text("a\n")
    prep = await EditFileTool().prepare({"path": "c.txt", "old_string": "zzz", "new_string": ""}, ctx)
    assert prep.failure["error"]["code"] == "not_found_in_file"
    assert prep.edits is None


async def test_a_named_pipe_is_refused_at_once(ctx, workspace, make_fifo):
    import time

    make_fifo(workspace / "pipe")
    started = time.monotonic()
    preview = (await EditFileTool().prepare({"path": "pipe", "old_string": "a", "new_string": "b"}, ctx)).failure
    result = await EditFileTool().call({"path": "pipe", "old_string": "a", "new_string": "b"}, ctx)
    assert time.monotonic() - started < 2
    for outcome in (preview, result):
        assert outcome["success"] is False
        assert outcome["error"]["code"] == "not_regular_file"
        assert "pipe is a named pipe (FIFO), not a regular file" in outcome["error"]["message"]
