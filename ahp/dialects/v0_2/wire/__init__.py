"""AHP 0.2.0 on the wire: its version, method table, action catalogue and the wire types generated
from its vendored schema (``spec/``). The 0.2.0 projection (``ahp.dialects.v0_2``) and its tests use
them; the model's own builders and error codes are ``ahp.protocol``.

Contract:
- Importing this package is cheap: the ~300 generated pydantic models
  (``_generated.py``, from the vendored schema by ``scripts/generate_wire_types.py``)
  are imported on first access to one of them, e.g. ``ahp.dialects.v0_2.wire.InitializeParams``.
- Everything in ``__all__`` is public; the generated model names are those of
  ``_surface.WIRE_TYPES`` and equal the schema's definition names.
- Wire models accept unknown fields, use snake_case attributes with camelCase aliases,
  and serialise for sending with ``model.to_wire()``.
"""

from __future__ import annotations

import importlib
from typing import Any

from ahp.dialects.v0_2.wire._base import WireModel
from ahp.dialects.v0_2.wire._surface import WIRE_TYPES
from ahp.dialects.v0_2.wire.actions import (
    ACTIONS,
    CHANNEL_KINDS,
    CLIENT_DISPATCHABLE,
    ActionSpec,
    ChannelKind,
    action_model,
    channel_kind_of,
    state_action_model,
)
from ahp.dialects.v0_2.wire.methods import METHODS, MethodSpec
from ahp.dialects.v0_2.wire.schema import SCHEMA_PATH, load_schema, wire_schema

PROTOCOL_VERSION = "0.2.0"
"""The AHP version these wire types, methods and actions describe. Which versions the host
serves, and how a connection picks one, is ``ahp.dialects.negotiation``."""

__all__ = [
    "ACTIONS",
    "CHANNEL_KINDS",
    "CLIENT_DISPATCHABLE",
    "METHODS",
    "PROTOCOL_VERSION",
    "SCHEMA_PATH",
    "ActionSpec",
    "ChannelKind",
    "MethodSpec",
    "WireModel",
    "action_model",
    "channel_kind_of",
    "load_schema",
    "state_action_model",
    "wire_schema",
    *WIRE_TYPES,
]

_LAZY = frozenset(WIRE_TYPES)


def __getattr__(name: str) -> Any:
    # PEP 562: resolve generated models on first use so start-up stays fast.
    if name in _LAZY:
        value = getattr(importlib.import_module("ahp.dialects.v0_2.wire._generated"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY)
