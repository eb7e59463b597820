"""Names a package exports without importing their modules until first use (PEP 562).

A package's ``__init__`` maps each exported name to the submodule that defines it and sets
``__getattr__ = lazy_exports(__name__, WHERE)``. ``from package import name`` then imports that
one submodule, once: the value is kept in the package's namespace, so later lookups never come
back here. The host uses it where importing everything up front cost start-up time (the built-in
tools, the MCP SDK, AG-UI).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports ``where[name]`` (a submodule name,
    relative to the package) on first access to ``name``."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
