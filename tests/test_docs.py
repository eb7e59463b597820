"""The documentation site builds strictly, and the README's links lead somewhere.

``mkdocs build --strict`` (with ``mkdocs.yml``'s validation settings) fails on a broken link, an
anchor that no heading has, or a page under ``docs/`` left out of the navigation; so does this test.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_documentation_site_builds_strictly(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
         "--site-dir", str(tmp_path / "site")],
        capture_output=True, text=True, env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"}, timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    assert (tmp_path / "site" / "getting-started" / "index.html").is_file()


def test_every_link_of_the_readme_to_a_file_names_one_that_exists() -> None:
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [t for t in targets if not t.startswith(("http://", "https://"))]
    assert local, "the README links to the documentation pages"
    missing = [t for t in local if not (ROOT / t).exists()]
    assert missing == []


def test_the_readme_stays_a_few_screens() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150
