"""The plugins package exports its names lazily: each name comes from the module the table says,
and type checkers see the same names (its TYPE_CHECKING block)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import plugins

SOURCE = Path(plugins.__file__)


def _type_checking_names() -> dict[str, str]:
    tree = ast.parse(SOURCE.read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING")
    return {alias.name: node.module for node in block.body if isinstance(node, ast.ImportFrom) for alias in node.names}


def test_every_exported_name_resolves_from_the_module_the_table_names() -> None:
    assert set(plugins.__all__) == set(plugins._WHERE)
    for name, module in plugins._WHERE.items():
        assert getattr(plugins, name) is getattr(importlib.import_module(module), name)


def test_type_checkers_see_the_same_names() -> None:
    assert _type_checking_names() == plugins._WHERE


def test_a_small_module_loads_without_the_plugin_loader() -> None:
    code = "import sys, plugins.claude_code_tools; print('plugins.loader' in sys.modules, 'plugins.model' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        plugins.no_such_name  # noqa: B018
    except AttributeError as error:
        assert "no_such_name" in str(error)
    else:
        raise AssertionError("expected AttributeError")
