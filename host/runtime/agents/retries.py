"""When a failed model call is tried again, and after how long. Pure: no clock, no sleep, no I/O.

``retry_after(...)`` answers for one failed call: ``None`` when it must not be retried (the error
is not retryable, part of the answer already streamed, or the retries are spent), else the seconds
to wait: the provider's own ``retry_after`` when it gave one, else exponential backoff from
``base_delay`` (``base_delay * 2**attempt``, ``attempt`` counting from 0 for the first failure).
A wait longer than the host's ``max_delay`` is still returned: the caller says why it gives up
rather than waiting (``too_long``).
"""

from __future__ import annotations

__all__ = ["retry_after", "too_long"]


def retry_after(
    *, retryable: bool, streamed: bool, attempt: int, retries: int, base_delay: float, asked: float | None
) -> float | None:
    """Seconds to wait before trying the call again, or ``None`` to fail it now (see the module docstring)."""
    if streamed or not retryable or attempt >= retries:
        return None
    return asked if asked is not None else base_delay * (2**attempt)


def too_long(delay: float, max_delay: float) -> bool:
    """Whether ``delay`` is longer than the host waits for a retry."""
    return delay > max_delay
