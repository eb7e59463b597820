"""`grep`: regex search, filters, skipping binaries and .git, bounded output."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tools.builtin.grep import GrepTool

RG = shutil.which("rg")


@pytest.fixture(params=["python", "ripgrep"])
def make_grep(request):
    """Every test runs on both engines; they must give the same output."""
    if request.param == "ripgrep" and RG is None:
        pytest.skip("ripgrep (rg) is not on PATH; the Python engine is tested on its own")
    engine = RG if request.param == "ripgrep" else None
    return lambda **kwargs: GrepTool(ripgrep=engine, **kwargs)


async def test_finds_matching_lines_with_paths_and_numbers(ctx, workspace, make_grep):
    (workspace / "src").mkdir()
    (workspace / "src/a.py").write_text("import os\ndef main():\n    pass\n")
    (workspace / "b.txt").write_text("nothing\ndef not python\n")
    result = await make_grep().call({"pattern": r"^def \w+"}, ctx)
    assert result["content"][0]["text"] == "b.txt:2: def not python\nsrc/a.py:2: def main():"
    assert result["structuredContent"]["total"] == 2


async def test_glob_filter_and_case_insensitivity(ctx, workspace, make_grep):
    (workspace / "a.py").write_text("TODO one\n")
    (workspace / "a.md").write_text("todo two\n")
    result = await make_grep().call({"pattern": "todo", "glob": "*.py", "case_insensitive": True}, ctx)
    assert result["content"][0]["text"] == "a.py:1: TODO one"


async def test_skips_binary_files_and_git(ctx, workspace, make_grep):
    (workspace / ".git").mkdir()
    (workspace / ".git/config").write_text("needle\n")
    (workspace / "blob.bin").write_bytes(b"needle\x00\x01")
    (workspace / "ok.txt").write_text("needle\n")
    result = await make_grep().call({"pattern": "needle"}, ctx)
    assert result["content"][0]["text"] == "ok.txt:1: needle"


async def test_output_is_bounded(ctx, workspace, make_grep):
    (workspace / "many.txt").write_text("hit " + "x" * 1000 + "\n" * 1 + "hit\n" * 50)
    result = await make_grep(max_line_chars=20).call({"pattern": "hit", "max_results": 5}, ctx)
    lines = result["content"][0]["text"].splitlines()
    assert lines[0] == "many.txt:1: hit " + "x" * 16 + " [… cut]"
    assert len(lines) == 6 and lines[-1] == "(… 46 more matches not shown; narrow the search.)"


async def test_invalid_regex_and_missing_path(ctx, make_grep):
    result = await make_grep().call({"pattern": "(unclosed"}, ctx)
    assert result["error"]["code"] == "invalid_arguments"
    assert result["error"]["message"].startswith("Invalid regular expression '(unclosed': missing )")
    result = await make_grep().call({"pattern": "x", "path": "nope"}, ctx)
    assert result["error"] == {"message": "Path not found: nope", "code": "not_found"}


async def test_single_file_and_no_matches(ctx, workspace, make_grep):
    (workspace / "one.txt").write_text("abc\n")
    result = await make_grep().call({"pattern": "zzz", "path": "one.txt"}, ctx)
    assert result["content"][0]["text"] == "No matches for 'zzz' in 1 file(s)."


async def test_does_not_follow_links_out_of_the_sandbox(ctx, workspace, tmp_path, make_grep):
    (workspace / "leak.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    (workspace / "leakdir").symlink_to(tmp_path / "outside")
    result = await make_grep().call({"pattern": "secret"}, ctx)
    assert "top secret" not in str(result)


def _project(workspace: Path) -> None:
    (workspace / ".gitignore").write_text("build/\n*.log\n!keep.log\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("needle = 1\n")
    (workspace / "src" / ".gitignore").write_text("generated.py\n")
    (workspace / "src" / "generated.py").write_text("needle = 2\n")
    (workspace / "build").mkdir()
    (workspace / "build" / "out.py").write_text("needle = 3\n")
    (workspace / "debug.log").write_text("needle 4\n")
    (workspace / "keep.log").write_text("needle 5\n")
    (workspace / ".ignore").write_text("vendor/\n")
    (workspace / "vendor").mkdir()
    (workspace / "vendor" / "lib.py").write_text("needle = 6\n")
    for deps in (".venv/lib/site.py", "node_modules/pkg/index.js"):
        (workspace / deps).parent.mkdir(parents=True)
        (workspace / deps).write_text("needle = 7\n")


async def test_what_the_project_ignores_is_not_searched(ctx, workspace, make_grep):
    _project(workspace)
    result = await make_grep().call({"pattern": "needle"}, ctx)
    assert result["content"][0]["text"] == "keep.log:1: needle 5\nsrc/app.py:1: needle = 1"


async def test_include_ignored_searches_everything_but_version_control(ctx, workspace, make_grep):
    _project(workspace)
    result = await make_grep().call({"pattern": "needle", "include_ignored": True}, ctx)
    assert result["structuredContent"]["total"] == 8


async def test_ignore_rules_apply_in_a_git_repository_searched_from_a_subfolder(ctx, workspace, make_grep):
    _project(workspace)
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    result = await make_grep().call({"pattern": "needle", "path": "src"}, ctx)
    assert result["content"][0]["text"] == "app.py:1: needle = 1"


async def test_a_python_only_pattern_works_on_both_engines(ctx, workspace, make_grep):
    (workspace / "a.txt").write_text("foobar\nfoobaz\n")
    result = await make_grep().call({"pattern": r"foo(?=bar)"}, ctx)
    assert result["content"][0]["text"] == "a.txt:1: foobar"


async def test_a_named_pipe_is_refused_as_the_path_and_skipped_in_a_walk(ctx, workspace, make_grep, make_fifo):
    import time

    (workspace / "a.txt").write_text("needle\n")
    make_fifo(workspace / "pipe")
    (workspace / "sub").mkdir()
    make_fifo(workspace / "sub" / ".gitignore")  # an ignore file nobody writes to
    (workspace / "sub" / "b.txt").write_text("needle too\n")
    started = time.monotonic()
    refused = await make_grep().call({"pattern": "needle", "path": "pipe"}, ctx)
    walked = await make_grep().call({"pattern": "needle"}, ctx)
    assert time.monotonic() - started < 2
    assert refused["success"] is False and refused["error"]["code"] == "not_regular_file"
    assert "pipe is a named pipe (FIFO), not a regular file" in refused["error"]["message"]
    assert walked["content"][0]["text"].splitlines() == ["a.txt:1: needle", "sub/b.txt:1: needle too"]
