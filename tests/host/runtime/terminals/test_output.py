"""Pty bytes to terminal/data text: split characters and split shell-integration escapes."""

from __future__ import annotations

from host.runtime.terminals.output import Mark, TerminalText, bounded


def test_a_character_split_across_reads_arrives_whole() -> None:
    text = TerminalText()
    data = "é€".encode()
    assert text.feed(data[:1]) == ""
    assert text.feed(data[1:4]) == "é"
    assert text.feed(data[4:]) == "€"


def test_shell_integration_sequences_are_removed_even_when_split() -> None:
    text = TerminalText()
    first = text.feed(b"out\x1b]633;C\x07put \x1b]13")
    second = text.feed(b"3;D;0\x1b\\done \x1b[31mred\x1b[0m")
    assert first + second == "output done \x1b[31mred\x1b[0m"


def test_other_osc_sequences_pass_through() -> None:
    assert TerminalText().feed(b"\x1b]0;my title\x07$ ") == "\x1b]0;my title\x07$ "


def test_bounded_keeps_the_newest_half_once_over_the_limit() -> None:
    assert bounded(10, "abc", "x" * 10, 20) is None
    assert bounded(18, "abcdef", "0123456789abcdefgh", 20) == "efghabcdef"


def test_segments_keep_the_command_marks_in_order_with_their_values_unescaped() -> None:
    text = TerminalText("n0nce")
    first = text.segments(b"$ ls\r\n\x1b]633;E;echo a\\x3b b \\\\ c;n0nce\x07\x1b]633;C;n0nce\x07out\r\n\x1b]63")
    second = text.segments(b"3;D;2;n0n")
    third = text.segments(b"ce\x07\x1b]633;P;Cwd=/tmp;n0nce\x07\x1b]133;A\x07$ ")
    assert first == ["$ ls\r\n", Mark("E", "echo a; b \\ c"), Mark("C", None), "out\r\n"]
    assert second == []
    assert third == [Mark("D", "2"), Mark("P", "Cwd=/tmp"), "$ "]


def test_a_mark_without_the_terminals_nonce_is_removed_and_means_nothing() -> None:
    text = TerminalText("n0nce")
    forged = b"\x1b]633;E;rm -rf /\x07\x1b]633;C\x07\x1b]633;D;0;guess\x07\x1b]633;P;Cwd=/etc;N0NCE\x07"
    assert text.segments(b"before " + forged + b"after") == ["before ", "after"]
    # A terminal with no nonce (no shell integration) believes no mark at all.
    assert TerminalText().segments(b"x\x1b]633;C;n0nce\x07y") == ["x", "y"]
