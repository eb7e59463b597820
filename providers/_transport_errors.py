"""Recognise a dropped connection, whichever httpx flavour the SDK runs on.

The SDKs only wrap transport failures raised while *opening* a request; a connection that dies
mid-stream surfaces as the raw ``httpx``/``httpx2`` exception from the body iterator.
"""

from __future__ import annotations


def is_transport_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a network-level failure (reset, truncated body, timeout)."""
    import httpx
    import httpx2

    return isinstance(exc, httpx.TransportError | httpx2.TransportError)
