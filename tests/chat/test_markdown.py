"""``chat._markdown``: markdown rendered a finished block at a time, and highlighted edit diffs."""

from __future__ import annotations

import re

from chat._markdown import MarkdownStream, block_end, render_edit

_SGR = re.compile(r"\x1b\[[0-9;]*m")


def _plain(text: str) -> str:
    return _SGR.sub("", text)


def test_a_block_ends_at_a_blank_line_or_a_closing_fence_not_inside_a_fence() -> None:
    assert block_end("a paragraph\nstill going") == 0
    assert block_end("first\n\nsecond") == len("first\n\n")
    fenced = "```\ncode\n\nmore code\n"
    assert block_end(fenced) == 0  # the blank line is inside the fence
    assert block_end(fenced + "```\n") == len(fenced + "```\n")


def test_the_stream_prints_whole_blocks_and_keeps_the_rest_for_the_live_region() -> None:
    stream = MarkdownStream(60)
    printed = stream.feed("# Title\n\nSome **bold** te")
    assert _plain(printed).strip() == "Title" and "# Title" not in printed
    assert _plain(stream.tail()) == "Some bold te"  # the unfinished paragraph, rendered live
    printed = stream.feed("xt")
    assert printed == ""  # the paragraph is not finished
    rest = stream.finish()
    assert "bold text" in _plain(rest) and "\x1b[1m" in rest and "**" not in rest
    assert stream.tail() == ""


def test_long_lines_wrap_at_word_ends() -> None:
    stream = MarkdownStream(30)
    text = _plain(stream.finish() + stream.feed("word " * 20 + "\n\n"))
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) > 1 and all(line.rstrip().endswith("word") for line in lines)


def test_an_edit_shows_the_changed_hunk_with_the_code_highlighted() -> None:
    before = "import os\n\n\ndef f():\n    return 1\n"
    after = "import os\n\n\ndef f():\n    return 2\n"
    out = render_edit("pkg/m.py", before, after, 80)
    assert _plain(out).splitlines() == [
        "--- a/pkg/m.py", "+++ b/pkg/m.py", "@@ -2,4 +2,4 @@", "", "", " def f():", "-    return 1", "+    return 2",
    ]
    added = next(line for line in out.splitlines() if _plain(line).startswith("+    return"))
    assert len(set(re.findall(r"38;5;(\d+)", added))) >= 2  # keyword and number in different colours


def test_a_new_file_diffs_against_dev_null_and_no_change_shows_nothing() -> None:
    assert _plain(render_edit("n.txt", None, "hello\n", 80)).splitlines() == ["--- /dev/null", "+++ b/n.txt", "@@ -0,0 +1 @@", "+hello"]
    assert render_edit("n.txt", "same\n", "same\n", 80) == ""
