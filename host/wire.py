"""How the host writes action frames: one serialisation per envelope.

``action_frame`` serialises an action envelope once (``ahp.jsonrpc.encode``: orjson, never NaN)
and gives both the text the journal keeps and the ``action`` notification every subscriber
receives.
"""

from __future__ import annotations

from typing import Any

from ahp.jsonrpc import encode

__all__ = ["action_frame"]


def action_frame(envelope: dict[str, Any]) -> tuple[str, str]:
    """An envelope's JSON text (what the journal keeps) and the ``action`` notification frame that
    carries it, from one serialisation. The one place action frames are built."""
    envelope_json = encode(envelope)
    return envelope_json, '{"jsonrpc":"2.0","method":"action","params":' + envelope_json + "}"
