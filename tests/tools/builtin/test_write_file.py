"""`write_file`: create and overwrite, preview without writing, FileEdit content."""

from __future__ import annotations

import os

from tests.tools.wire import assert_wire, validate_wire
from tools.builtin.write_file import WriteFileTool


async def test_creates_a_file_and_its_parents(ctx, workspace, store):
    result = await WriteFileTool().call({"path": "src/pkg/new.py", "content": "a\nb\n"}, ctx)
    assert result["success"] is True
    assert (workspace / "src/pkg/new.py").read_text() == "a\nb\n"
    edit, summary = result["content"]
    assert edit["type"] == "fileEdit"
    assert "before" not in edit
    assert edit["after"]["uri"] == (workspace.resolve() / "src/pkg/new.py").as_uri()
    assert store.get(edit["after"]["content"]["uri"]) == b"a\nb\n"
    assert edit["diff"] == {"added": 2, "removed": 0}
    assert summary == {"type": "text", "text": "Created src/pkg/new.py (2 lines)."}
    assert result["pastTenseMessage"] == "Created src/pkg/new.py"
    assert_wire("ToolCallResult", result)


async def test_overwrite_reports_before_and_after(ctx, workspace, store):
    (workspace / "f.txt").write_text("keep\nold\n")
    result = await WriteFileTool().call({"path": "f.txt", "content": "keep\nnew\nmore\n"}, ctx)
    edit = result["content"][0]
    assert store.get(edit["before"]["content"]["uri"]) == b"keep\nold\n"
    assert store.get(edit["after"]["content"]["uri"]) == b"keep\nnew\nmore\n"
    assert edit["diff"] == {"added": 2, "removed": 1}
    assert result["structuredContent"]["created"] is False


async def test_prepare_shows_the_edit_without_writing(ctx, workspace, store):
    (workspace / "f.txt").write_text("old\n")
    prep = await WriteFileTool().prepare({"path": "f.txt", "content": "new\n"}, ctx)
    assert (workspace / "f.txt").read_text() == "old\n"
    fields = prep.ready_fields()
    assert fields["invocationMessage"] == "Write f.txt"
    assert fields["confirmationTitle"] == "Write f.txt?"
    (edit,) = fields["edits"]["items"]
    validate_wire("FileEdit", edit)
    assert edit["diff"] == {"added": 1, "removed": 1}
    assert store.get(edit["after"]["content"]["uri"]) == b"new\n"


async def test_prepare_for_a_new_file_creates_nothing(ctx, workspace):
    prep = await WriteFileTool().prepare({"path": "a/b/c.txt", "content": "x"}, ctx)
    assert prep.failure is None
    assert not (workspace / "a").exists()


async def test_prepare_of_a_refused_path_fails_before_asking(ctx):
    prep = await WriteFileTool().prepare({"path": "/etc/evil", "content": "x"}, ctx)
    assert prep.failure["error"]["code"] == "path_not_allowed"


async def test_writing_through_a_symlink_out_is_refused(ctx, workspace, tmp_path):
    (workspace / "out").symlink_to(tmp_path / "outside")
    result = await WriteFileTool().call({"path": "out/planted.txt", "content": "x"}, ctx)
    assert result["success"] is False and result["error"]["code"] == "path_not_allowed"
    assert not (tmp_path / "outside" / "planted.txt").exists()


async def test_writing_to_a_directory_fails_clearly(ctx, workspace):
    (workspace / "d").mkdir()
    result = await WriteFileTool().call({"path": "d", "content": "x"}, ctx)
    assert result["error"] == {"message": "d is a directory, not a file.", "code": "is_directory"}


async def test_file_mode_is_kept(ctx, workspace):
    script = workspace / "run.sh"
    script.write_text("old")
    os.chmod(script, 0o755)
    await WriteFileTool().call({"path": "run.sh", "content": "new"}, ctx)
    assert script.stat().st_mode & 0o777 == 0o755
    assert [p.name for p in workspace.iterdir()] == ["run.sh"]  # no temp file left behind


async def test_missing_content_is_named(ctx):
    result = await WriteFileTool().call({"path": "x"}, ctx)
    assert "missing required argument 'content'" in result["error"]["message"]


async def test_a_named_pipe_is_neither_read_nor_replaced(ctx, workspace, make_fifo):
    import stat
    import time

    fifo = make_fifo(workspace / "pipe")
    started = time.monotonic()
    result = await WriteFileTool().call({"path": "pipe", "content": "x"}, ctx)
    assert time.monotonic() - started < 2
    assert result["success"] is False
    assert result["error"]["code"] == "not_regular_file"
    assert "pipe is a named pipe (FIFO), not a regular file" in result["error"]["message"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
