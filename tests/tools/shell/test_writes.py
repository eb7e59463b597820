"""Reading a command line for writes outside the working directory, before it runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.shell import describe_findings, outside_writes, write_targets


def _outside(workspace: Path, command: str) -> list[tuple[str, str]]:
    return [(f.kind, f.target) for f in outside_writes(command, workspace)]


@pytest.mark.parametrize(
    "command",
    [
        "echo hi > out.txt",
        "echo hi >> sub/log.txt 2>&1",
        "make 2>/dev/null >/dev/stderr",
        "ls | tee listing.txt",
        "cp a b && mv b c && rm -f c",
        "mkdir -p build/x && touch build/x/y",
        "chmod +x ./run.sh",
        "ln -s /etc/passwd link",
        "cat /etc/hosts",
        "sed -n p /etc/hosts",
        "echo '> /etc/x' \"rm /etc/y\"",
        "(cd /tmp; ls); touch here",
        "cd sub && touch x",
        "cat <<EOF > notes\nrm -rf /etc\nEOF\necho ok",
        "git status # > /etc/x",
    ],
)
def test_writes_inside_the_working_directory_are_not_reported(workspace: Path, command: str) -> None:
    assert outside_writes(command, workspace) == []


@pytest.mark.parametrize(
    ("command", "target"),
    [
        ("echo hi > ../outside/x", "outside/x"),
        ("echo hi 2> ../outside/err", "outside/err"),
        ("echo hi &>> ../outside/log", "outside/log"),
        ("ls | tee -a ok.txt ../outside/copy", "outside/copy"),
        ("cp a ../outside/", "outside"),
        ("cp -t ../outside a b", "outside"),
        ("mv ../outside/secret.txt here", "outside/secret.txt"),
        ("rm -rf -- ../outside", "outside"),
        ("mkdir ../outside/new", "outside/new"),
        ("touch ../outside/t", "outside/t"),
        ("chmod 600 ../outside/secret.txt", "outside/secret.txt"),
        ("ln -s a ../outside/link", "outside/link"),
        ("dd if=/dev/zero of=../outside/disk bs=1 count=1", "outside/disk"),
        ("sed -i s/a/b/ ../outside/secret.txt", "outside/secret.txt"),
        ("find ../outside -name '*.txt' -delete", "outside"),
        ("sudo -u bob rm ../outside/secret.txt", "outside/secret.txt"),
        ("echo $(touch ../outside/sub) ", "outside/sub"),
        ("echo `touch ../outside/tick`", "outside/tick"),
        ("sh -c 'echo hi > ../outside/nested'", "outside/nested"),
        ("true && echo hi > '../outside/quoted name'", "outside/quoted name"),
        ("echo hi > escape/secret.txt", "outside/secret.txt"),
    ],
)
def test_writes_outside_the_working_directory_are_reported_resolved(workspace: Path, command: str, target: str) -> None:
    (workspace / "escape").symlink_to(workspace.parent / "outside")
    expected = str((workspace.parent / target).resolve())
    assert ("outside", expected) in _outside(workspace, command)


def test_a_write_to_an_extra_root_is_allowed(workspace: Path) -> None:
    assert outside_writes("echo hi > ../outside/x", workspace, [workspace.parent / "outside"]) == []


def test_changing_directory_out_of_the_root_reports_what_runs_there(workspace: Path) -> None:
    outside = str((workspace.parent / "outside").resolve())
    assert _outside(workspace, "cd ../outside && make") == [("cd-outside", outside)]
    assert _outside(workspace, "cd /tmp") == []  # nothing runs there


def test_targets_known_only_at_run_time_are_reported_as_undetermined(workspace: Path) -> None:
    assert _outside(workspace, 'echo hi > "$OUT"') == [("undetermined", "$OUT")]
    assert _outside(workspace, "cp a ~bob/x") == [("undetermined", "~bob/x")]
    assert [f.kind for f in outside_writes('cd "$X" && ls', workspace)] == ["cd-unknown"]


def test_home_is_outside_unless_it_is_a_root(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(workspace.parent / "outside"))
    assert _outside(workspace, "touch ~/x") == [("outside", str((workspace.parent / "outside" / "x").resolve()))]


def test_the_description_names_every_path_and_the_working_directory(workspace: Path) -> None:
    findings = outside_writes("echo a > ../outside/a; echo b > $B", workspace)
    text = describe_findings(findings, workspace)
    assert str((workspace.parent / "outside" / "a").resolve()) in text
    assert "outside the working directory" in text and "`$B`" in text and str(workspace) in text
    assert os.linesep not in text


def test_write_targets_are_the_named_places_outside_the_working_directory_inside_the_given_folders(tmp_path: Path) -> None:
    work, shared, other = tmp_path / "work", tmp_path / "shared", tmp_path / "other"
    for folder in (work, shared, other):
        folder.mkdir()
    command = f"echo a > ../shared/x.txt; cp y {other}/; echo $HOME > {shared}/$NAME; cd ../shared && make; echo b > here.txt"
    # After the cd, here.txt is written in shared too; $NAME is known only at run time: left out.
    inside_shared = [(shared / "x.txt").resolve(), shared.resolve(), (shared / "here.txt").resolve()]
    assert write_targets(command, work, [shared]) == inside_shared
    assert write_targets(command, work, [shared, other]) == [inside_shared[0], other.resolve(), *inside_shared[1:]]
