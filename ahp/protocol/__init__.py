"""The model's action builders (``builders``, from the vendored 1.0.0 actions schema) and error
codes; and the AHP 0.2.0 wire protocol: its version, method table, action catalogue and types
(these belong to the 0.2.0 projection, ``ahp.dialects.v0_2``, and are to move there).

Contract:
- Importing this package is cheap: the ~300 generated pydantic models
  (``_generated.py``, from the vendored schema by ``scripts/generate_wire_types.py``)
  are imported on first access to one of them, e.g. ``ahp.protocol.InitializeParams``.
- Everything in ``__all__`` is public; the generated model names are those of
  ``_surface.WIRE_TYPES`` and equal the schema's definition names.
- Wire models accept unknown fields, use snake_case attributes with camelCase aliases,
  and serialise for sending with ``model.to_wire()``.
"""

from __future__ import annotations

import importlib
from typing import Any

from ahp.protocol._base import WireModel
from ahp.protocol._surface import WIRE_TYPES
from ahp.protocol.actions import (
    ACTIONS,
    CHANNEL_KINDS,
    CLIENT_DISPATCHABLE,
    ActionSpec,
    ChannelKind,
    action_model,
    channel_kind_of,
    state_action_model,
)
from ahp.protocol.errors import AHP_ERROR_CODES, JSONRPC_ERROR_CODES, ErrorCode
from ahp.protocol.methods import METHODS, MethodSpec
from ahp.protocol.schema import SCHEMA_PATH, load_schema, wire_schema

PROTOCOL_VERSION = "0.2.0"
"""The AHP version these wire types, methods and actions describe. Which versions the host
serves, and how a connection picks one, is ``ahp.dialects.negotiation``."""

__all__ = [
    "ACTIONS",
    "AHP_ERROR_CODES",
    "CHANNEL_KINDS",
    "CLIENT_DISPATCHABLE",
    "JSONRPC_ERROR_CODES",
    "METHODS",
    "PROTOCOL_VERSION",
    "SCHEMA_PATH",
    "ActionSpec",
    "ChannelKind",
    "ErrorCode",
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
        value = getattr(importlib.import_module("ahp.protocol._generated"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY)
