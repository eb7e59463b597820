"""`read_file`: numbered lines, ranges, refusal of binaries, bounded output."""

from __future__ import annotations

from tests.tools.wire import assert_wire
from tools.builtin.read_file import ReadFileTool


def _text(result):
    return result["content"][0]["text"]


async def test_reads_with_line_numbers(ctx, workspace):
    (workspace / "a.py").write_text("one\ntwo\nthree\n")
    result = await ReadFileTool().call({"path": "a.py"}, ctx)
    assert result["success"] is True
    assert _text(result) == "1\tone\n2\ttwo\n3\tthree\n"
    assert result["pastTenseMessage"] == "Read a.py"
    assert result["structuredContent"] == {"path": str(workspace.resolve() / "a.py"), "totalLines": 3, "truncated": False, "startLine": 1, "endLine": 3}
    assert_wire("ToolCallResult", result)


async def test_line_range_with_a_note_on_how_to_continue(ctx, workspace):
    (workspace / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    result = await ReadFileTool().call({"path": "n.txt", "offset": 10, "limit": 3}, ctx)
    assert _text(result) == "10\tline 10\n11\tline 11\n12\tline 12\n(Showing lines 10-12 of 100. Use offset=13 to read more.)"
    assert result["pastTenseMessage"] == "Read n.txt, lines 10-12"


async def test_large_file_is_truncated_with_a_note(ctx, workspace):
    (workspace / "big.txt").write_text("x\n" * 5000)
    result = await ReadFileTool(max_lines=100).call({"path": "big.txt"}, ctx)
    assert _text(result).endswith("(Showing lines 1-100 of 5000. Use offset=101 to read more.)")
    assert result["structuredContent"]["truncated"] is True


async def test_very_long_lines_are_cut(ctx, workspace):
    (workspace / "min.js").write_text("a" * 10000 + "\n")
    result = await ReadFileTool(max_line_chars=50).call({"path": "min.js"}, ctx)
    assert _text(result).startswith("1\t" + "a" * 50 + " [… line cut …]")
    assert "(1 long line(s) were cut at 50 characters.)" in _text(result)


async def test_offset_past_the_end(ctx, workspace):
    (workspace / "s.txt").write_text("a\nb\n")
    result = await ReadFileTool().call({"path": "s.txt", "offset": 9}, ctx)
    assert result["success"] is True
    assert "(The file has only 2 lines; offset 9 is past the end.)" in _text(result)


async def test_empty_file(ctx, workspace):
    (workspace / "e.txt").write_text("")
    assert _text(await ReadFileTool().call({"path": "e.txt"}, ctx)) == "(The file is empty.)"


async def test_binary_file_is_refused(ctx, workspace):
    (workspace / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    result = await ReadFileTool().call({"path": "img.png"}, ctx)
    assert result["success"] is False
    assert result["error"]["code"] == "binary_file"
    assert result["error"]["message"] == "img.png is a binary file (272 bytes); read_file only shows text."


async def test_missing_file(ctx):
    result = await ReadFileTool().call({"path": "nope.txt"}, ctx)
    assert result["error"] == {"message": "File not found: nope.txt", "code": "not_found"}


async def test_directory_points_to_list_dir(ctx, workspace):
    (workspace / "d").mkdir()
    result = await ReadFileTool().call({"path": "d"}, ctx)
    assert "is a directory; use list_dir" in result["error"]["message"]


async def test_outside_the_sandbox_is_refused(ctx):
    result = await ReadFileTool().call({"path": "../outside/secret.txt"}, ctx)
    assert result["error"]["code"] == "path_not_allowed"
    assert "top secret" not in str(result)


async def test_non_utf8_text_after_the_sniff_window_is_still_readable(ctx, workspace):
    (workspace / "latin.txt").write_bytes(b"a\n" * 5000 + b"caf\xe9\n")
    result = await ReadFileTool().call({"path": "latin.txt", "offset": 5001}, ctx)
    assert result["success"] is True and "caf\ufffd" in _text(result)


async def test_invalid_offset_is_rejected(ctx, workspace):
    (workspace / "a").write_text("x")
    result = await ReadFileTool().call({"path": "a", "offset": 0}, ctx)
    assert "argument 'offset' must be at least 1, got 0" in result["error"]["message"]


async def test_a_named_pipe_is_refused_at_once_naming_the_path_and_what_it_is(ctx, workspace, make_fifo):
    import time

    make_fifo(workspace / "pipe")
    started = time.monotonic()
    result = await ReadFileTool().call({"path": "pipe"}, ctx)
    assert time.monotonic() - started < 2  # nobody writes to it: opening it plainly would wait for ever
    assert result["success"] is False
    assert result["error"]["code"] == "not_regular_file"
    assert result["error"]["message"] == "pipe is a named pipe (FIFO), not a regular file; the file tools only work on regular files."


async def test_a_character_device_is_refused_rather_than_read_without_end(ctx, workspace):
    (workspace / "zero").symlink_to("/dev/zero")
    ctx.extra_roots = ["/dev"]
    result = await ReadFileTool().call({"path": "zero"}, ctx)
    assert result["error"]["code"] == "not_regular_file"
    assert "zero is a character device" in result["error"]["message"]
