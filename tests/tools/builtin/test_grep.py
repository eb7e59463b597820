"""`grep`: regex search, filters, skipping binaries and .git, bounded output."""

from __future__ import annotations

from tools.builtin.grep import GrepTool


async def test_finds_matching_lines_with_paths_and_numbers(ctx, workspace):
    (workspace / "src").mkdir()
    (workspace / "src/a.py").write_text("import os\ndef main():\n    pass\n")
    (workspace / "b.txt").write_text("nothing\ndef not python\n")
    result = await GrepTool().call({"pattern": r"^def \w+"}, ctx)
    assert result["content"][0]["text"] == "b.txt:2: def not python\nsrc/a.py:2: def main():"
    assert result["structuredContent"]["total"] == 2


async def test_glob_filter_and_case_insensitivity(ctx, workspace):
    (workspace / "a.py").write_text("TODO one\n")
    (workspace / "a.md").write_text("todo two\n")
    result = await GrepTool().call({"pattern": "todo", "glob": "*.py", "case_insensitive": True}, ctx)
    assert result["content"][0]["text"] == "a.py:1: TODO one"


async def test_skips_binary_files_and_git(ctx, workspace):
    (workspace / ".git").mkdir()
    (workspace / ".git/config").write_text("needle\n")
    (workspace / "blob.bin").write_bytes(b"needle\x00\x01")
    (workspace / "ok.txt").write_text("needle\n")
    result = await GrepTool().call({"pattern": "needle"}, ctx)
    assert result["content"][0]["text"] == "ok.txt:1: needle"


async def test_output_is_bounded(ctx, workspace):
    (workspace / "many.txt").write_text("hit " + "x" * 1000 + "\n" * 1 + "hit\n" * 50)
    result = await GrepTool(max_line_chars=20).call({"pattern": "hit", "max_results": 5}, ctx)
    lines = result["content"][0]["text"].splitlines()
    assert lines[0] == "many.txt:1: hit " + "x" * 16 + " [… cut]"
    assert len(lines) == 6 and lines[-1] == "(… 46 more matches not shown; narrow the search.)"


async def test_invalid_regex_and_missing_path(ctx):
    result = await GrepTool().call({"pattern": "(unclosed"}, ctx)
    assert result["error"]["code"] == "invalid_arguments"
    assert result["error"]["message"].startswith("Invalid regular expression '(unclosed': missing )")
    result = await GrepTool().call({"pattern": "x", "path": "nope"}, ctx)
    assert result["error"] == {"message": "Path not found: nope", "code": "not_found"}


async def test_single_file_and_no_matches(ctx, workspace):
    (workspace / "one.txt").write_text("abc\n")
    result = await GrepTool().call({"pattern": "zzz", "path": "one.txt"}, ctx)
    assert result["content"][0]["text"] == "No matches for 'zzz' in 1 file(s)."


async def test_does_not_follow_links_out_of_the_sandbox(ctx, workspace, tmp_path):
    (workspace / "leak.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    (workspace / "leakdir").symlink_to(tmp_path / "outside")
    result = await GrepTool().call({"pattern": "secret"}, ctx)
    assert "top secret" not in str(result)
