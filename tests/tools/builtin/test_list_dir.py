"""`list_dir`: sorted entries, markers, bounded output, failures."""

from __future__ import annotations

from tools.builtin.list_dir import ListDirTool


async def test_lists_directories_first_with_markers(ctx, workspace, tmp_path):
    (workspace / "b.txt").write_text("")
    (workspace / "a.txt").write_text("")
    (workspace / "zdir").mkdir()
    (workspace / ".hidden").write_text("")
    (workspace / "link").symlink_to("a.txt")
    result = await ListDirTool().call({}, ctx)
    assert result["content"][0]["text"] == "zdir/\n.hidden\na.txt\nb.txt\nlink -> a.txt"
    assert result["pastTenseMessage"] == "Listed ."
    assert result["structuredContent"]["entries"] == 5


async def test_many_entries_are_bounded(ctx, workspace):
    for i in range(30):
        (workspace / f"f{i:02}").write_text("")
    result = await ListDirTool(max_entries=10).call({"path": "."}, ctx)
    lines = result["content"][0]["text"].splitlines()
    assert len(lines) == 11 and lines[-1] == "(… 20 more entries not shown)"


async def test_empty_directory(ctx, workspace):
    (workspace / "empty").mkdir()
    result = await ListDirTool().call({"path": "empty"}, ctx)
    assert result["content"][0]["text"] == "(empty directory)"
    assert result["pastTenseMessage"] == "Listed empty"


async def test_failures(ctx, workspace):
    (workspace / "f").write_text("")
    assert (await ListDirTool().call({"path": "f"}, ctx))["error"]["code"] == "not_a_directory"
    assert (await ListDirTool().call({"path": "nope"}, ctx))["error"] == {"message": "Directory not found: nope", "code": "not_found"}
    assert (await ListDirTool().call({"path": ".."}, ctx))["error"]["code"] == "path_not_allowed"


async def test_ignored_entries_are_left_out_and_counted(ctx, workspace):
    (workspace / ".gitignore").write_text("*.log\n")
    (workspace / "app.py").write_text("x\n")
    (workspace / "debug.log").write_text("x\n")
    (workspace / "node_modules").mkdir()
    result = await ListDirTool().call({}, ctx)
    assert result["content"][0]["text"].splitlines() == [
        ".gitignore",
        "app.py",
        "(2 ignored entries not shown: debug.log, node_modules/; pass include_ignored to list them)",
    ]
    everything = await ListDirTool().call({"include_ignored": True}, ctx)
    assert "debug.log" in everything["content"][0]["text"].splitlines()


async def test_a_named_pipe_is_listed_and_its_ignore_file_twin_does_not_hang(ctx, workspace, make_fifo):
    import time

    make_fifo(workspace / ".ignore")
    make_fifo(workspace / "pipe")
    started = time.monotonic()
    listed = await ListDirTool().call({"path": "."}, ctx)
    refused = await ListDirTool().call({"path": "pipe"}, ctx)
    assert time.monotonic() - started < 2
    assert listed["content"][0]["text"].splitlines() == [".ignore", "pipe"]
    assert refused["error"]["message"] == "pipe is a named pipe (FIFO), not a directory."
