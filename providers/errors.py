"""Typed provider errors: what can go wrong talking to a model, and whether to try again.

Tree::

    ProviderError                   root; ``str(err)`` is a user-facing message (no traceback)
    ├── AuthenticationError         401/403: key missing, wrong or without access   (not retryable)
    ├── RateLimitError              429 / rate_limit_error; ``retry_after`` seconds  (retryable)
    ├── ContextLengthError          prompt + max tokens exceed the context window    (not retryable)
    ├── InvalidRequestError         400/404/422: bad request, unknown model          (not retryable)
    │   └── ModelNotFoundError      404 / model_not_found
    ├── ProviderUnavailableError    5xx, 529 overloaded, timeout, dropped connection  (retryable)
    │   └── ProviderStalledError    nothing received for ``stall_timeout`` seconds    (retryable)
    ├── ProviderProtocolError       the provider's stream broke the protocol          (not retryable)
    └── RequestCancelledError       the request was aborted before it finished        (not retryable)

Invariants: every subclass fixes ``error_type`` (a stable snake_case tag for
``ErrorInfo.errorType``) and a default ``retryable``; ``retry_after`` is only ever set on
retryable errors. The vendor modules map SDK exceptions into this tree where they call the SDK and
chain the original as ``__cause__`` (for logs, never for the wire). ``asyncio.CancelledError`` is
never converted: task cancellation propagates untouched.
"""

from __future__ import annotations

from typing import ClassVar


class ProviderError(Exception):
    """Root of every provider failure the turn loop can report or retry."""

    error_type: ClassVar[str] = "provider_error"
    default_retryable: ClassVar[bool] = False

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        status_code: int | None = None,
        retry_after: float | None = None,
        retryable: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        """User-facing text saying what happened and what to do."""
        self.provider = provider
        """Which provider failed, e.g. ``openai`` or ``anthropic``."""
        self.status_code = status_code
        """HTTP status when there was one (mid-stream errors have none)."""
        self.retryable = self.default_retryable if retryable is None else retryable
        """Whether the same request may succeed if sent again later."""
        self.retry_after = retry_after if self.retryable else None
        """Seconds the provider asked us to wait before retrying, when it said so."""

    def __str__(self) -> str:
        return self.message


class AuthenticationError(ProviderError):
    error_type = "authentication"


class RateLimitError(ProviderError):
    error_type = "rate_limit"
    default_retryable = True


class ContextLengthError(ProviderError):
    error_type = "context_length"


class InvalidRequestError(ProviderError):
    error_type = "invalid_request"


class ModelNotFoundError(InvalidRequestError):
    error_type = "model_not_found"


class ProviderUnavailableError(ProviderError):
    error_type = "provider_unavailable"
    default_retryable = True


class ProviderStalledError(ProviderUnavailableError):
    """The provider stopped sending mid-request: no bytes for the request's ``stall_timeout``."""

    error_type = "provider_stalled"


class ProviderProtocolError(ProviderError):
    """The provider sent something that breaks its own stream protocol (a bug on its side)."""

    error_type = "provider_protocol"


class RequestCancelledError(ProviderError):
    error_type = "cancelled"


def parse_retry_after(headers: object) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` headers (numbers only)."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = get(name)
        if raw is None:
            continue
        try:
            value = float(raw) * scale
        except ValueError:
            continue  # an HTTP date: rare from model APIs, and the host has its own backoff
        if value >= 0:
            return value
    return None


_CONTEXT_HINTS = ("context length", "context_length", "context window", "prompt is too long", "too many tokens")


def looks_like_context_overflow(text: str) -> bool:
    """Whether a provider's 400 message says the prompt does not fit the context window."""
    lowered = text.lower()
    return any(hint in lowered for hint in _CONTEXT_HINTS)
