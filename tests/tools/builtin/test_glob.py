"""`glob`: recursive patterns, .git skipped, no escape through links or '..'."""

from __future__ import annotations

from tools.builtin.glob import GlobTool


def _tree(root):
    for rel in ["a.py", "src/b.py", "src/deep/c.py", "src/d.txt", ".git/objects/x.py", "docs/readme.md"]:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")


async def test_recursive_pattern(ctx, workspace):
    _tree(workspace)
    result = await GlobTool().call({"pattern": "**/*.py"}, ctx)
    assert result["structuredContent"]["matches"] == ["a.py", "src/b.py", "src/deep/c.py"]
    assert result["content"][0]["text"] == "a.py\nsrc/b.py\nsrc/deep/c.py"


async def test_single_level_pattern_and_base_path(ctx, workspace):
    _tree(workspace)
    assert (await GlobTool().call({"pattern": "*.py"}, ctx))["structuredContent"]["matches"] == ["a.py"]
    result = await GlobTool().call({"pattern": "*", "path": "src"}, ctx)
    assert result["structuredContent"]["matches"] == ["b.py", "d.txt"]


async def test_no_match_message(ctx, workspace):
    result = await GlobTool().call({"pattern": "**/*.rs"}, ctx)
    assert result["success"] is True and result["content"][0]["text"] == "No files match **/*.rs."


async def test_results_are_bounded(ctx, workspace):
    for i in range(20):
        (workspace / f"f{i}.txt").write_text("")
    result = await GlobTool(max_results=5).call({"pattern": "*.txt"}, ctx)
    assert result["structuredContent"]["total"] == 20
    assert result["content"][0]["text"].endswith("(… 15 more matches not shown; narrow the pattern.)")


async def test_escaping_patterns_and_links_are_refused(ctx, workspace, tmp_path):
    assert (await GlobTool().call({"pattern": "../**"}, ctx))["error"]["code"] == "invalid_arguments"
    assert (await GlobTool().call({"pattern": "/etc/*"}, ctx))["error"]["code"] == "invalid_arguments"
    assert (await GlobTool().call({"pattern": "*", "path": ".."}, ctx))["error"]["code"] == "path_not_allowed"
    (workspace / "outlink").symlink_to(tmp_path / "outside")
    result = await GlobTool().call({"pattern": "**/*.txt"}, ctx)
    assert result["structuredContent"]["matches"] == []


async def test_ignored_files_and_dependency_folders_are_not_found_unless_asked(ctx, workspace):
    (workspace / ".gitignore").write_text("dist/\n")
    for path in ("src/a.py", "dist/b.py", ".venv/lib/c.py", "node_modules/d/e.py"):
        (workspace / path).parent.mkdir(parents=True, exist_ok=True)
        (workspace / path).write_text("x\n")
    result = await GlobTool().call({"pattern": "**/*.py"}, ctx)
    assert result["content"][0]["text"] == "src/a.py"
    everything = await GlobTool().call({"pattern": "**/*.py", "include_ignored": True}, ctx)
    assert everything["structuredContent"]["total"] == 4


async def test_an_ignore_file_that_is_a_named_pipe_does_not_hang_the_search(ctx, workspace, make_fifo):
    import time

    (workspace / "a.py").write_text("")
    make_fifo(workspace / ".gitignore")
    started = time.monotonic()
    result = await GlobTool().call({"pattern": "**/*.py"}, ctx)
    assert time.monotonic() - started < 2
    assert result["content"][0]["text"].splitlines()[0] == "a.py"
