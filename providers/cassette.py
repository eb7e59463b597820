"""Replay and record provider HTTP traffic as vcrpy-format cassettes, per client, no patching.

Contract:

* :class:`ReplayTransport` is an ``httpx2.AsyncBaseTransport`` serving recorded responses.
  Pass it to the SDK as ``http_client=httpx2.AsyncClient(transport=...)`` (both the ``openai``
  and ``anthropic`` SDKs accept an ``httpx2`` client; ``anthropic`` accepts nothing else).
  Each request gets the **first not-yet-played** interaction whose method, scheme, host, port and
  path match (bodies are not matched: our request JSON is our own). One transport per client, no
  global state, so any number of concurrent sessions can replay side by side.
* :class:`RecordingTransport` forwards to a real transport and appends every exchange to a
  ``version: 1`` vcrpy cassette written with vcrpy's own serializer, secrets scrubbed
  (:func:`scrub_headers`). Streaming bodies are teed as they pass, so the caller still streams.
* An unmatched request or (via :meth:`ReplayTransport.assert_all_played`) an unplayed
  interaction raises :class:`CassetteError`. It derives from ``BaseException`` on purpose, like
  pytest's own outcomes: the SDKs wrap any ``Exception`` from a transport into a retryable
  "connection error", which would hide a test-setup mistake behind retries.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx2

FILTERED = "<filtered>"
"""What a scrubbed secret is replaced with."""

SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
        "anthropic-organization-id",
        "x-goog-api-key",
    }
)
"""Headers whose values never reach a cassette."""

_SECRET_WORDS = ("key", "token", "secret", "auth", "cookie", "session")
_SECRET_QUERY_PARAMS = frozenset({"key", "api_key", "api-key", "apikey", "access_token", "token"})
_HOP_HEADERS = frozenset({"transfer-encoding", "content-length", "connection"})
_MATCH_FIELDS = ("method", "scheme", "host", "port", "path")


class CassetteError(BaseException):
    """A replay could not be served as recorded (see the module docstring for the base class)."""


def is_secret_header(name: str) -> bool:
    """Whether a header may carry credentials or account identity."""
    lowered = name.lower()
    if lowered in SECRET_HEADERS:
        return True
    if lowered.startswith("anthropic-") and lowered not in {"anthropic-version", "anthropic-beta"}:
        return any(word in lowered for word in ("key", "organization", "workspace"))
    return any(word in lowered for word in _SECRET_WORDS) and not lowered.startswith("x-stainless")


def scrub_headers(headers: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """vcrpy-shaped headers (name → list of values) with every secret value replaced."""
    scrubbed: dict[str, list[str]] = {}
    for name, value in headers:
        scrubbed.setdefault(name, []).append(FILTERED if is_secret_header(name) else value)
    return scrubbed


def scrub_url(url: str) -> str:
    """The URL with credential-like query parameters replaced."""
    parts = urlsplit(url)
    if not parts.query:
        return url
    query = [(k, FILTERED if k.lower() in _SECRET_QUERY_PARAMS else v) for k, v in parse_qsl(parts.query, True)]
    return urlunsplit(parts._replace(query=urlencode(query)))


@dataclass(frozen=True)
class Interaction:
    """One recorded request and its response, as read from a cassette."""

    request: Any
    """A ``vcr.request.Request``."""
    response: Mapping[str, Any]
    """vcrpy response dict: ``status{code,message}``, ``headers{name:[values]}``, ``body{string}``."""

    def key(self) -> tuple[Any, ...]:
        return tuple(getattr(self.request, field) for field in _MATCH_FIELDS)


def load_cassette(path: str | Path) -> list[Interaction]:
    """Read a vcrpy cassette with vcrpy's own deserializer."""
    from vcr.serialize import deserialize
    from vcr.serializers import yamlserializer

    text = Path(path).read_text(encoding="utf-8")
    requests, responses, *_ = deserialize(text, yamlserializer)
    return [Interaction(request=rq, response=rs) for rq, rs in zip(requests, responses, strict=True)]


def _request_key(request: httpx2.Request) -> tuple[Any, ...]:
    url = request.url
    port = url.port or (443 if url.scheme == "https" else 80)
    return (request.method.upper(), url.scheme, url.host, port, url.path)


def _response_headers(recorded: Mapping[str, Any]) -> list[tuple[str, str]]:
    headers: list[tuple[str, str]] = []
    for name, values in recorded.items():
        if name.lower() in _HOP_HEADERS:
            continue  # the body is served whole; httpx2 computes its own framing
        for value in [values] if isinstance(values, str) else values:
            headers.append((name, str(value)))
    return headers


