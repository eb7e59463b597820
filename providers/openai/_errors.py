"""OpenAI SDK exceptions → :mod:`providers.errors` (also used for LiteLLM, whose errors subclass them).

Mid-stream failures arrive three ways: an ``APIError`` without a status (an ``error`` payload in
the SSE body), a Responses ``response.failed`` / ``error`` event (see :func:`error_from_payload`),
or a raw transport exception when the connection dies.
"""

from __future__ import annotations

import json
from typing import Any

from .._transport_errors import is_transport_error, really_timed_out
from ..errors import (
    AuthenticationError,
    ContextLengthError,
    InvalidRequestError,
    ModelNotFoundError,
    ProviderError,
    ProviderProtocolError,
    ProviderUnavailableError,
    RateLimitError,
    RequestCancelledError,
    looks_like_context_overflow,
    parse_retry_after,
)


def map_error(
    exc: BaseException, *, provider: str = "openai", key_env: str = "OPENAI_API_KEY", base_url: str | None = None
) -> ProviderError:
    """An ``openai`` (or LiteLLM) exception as a :class:`ProviderError` with advice. With a custom
    ``base_url`` (a local or compatible server) the messages name that server, not OpenAI."""
    import openai

    label = f"The model server at {base_url}" if base_url else _label(provider)
    if isinstance(exc, json.JSONDecodeError):
        return ProviderProtocolError(
            f"{label} sent a stream chunk that is not valid JSON, so its answer could not be read. "
            "Check that the server speaks the OpenAI API (and its base URL), then try again.",
            provider=provider,
        )
    if isinstance(exc, openai.APIStatusError):
        return _from_status(exc, provider=provider, key_env=key_env, label=label)
    if isinstance(exc, openai.APITimeoutError) and really_timed_out(exc):
        return ProviderUnavailableError(f"{label} did not answer in time. Try again.", provider=provider)
    if isinstance(exc, openai.APIConnectionError) or is_transport_error(exc):
        return ProviderUnavailableError(
            (f"The connection to the model server at {base_url} failed or dropped. Check that it is running and "
             "that base_url is right, then try again." if base_url else
             f"The connection to {label} failed or dropped. Check the network and base URL, then try again."),
            provider=provider,
        )
    if isinstance(exc, openai.APIError):  # an error payload inside the stream
        body = exc.body if isinstance(exc.body, dict) else {}
        return error_from_payload(
            {"code": body.get("code"), "type": body.get("type"), "message": exc.message}, provider=provider, label=label
        )
    if type(exc).__name__ == "APIUserAbortError":
        return RequestCancelledError(f"The {label} request was cancelled.", provider=provider)
    return ProviderError(f"{label} request failed: {type(exc).__name__}.", provider=provider)


def error_from_payload(error: dict[str, Any], *, provider: str = "openai", label: str | None = None) -> ProviderError:
    """A mid-stream error object (``code`` / ``type`` / ``message``) as a :class:`ProviderError`;
    ``label`` names who sent it (the model server at a custom base URL), else the provider."""
    label = label or _label(provider)
    code = str(error.get("code") or error.get("type") or "")
    detail = str(error.get("message") or code or "no details given")
    if code in {"rate_limit_exceeded", "rate_limit_error"}:
        return RateLimitError(f"{label} rate limit reached ({detail}). Wait and try again.", provider=provider)
    if code == "context_length_exceeded" or looks_like_context_overflow(detail):
        return ContextLengthError(
            f"The conversation is too long for the model ({detail}). Compact or shorten it.", provider=provider
        )
    if code in {"invalid_prompt", "invalid_request_error", "invalid_request"}:
        return InvalidRequestError(f"{label} rejected the request ({detail}).", provider=provider)
    # server_error, overloaded, vector store hiccups ...: transient by default
    return ProviderUnavailableError(f"{label} failed while answering ({detail}). Try again.", provider=provider)


def _from_status(exc: Any, *, provider: str, key_env: str, label: str) -> ProviderError:
    status: int = exc.status_code
    code = str(getattr(exc, "code", None) or "")
    detail = _detail(exc)
    if status in {401, 403}:
        return AuthenticationError(
            f"{label} rejected the credentials ({detail}). Check {key_env} and the key's access.",
            provider=provider,
            status_code=status,
        )
    if status == 429:
        if code == "insufficient_quota":
            return RateLimitError(
                f"{label} quota exhausted ({detail}). Check the account's plan and billing.",
                provider=provider,
                status_code=status,
                retryable=False,
            )
        return RateLimitError(
            f"{label} rate limit reached ({detail}). Wait and try again.",
            provider=provider,
            status_code=status,
            retry_after=parse_retry_after(exc.response.headers),
        )
    if status >= 500 or status in {408, 409}:
        return ProviderUnavailableError(
            f"{label} is unavailable ({status}: {detail}). Try again shortly.",
            provider=provider,
            status_code=status,
            retry_after=parse_retry_after(exc.response.headers),
        )
    if status == 404 or code == "model_not_found":
        return ModelNotFoundError(
            f"{label} could not find that model ({detail}). Check the model id and the key's access.",
            provider=provider,
            status_code=status,
        )
    if code == "context_length_exceeded" or looks_like_context_overflow(detail):
        return ContextLengthError(
            f"The conversation is too long for the model ({detail}). Compact or shorten it.",
            provider=provider,
            status_code=status,
        )
    return InvalidRequestError(f"{label} rejected the request ({detail}).", provider=provider, status_code=status)


def _detail(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    return f"HTTP {exc.status_code}"


def _label(provider: str) -> str:
    return {"openai": "OpenAI", "litellm": "The model provider (via LiteLLM)"}.get(provider, provider)
