"""``agent-host serve`` keeps its token off every command line: ``--token-file`` (a file only the
user may read), ``AGENT_HOST_TOKEN``, or ``--token`` with a warning; and it says how clients connect
without putting the token among a command's arguments, where every user of the machine sees it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.cli.test_main import ROOT, run_cli

TOKEN = "tok-3f9a1c7e55d2"


def _serve(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "serve", "--port", "0", "--data-dir", str(tmp_path / "data"), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT), **(env or {})},
    )
    line = process.stdout.readline()  # type: ignore[union-attr]  # started with stdout=PIPE
    return process, line


def _stop(process: subprocess.Popen) -> str:
    process.terminate()
    assert process.wait(10) == 0
    return process.stderr.read()  # type: ignore[union-attr]  # started with stderr=PIPE


def test_a_token_file_gives_the_token_and_no_command_line_shows_it(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    os.chmod(token_file, 0o600)
    process, line = _serve(tmp_path, "--token-file", str(token_file))
    try:
        assert line.rstrip().endswith(f"/?token={TOKEN}")
        command_line = Path(f"/proc/{process.pid}/cmdline").read_bytes().decode()
        assert TOKEN not in command_line
    finally:
        said = _stop(process)
    assert "warning" not in said
    url = line.rsplit(" ", 1)[-1].strip()
    assert f"AGENT_HOST_URL='{url}' agent-host chat" in said and "every user sees in ps" in said
    assert str(tmp_path / "data" / "host.json") in said


def test_the_environment_gives_the_token_too(tmp_path: Path) -> None:
    process, line = _serve(tmp_path, env={"AGENT_HOST_TOKEN": TOKEN})
    try:
        assert line.rstrip().endswith(f"/?token={TOKEN}")
    finally:
        _stop(process)


def test_token_on_the_command_line_still_works_but_warns(tmp_path: Path) -> None:
    process, line = _serve(tmp_path, "--token", TOKEN)
    try:
        assert line.rstrip().endswith(f"/?token={TOKEN}")
    finally:
        said = _stop(process)
    assert "--token puts the token on the command line" in said and "--token-file" in said


def test_a_token_file_others_can_read_is_refused_saying_how_to_fix_it(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    os.chmod(token_file, 0o644)
    result = run_cli("serve", "--port", "0", "--data-dir", str(tmp_path / "data"), "--token-file", str(token_file))
    assert result.returncode == 2
    assert f"the token file {token_file} can be read by other users (mode 0644): run 'chmod 600 {token_file}'" in result.stderr
    assert TOKEN not in result.stderr + result.stdout


def test_a_missing_or_empty_token_file_says_what_to_do(tmp_path: Path) -> None:
    missing = run_cli("serve", "--data-dir", str(tmp_path / "data"), "--token-file", str(tmp_path / "none"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    empty = tmp_path / "empty"
    empty.write_text("\n")
    os.chmod(empty, 0o600)
    result = run_cli("serve", "--data-dir", str(tmp_path / "data"), "--token-file", str(empty))
    assert result.returncode == 2 and "must hold the token alone" in result.stderr
    both = run_cli("serve", "--data-dir", str(tmp_path / "data"), "--token-file", str(empty), "--token", "x")
    assert both.returncode == 2 and "either --token-file or --token" in both.stderr
