"""Every third-party package the shipped code imports is declared in pyproject.toml.

A package that only arrives as another package's dependency can vanish with that package's next
release; CI installs from the project's own files, so an undeclared import is a latent failure."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("ahp", "host", "client", "chat", "providers", "tools", "plugins", "regular_files", "cli")


def _imported_top_levels() -> dict[str, str]:
    found: dict[str, str] = {}
    for package in SHIPPED:
        for path in (ROOT / package).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                for name in names:
                    found.setdefault(name.split(".")[0], str(path.relative_to(ROOT)))
    return found


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = set()
    for requirement in project["dependencies"]:
        names.add(re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-"))
    return names


def test_every_imported_third_party_package_is_declared() -> None:
    distributions = importlib.metadata.packages_distributions()
    declared = _declared()
    missing = []
    for module, where in sorted(_imported_top_levels().items()):
        if module in sys.stdlib_module_names or module in SHIPPED or module == "__future__":
            continue
        owners = {name.lower().replace("_", "-") for name in distributions.get(module, [])}
        if not owners & declared:
            missing.append(f"{module} (imported in {where}; from {sorted(owners) or 'no installed distribution'})")
    assert missing == [], "declare these in pyproject.toml: " + ", ".join(missing)
