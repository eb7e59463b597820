"""Sandbox: paths inside the roots resolve; every escape is refused with a useful error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.errors import SandboxError
from tools.sandbox import resolve_path


def refused(path: str, workspace: Path, extra=()) -> str:
    with pytest.raises(SandboxError) as info:
        resolve_path(path, workspace, extra)
    message = info.value.message
    assert "Allowed roots:" in message and str(workspace.resolve()) in message
    assert "Traceback" not in message
    return message


def test_relative_path_resolves_inside_working_directory(workspace):
    (workspace / "a.txt").write_text("x")
    assert resolve_path("a.txt", workspace) == workspace.resolve() / "a.txt"
    assert resolve_path(".", workspace) == workspace.resolve()
    assert resolve_path("./sub/../a.txt", workspace) == workspace.resolve() / "a.txt"


def test_absolute_path_inside_is_allowed(workspace):
    assert resolve_path(str(workspace / "new.txt"), workspace) == workspace.resolve() / "new.txt"


def test_nonexistent_nested_file_resolves_for_writing(workspace):
    assert resolve_path("not/yet/there.txt", workspace) == workspace.resolve() / "not/yet/there.txt"


def test_file_uri_inside_is_allowed(workspace):
    target = workspace / "with space.txt"
    assert resolve_path(target.as_uri(), workspace) == workspace.resolve() / "with space.txt"


def test_extra_root_is_allowed_and_named_in_errors(workspace, tmp_path):
    extra = tmp_path / "extra"
    extra.mkdir()
    assert resolve_path(str(extra / "f"), workspace, [extra]) == extra.resolve() / "f"
    message = refused("/etc/passwd", workspace, [extra])
    assert str(extra.resolve()) in message


def test_internal_symlink_is_followed(workspace):
    (workspace / "real").mkdir()
    (workspace / "link").symlink_to(workspace / "real")
    assert resolve_path("link/f.txt", workspace) == workspace.resolve() / "real/f.txt"


def test_dotdot_escape_is_refused(workspace):
    message = refused("../outside/secret.txt", workspace)
    assert message.startswith("Access denied: '../outside/secret.txt' is outside the allowed directories")


def test_absolute_path_outside_is_refused(workspace):
    assert "'/etc/passwd' is outside" in refused("/etc/passwd", workspace)


def test_symlinked_file_pointing_outside_is_refused(workspace, tmp_path):
    (workspace / "innocent.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    message = refused("innocent.txt", workspace)
    assert f"resolves to {(tmp_path / 'outside' / 'secret.txt').resolve()}" in message


def test_symlinked_directory_pointing_outside_is_refused(workspace, tmp_path):
    (workspace / "docs").symlink_to(tmp_path / "outside")
    refused("docs/secret.txt", workspace)
    refused("docs/new-file.txt", workspace)  # not existing yet: the parent decides


def test_dangling_symlink_pointing_outside_is_refused(workspace, tmp_path):
    (workspace / "later.txt").symlink_to(tmp_path / "outside" / "created-later.txt")
    refused("later.txt", workspace)


def test_tilde_is_not_expanded(workspace):
    assert "starts with '~', which is not expanded" in refused("~/.ssh/id_rsa", workspace)
    refused("~root/x", workspace)
    refused("~", workspace)


@pytest.mark.parametrize(
    ("attack", "expected"),
    [
        ("a.txt\x00.png", "contains a NUL byte"),
        ("\x00", "contains a NUL byte"),
        ("..%2f..%2fetc%2fpasswd", "percent-encoded characters ('%2f')"),
        ("%2e%2e/%2e%2e/etc/passwd", "percent-encoded characters ('%2e')"),
        ("..%5c..%5cwindows", "percent-encoded characters ('%5c')"),
        ("file:///etc/passwd", "'file:///etc/passwd' is outside"),
        ("file://localhost/etc/shadow", "is outside"),
        ("file://evil.example.com/share/x", "must refer to this machine, not host 'evil.example.com'"),
        ("file:///%2e%2e/etc/passwd", "is outside"),
        ("http://example.com/x", "Only local file paths are allowed, not http: URIs"),
        ("..\\..\\etc\\passwd", "contains a backslash"),
        ("sub\\..\\..\\x", "contains a backslash"),
        ("\uff0e\uff0e\uff0fetc\uff0fpasswd", "contains U+FF0E, which looks like '.'"),
        ("..\u2215etc", "contains U+2215, which looks like '/'"),
        ("safe\u202e.txt", "control or invisible character U+202E"),
        ("zero\u200bwidth/../../x", "control or invisible character U+200B"),
        ("line\nbreak", "control or invisible character U+000A"),
        ("../", "is outside"),
        ("..//..//", "is outside"),
        ("/etc/", "'/etc/' is outside"),
        ("//etc/passwd", "is outside"),
        ("/proc/self/root/etc/passwd", "is outside"),
        ("/proc/self/cwd/../outside/secret.txt", "is outside"),
        ("a/" * 2100 + "f", "Path is too long"),
        ("x" * 300, "component longer than 255 bytes"),
        ("sub/../../outside", "is outside"),
        ("", "The path is empty"),
        ("C:\\Windows\\System32", "contains a backslash"),
        ("\\\\server\\share", "contains a backslash"),
    ],
)
def test_attack_strings_are_refused_with_a_clear_error(workspace, attack, expected):
    assert expected in refused(attack, workspace)


def test_root_name_prefix_is_not_confused_with_the_root(workspace, tmp_path):
    sibling = tmp_path / "work-evil"
    sibling.mkdir()
    refused(str(sibling / "x"), workspace)


def test_symlink_loop_is_refused(workspace):
    (workspace / "loop").symlink_to(workspace / "loop")
    assert "symlink loop" in refused("loop/x", workspace)
    (workspace / "a").symlink_to(workspace / "b")
    (workspace / "b").symlink_to(workspace / "a")
    assert "symlink loop" in refused("a", workspace)


def test_trailing_slash_inside_is_fine(workspace):
    (workspace / "dir").mkdir()
    assert resolve_path("dir/", workspace) == workspace.resolve() / "dir"


def test_working_directory_reached_through_a_symlink(tmp_path, workspace):
    alias = tmp_path / "alias"
    alias.symlink_to(workspace)
    assert resolve_path("f.txt", alias) == workspace.resolve() / "f.txt"
    assert resolve_path(str(workspace / "f.txt"), alias) == workspace.resolve() / "f.txt"


def test_non_string_path_is_refused(workspace):
    with pytest.raises(SandboxError, match="must be a string"):
        resolve_path(123, workspace)  # type: ignore[arg-type]  # deliberately not a path


def test_proc_self_root_into_the_workspace_is_the_same_file(workspace):
    inside = "/proc/self/root" + str(workspace.resolve()) + "/f.txt"
    if os.path.realpath("/proc/self/root") != "/":
        pytest.skip("/proc/self/root is not the file-system root here")
    assert resolve_path(inside, workspace) == workspace.resolve() / "f.txt"


# Property: whatever string comes in, the result is inside a root or the call is refused.
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_PIECES = st.sampled_from(["..", ".", "/", "a", "link", "out", "~", "%2f", "\\", "file://", "\x00", "\uff0e", " ", "b/"])


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_PIECES | st.text(max_size=5), max_size=12).map("".join))
def test_any_path_resolves_inside_a_root_or_is_refused(workspace, tmp_path, path):
    if not (workspace / "link").is_symlink():
        (workspace / "link").symlink_to(tmp_path / "outside")
    try:
        resolved = resolve_path(path, workspace)
    except SandboxError as exc:
        assert "Allowed roots:" in exc.message
        return
    root = workspace.resolve()
    assert resolved == root or resolved.is_relative_to(root)
    assert os.path.realpath(resolved) == str(resolved)
