"""The one shell lexer: tokens, nested substitutions, and why a line is opaque to rules."""

from __future__ import annotations

import pytest

from tools.shell.lexer import Operator, Redirect, Word, lex


def texts(command: str) -> list[str]:
    return [t.text if isinstance(t, Word) else f"<{t.op}>" for t in lex(command).tokens]


def test_words_operators_and_redirections_come_out_in_order_with_quotes_removed():
    assert texts("git commit -m 'a; b' && ls \"x y\" | wc -l 2>/dev/null") == [
        "git", "commit", "-m", "a; b", "<&&>", "ls", "x y", "<|>", "wc", "-l", "<>>", "/dev/null",
    ]


def test_a_plain_line_has_nothing_opaque_even_with_a_bare_variable():
    assert lex("git log --author=$USER; make -j4").opaque == []


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("echo $(date)", "it uses command substitution or expansion"),
        ("echo `date`", "it uses command substitution or expansion"),
        ('echo "${HOME}"', "it uses command substitution or expansion"),
        ("diff <(ls a) b", "it uses command substitution or expansion"),
        ("make > log", "it redirects input or output"),
        ("make &> log", "it redirects input or output"),
        ("(cd x && make)", "it uses a subshell or grouping"),
        ("make # quietly", "it contains a comment"),
        ("echo 'open", "it has an unterminated quote"),
        ('echo "open', "it has an unterminated quote"),
        ("echo \\", "it ends with a lone backslash"),
    ],
)
def test_each_construct_a_rule_cannot_see_through_is_named(command, reason):
    assert lex(command).opaque[0] == reason


def test_the_first_opaque_construct_is_reported_first():
    assert lex("a > b; echo $(c)").opaque == ["it redirects input or output", "it uses command substitution or expansion"]


def test_substitutions_are_collected_for_reading_as_command_lines_of_their_own():
    lexed = lex("echo $(rm -rf x) `curl y` <(cat z) '$(not this)'")
    assert lexed.nested == ["rm -rf x", "curl y", "cat z"]
    assert [w.text for w in lexed.tokens if isinstance(w, Word) and w.substituted] == ["$(rm -rf x)", "`curl y`", "<(cat z)"]


def test_file_descriptor_numbers_belong_to_their_redirection():
    tokens = lex("cmd 2>err.log 3>&1").tokens
    assert tokens == [Word("cmd"), Redirect(">"), Word("err.log"), Redirect(">&"), Word("1")]
    assert lex('echo "2">x').tokens[1] == Word("2")  # a quoted 2 is an argument


def test_heredoc_bodies_are_skipped_and_globs_marked():
    lexed = lex("cat <<EOF > out\nrm -rf /\nEOF\nls *.py")
    words = [t for t in lexed.tokens if isinstance(t, Word)]
    assert "rm" not in [w.text for w in words]
    assert [w.text for w in words if w.glob] == ["*.py"]
    assert Operator("\n") in lexed.tokens
