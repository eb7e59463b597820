"""Error codes of PROTOCOL.md section 12."""

from __future__ import annotations

import json

from ahp.dialects.v0_2.wire import load_schema
from ahp.protocol import AHP_ERROR_CODES, JSONRPC_ERROR_CODES, ErrorCode


def test_every_code_has_its_protocol_value_and_name():
    assert {c.wire_name: int(c) for c in ErrorCode} == {
        "ParseError": -32700,
        "InvalidRequest": -32600,
        "MethodNotFound": -32601,
        "InvalidParams": -32602,
        "InternalError": -32603,
        "SessionNotFound": -32001,
        "ProviderNotFound": -32002,
        "SessionAlreadyExists": -32003,
        "TurnInProgress": -32004,
        "UnsupportedProtocolVersion": -32005,
        "ContentNotFound": -32006,
        "AuthRequired": -32007,
        "NotFound": -32008,
        "PermissionDenied": -32009,
        "AlreadyExists": -32010,
        "Conflict": -32011,
    }


def test_codes_cover_the_schema_enums_plus_conflict():
    defs = load_schema()["$defs"]
    assert {int(c) for c in JSONRPC_ERROR_CODES} == set(defs["JsonRpcErrorCode"]["enum"])
    # -32011 Conflict is in the 0.2.0 TypeScript types but missing from the schema enum.
    assert {int(c) for c in AHP_ERROR_CODES} == set(defs["AhpErrorCode"]["enum"]) | {-32011}


def test_codes_serialise_as_plain_integers():
    assert json.dumps({"code": ErrorCode.NOT_FOUND}) == '{"code": -32008}'


def test_from_code_maps_known_integers_only():
    assert ErrorCode.from_code(-32601) is ErrorCode.METHOD_NOT_FOUND
    assert ErrorCode.from_code(-1) is None
    assert ErrorCode.from_code("-32601") is None
    assert ErrorCode.from_code(True) is None
