"""JSON-RPC and AHP error codes (PROTOCOL.md section 12).

Contract:
- ``ErrorCode`` is an ``IntEnum``: members compare equal to the integer that goes on the
  wire, so ``{"code": ErrorCode.NOT_FOUND}`` serialises as ``-32008``.
- ``-32700 .. -32603`` are the JSON-RPC 2.0 codes; ``-32001 .. -32011`` are AHP's.
  ``CONFLICT`` (-32011) is missing from the published ``errors.schema.json`` enum but is
  part of the 0.2.0 TypeScript types, which win.
- ``ErrorCode.wire_name`` is the protocol's own name (``"SessionNotFound"``), for logs
  and human-readable messages; it is never needed on the wire.
- ``ErrorCode.from_code`` maps an arbitrary integer back to a member, or ``None``.
"""

from __future__ import annotations

from enum import IntEnum


class ErrorCode(IntEnum):
    """Every error code an AHP 0.2.0 peer may send."""

    # JSON-RPC 2.0
    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    # AHP
    SESSION_NOT_FOUND = -32001
    PROVIDER_NOT_FOUND = -32002
    SESSION_ALREADY_EXISTS = -32003
    TURN_IN_PROGRESS = -32004
    UNSUPPORTED_PROTOCOL_VERSION = -32005
    CONTENT_NOT_FOUND = -32006
    AUTH_REQUIRED = -32007
    NOT_FOUND = -32008
    PERMISSION_DENIED = -32009
    ALREADY_EXISTS = -32010
    CONFLICT = -32011

    @property
    def wire_name(self) -> str:
        """The protocol's PascalCase name for this code, e.g. ``"SessionNotFound"``."""
        return "".join(part.capitalize() for part in self.name.split("_"))

    @property
    def is_jsonrpc(self) -> bool:
        """True for the five codes defined by JSON-RPC 2.0 itself."""
        return self.value <= -32600

    @classmethod
    def from_code(cls, code: object) -> ErrorCode | None:
        """The member for ``code``, or ``None`` if it is not an AHP 0.2.0 code."""
        if isinstance(code, bool) or not isinstance(code, int):
            return None
        try:
            return cls(code)
        except ValueError:
            return None


JSONRPC_ERROR_CODES: frozenset[ErrorCode] = frozenset(c for c in ErrorCode if c.is_jsonrpc)
AHP_ERROR_CODES: frozenset[ErrorCode] = frozenset(c for c in ErrorCode if not c.is_jsonrpc)
