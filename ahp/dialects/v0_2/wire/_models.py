"""Lazy resolution of schema definition names to generated pydantic types.

Contract:
- Nothing here imports ``_generated`` at module import time; the first resolution
  does (it takes a few hundred milliseconds, which start-up must not pay).
- Names of ``HANDSHAKE`` (``InitializeParams``: what a connection's first request is
  validated with) resolve to ``_handshake``, classes generated from the same text as
  ``_generated``'s but on their own, so that a host answers its first ``initialize``
  without building ~300 other models first. They validate exactly as ``_generated``'s do;
  they are other class objects (the package's public names stay ``_generated``'s).
- ``model_for(expr)`` accepts a definition name (``"InitializeParams"``) or a union
  written ``"A | B"``. It returns the generated class when the expression is a single
  object definition, else a cached ``TypeAdapter`` over the union's members (schema
  unions such as ``SessionToolCallConfirmedAction`` have no class of their own).
- ``adapter_for(expr)`` always returns a cached ``TypeAdapter``, so callers can use
  ``.validate_python(data)`` uniformly.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any, Union

from pydantic import TypeAdapter

from ahp.dialects.v0_2.wire.schema import union_members

HANDSHAKE = frozenset({"InitializeParams"})
"""The definitions ``_handshake`` holds (``scripts/generate_wire_types.py``, ``HANDSHAKE_DEFINITIONS``)."""


def generated_module() -> Any:
    """The generated models module (imported on first use)."""
    return importlib.import_module("ahp.dialects.v0_2.wire._generated")


def _module_of(names: tuple[str, ...]) -> Any:
    """Where ``names`` resolve: the small handshake module when it holds them all."""
    if HANDSHAKE.issuperset(names):
        return importlib.import_module("ahp.dialects.v0_2.wire._handshake")
    return generated_module()


def _member_names(expr: str) -> tuple[str, ...]:
    names: list[str] = []
    for part in expr.split("|"):
        for member in union_members(part.strip()):
            if member not in names:
                names.append(member)
    return tuple(names)


@cache
def model_for(expr: str) -> Any:
    """The generated class for a single definition, or a ``TypeAdapter`` for a union."""
    names = _member_names(expr)
    module = _module_of(names)
    classes = []
    for name in names:
        cls = getattr(module, name, None)
        if cls is None:
            raise LookupError(f"schema definition {name!r} has no generated model")
        classes.append(cls)
    if len(classes) == 1:
        return classes[0]
    # A union of classes found at run time: no static type describes it, hence Any.
    union: Any = Union[tuple(classes)]  # noqa: UP007 - runtime union of classes
    return TypeAdapter(union)


@cache
def adapter_for(expr: str) -> TypeAdapter[Any]:
    """A ``TypeAdapter`` validating data against ``expr`` (definition or union)."""
    model = model_for(expr)
    return model if isinstance(model, TypeAdapter) else TypeAdapter(model)
