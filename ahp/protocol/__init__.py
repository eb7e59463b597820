"""The model's wire vocabulary: typed builders for every action of the model (``builders``, generated
from the vendored 1.0.0 actions schema, ``spec-1.0.0/``) and the JSON-RPC and AHP error codes
(``errors``). The 0.2.0 wire types, method table and action catalogue are ``ahp.dialects.v0_2.wire``.
"""

from __future__ import annotations

from ahp.protocol.errors import AHP_ERROR_CODES, JSONRPC_ERROR_CODES, ErrorCode

__all__ = ["AHP_ERROR_CODES", "JSONRPC_ERROR_CODES", "ErrorCode"]
