"""How the host writes JSON: one fast encoder for frames and journal bodies, one action-frame builder.

``encode_fast`` writes what ``ahp.jsonrpc.encode`` writes (compact, UTF-8 unescaped, never NaN or
Infinity) with orjson, several times faster on the fan-out path; values orjson cannot take fall back
to ``ahp.jsonrpc.encode``. ``action_frame`` serialises an action envelope once and gives both the
text the journal keeps and the ``action`` notification every subscriber receives.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from ahp.jsonrpc import encode

__all__ = ["encode_fast", "action_frame"]


def encode_fast(value: Any) -> str:
    """Compact JSON text (UTF-8, unescaped), as ``ahp.jsonrpc.encode`` writes it, only faster.

    NaN and infinities, which JSON lacks, are refused by the fallback (``ValueError``) rather
    than written; values orjson cannot take (integers past 64 bits) go through the fallback too.
    """
    try:
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return encode(value)
    if "null" in text and _has_non_finite(value):
        return encode(value)  # raises, as the wire must never carry NaN
    return text


def _has_non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_non_finite(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_non_finite(item) for item in value)
    return False


def action_frame(envelope: dict[str, Any]) -> tuple[str, str]:
    """An envelope's JSON text (what the journal keeps) and the ``action`` notification frame that
    carries it, from one serialisation. The one place action frames are built."""
    envelope_json = encode_fast(envelope)
    return envelope_json, '{"jsonrpc":"2.0","method":"action","params":' + envelope_json + "}"