class ReplayTransport(httpx2.AsyncBaseTransport):
    """Serves a cassette's responses in order; see the module docstring."""

    def __init__(self, cassette: str | Path | list[Interaction], *, allow_repeats: bool = False) -> None:
        self.source = str(cassette) if isinstance(cassette, str | Path) else "<interactions>"
        self.interactions = load_cassette(cassette) if isinstance(cassette, str | Path) else list(cassette)
        self.allow_repeats = allow_repeats
        self.played: list[int] = []
        """Indexes of the interactions served, in serving order."""
        self.requests: list[httpx2.Request] = []
        """Every request received (bodies read), so tests can assert on what was sent."""
        self._lock = threading.Lock()

    @property
    def unplayed(self) -> list[int]:
        return [i for i in range(len(self.interactions)) if i not in self.played]

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        await request.aread()
        key = _request_key(request)
        with self._lock:
            self.requests.append(request)
            index = self._pick(key)
            self.played.append(index)
        recorded = self.interactions[index].response
        body = recorded.get("body", {}).get("string") or b""
        return httpx2.Response(
            status_code=int(recorded["status"]["code"]),
            headers=_response_headers(recorded.get("headers", {})),
            content=body if isinstance(body, bytes) else body.encode("utf-8"),
            request=request,
        )

    def _pick(self, key: tuple[Any, ...]) -> int:
        for index, interaction in enumerate(self.interactions):
            if index not in self.played and interaction.key() == key:
                return index
        if self.allow_repeats:
            for index, interaction in enumerate(self.interactions):
                if interaction.key() == key:
                    return index
        method, scheme, host, port, path = key
        raise CassetteError(
            f"no unplayed interaction in {self.source} matches {method} {scheme}://{host}:{port}{path} "
            f"({len(self.played)} of {len(self.interactions)} already played)"
        )

    def assert_all_played(self, *, up_to: int | None = None) -> None:
        """Raise :class:`CassetteError` if any interaction (or any of the first ``up_to``) was not served."""
        missing = [i for i in self.unplayed if up_to is None or i < up_to]
        if missing:
            raise CassetteError(f"interactions {missing} of {self.source} were never played")


def replay_client(cassette: str | Path | list[Interaction], **kwargs: Any) -> tuple[httpx2.AsyncClient, ReplayTransport]:
    """An ``httpx2.AsyncClient`` backed by a fresh :class:`ReplayTransport`, and the transport."""
    transport = ReplayTransport(cassette, **kwargs)
    return httpx2.AsyncClient(transport=transport), transport


class TeeStream(httpx2.AsyncByteStream):
    """Passes the body through while keeping a copy; reports it once the body is closed, as
    ``on_done(body, complete)``: ``complete`` is false when the body was closed unread because the
    reading task was being cancelled (an SDK that stops at its end marker closes it unread too)."""

    def __init__(self, inner: httpx2.AsyncByteStream, on_done: Any) -> None:
        self._inner = inner
        self._on_done = on_done
        self._chunks: list[bytes] = []
        self._reported = False
        self._complete = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._chunks.append(chunk)
            yield chunk
        self._complete = True

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            if not self._reported:
                self._reported = True
                task = asyncio.current_task()
                cancelled = not self._complete and task is not None and task.cancelling() > 0
                self._on_done(b"".join(self._chunks), not cancelled)


class RecordingTransport(httpx2.AsyncBaseTransport):
    """Forwards to ``inner`` and records each exchange into ``path`` (rewritten after each one)."""

    def __init__(self, path: str | Path, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self.path = Path(path)
        self._inner = inner if inner is not None else httpx2.AsyncHTTPTransport()
        self._requests: list[Any] = []
        self._responses: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        from vcr.request import Request as VcrRequest

        body = await request.aread()
        recorded_request = VcrRequest(
            request.method,
            scrub_url(str(request.url)),
            body.decode("utf-8", "replace") if body else None,
            {name: values[-1] for name, values in scrub_headers(request.headers.multi_items()).items()},
        )
        response = await self._inner.handle_async_request(request)
        status = {"code": response.status_code, "message": response.reason_phrase}
        headers = scrub_headers(response.headers.multi_items())

        def finished(raw_body: bytes, complete: bool) -> None:
            self._append(recorded_request, {"status": status, "headers": headers, "body": {"string": raw_body}})

        assert isinstance(response.stream, httpx2.AsyncByteStream)
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=TeeStream(response.stream, finished),
            request=request,
            extensions=response.extensions,
        )

    def _append(self, request: Any, response: dict[str, Any]) -> None:
        from vcr.serialize import serialize
        from vcr.serializers import yamlserializer

        with self._lock:
            self._requests.append(request)
            self._responses.append(response)
            text = serialize({"requests": self._requests, "responses": self._responses}, yamlserializer)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(text, encoding="utf-8")

    async def aclose(self) -> None:
        await self._inner.aclose()
