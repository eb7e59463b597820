"""Every third-party package the shipped code imports is declared in pyproject.toml.

A package that only arrives as another package's dependency can vanish with that package's next
release; CI installs from the project's own files, so an undeclared import is a latent failure.
The cluster's packages (``nats``) are declared in the optional ``cluster`` extra, and only
``host/cluster/`` may import them: everything else must work without that extra."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("ahp", "host", "client", "chat", "providers", "tools", "plugins", "regular_files", "child_processes", "cli")


OPTIONAL = {"cluster": "host/cluster/"}
"""An optional extra, and the one folder whose modules may import what only it declares."""


def _imported_top_levels(exclude: tuple[str, ...] = (), only: str | None = None) -> dict[str, str]:
    found: dict[str, str] = {}
    for package in SHIPPED:
        for path in (ROOT / package).rglob("*.py"):
            where = str(path.relative_to(ROOT))
            if where.startswith(exclude) or (only and not where.startswith(only)):
                continue
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


def _declared(extra: str | None = None) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = set()
    for requirement in project["dependencies"] + (project["optional-dependencies"][extra] if extra else []):
        names.add(re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-"))
    return names


@pytest.mark.parametrize("extra", [None, *OPTIONAL])
def test_every_imported_third_party_package_is_declared(extra: str | None) -> None:
    """The base dependencies cover every import outside the optional extras' folders; an extra
    with the base dependencies covers its folder."""
    distributions = importlib.metadata.packages_distributions()
    declared = _declared(extra)
    imports = (_imported_top_levels(only=OPTIONAL[extra]) if extra
               else _imported_top_levels(exclude=tuple(OPTIONAL.values())))
    missing = []
    for module, where in sorted(imports.items()):
        if module in sys.stdlib_module_names or module in SHIPPED or module == "__future__":
            continue
        owners = {name.lower().replace("_", "-") for name in distributions.get(module, [])}
        if not owners & declared:
            missing.append(f"{module} (imported in {where}; from {sorted(owners) or 'no installed distribution'})")
    assert missing == [], "declare these in pyproject.toml: " + ", ".join(missing)
