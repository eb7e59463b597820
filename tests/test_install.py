"""The README's install: its first lines put ``agent-host`` on PATH from a clone with a tool
installer (``pipx install --editable .`` or ``uv tool install --editable .``), and what that command
relies on holds: the package declares the ``agent-host`` script, the script runs from any folder,
and an editable install finds the keyless demo's recordings, which live in the clone, not in a package.

The installers themselves are not run here (they fetch every dependency); the command was tried by
hand with pipx 1.18.4 into an empty PIPX_HOME."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from host.runtime.agents.replay import VENDORED_CASSETTES

ROOT = Path(__file__).resolve().parents[1]


def _first_block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"```sh\n(.*?)```", readme, re.DOTALL)
    assert match is not None and readme.index(match.group(0)) < readme.index("\n## "), "the README opens with a shell block"
    return match.group(1)


def test_the_readme_opens_with_the_tool_install_and_the_command_it_puts_on_path() -> None:
    block = _first_block()
    assert "pipx install --editable ." in block and "uv tool install --editable ." in block
    assert re.search(r"^cd .*&& agent-host\b", block, re.MULTILINE), "then agent-host, by name, in a project"


def test_the_package_declares_the_agent_host_script() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"agent-host": "cli.main:main"}


def test_the_installed_script_runs_from_another_folder(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "agent-host"
    result = subprocess.run([str(script), "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert "-p, --print" in result.stdout


def test_an_editable_install_finds_the_demo_recordings_in_the_clone() -> None:
    assert VENDORED_CASSETTES == ROOT / "cassettes"
    assert list(VENDORED_CASSETTES.glob("*/*.yaml"))
