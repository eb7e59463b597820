"""HTTP transports that replay one turn of a session cassette, or record one into it.

Contract (``providers.session_cassette`` describes the file):

* ``SessionReplayTransport(cassette, turn=N)`` serves turn ``N``'s recorded calls in order
  (``turn=None``: the title request). Every request is normalised for the replaying session's
  folder and compared with the recorded one (method, path and the whole body: messages, tool
  results, tools offered, model, parameters). With ``strict`` a difference raises
  ``ReplayDiverged`` naming the turn, the call and a diff; without, the recorded answer is served
  anyway. A turn asking for a call the cassette does not have raises ``CassetteUsedUp``.
  A call recorded as cancelled streams what had arrived and then raises ``ReplayedCancel``.
* ``SessionRecordingTransport(inner, on_call)`` forwards to a real transport and hands each
  finished exchange, normalised, to ``on_call`` as a ``Call`` (streams are teed, so the caller
  still streams; a body the reader stopped early is recorded as cancelled).

The errors derive from ``providers.cassette.CassetteError`` (a ``BaseException``, so the SDKs do not
retry them as connection errors); the host turns them into turn errors a client sees.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2

from providers.cassette import CassetteError, TeeStream, scrub_headers
from providers.session_cassette import Call, Normaliser, SessionCassette, kept_headers, request_diff

__all__ = ["SessionReplayTransport", "SessionRecordingTransport", "ReplayDiverged", "CassetteUsedUp", "ReplayedCancel"]


class ReplayDiverged(CassetteError):
    """A request differs from the recorded one (strict replay)."""


class CassetteUsedUp(CassetteError):
    """The session asked for a model call the cassette did not record."""


class ReplayedCancel(CassetteError):
    """The recorded call was cancelled by the client at this point."""


class SessionReplayTransport(httpx2.AsyncBaseTransport):
    """Serves one turn of a session cassette; see the module docstring."""

    def __init__(
        self, cassette: SessionCassette, *, turn: int | None, source: str, normaliser: Normaliser, strict: bool = True,
        sent: list[dict[str, Any]] | None = None, warn: Callable[[str], None] | None = None,
    ) -> None:
        self.cassette = cassette
        self.turn = turn
        self.source = source
        self.normaliser = normaliser
        self.strict = strict
        self.calls = 0
        self.sent = sent if sent is not None else []
        """What was sent, normalised, in order: ``{"turn", "call", "path", "body"}`` (shared with the session)."""
        self._warn = warn

    def _where(self) -> str:
        return "the title request" if self.turn is None else f"turn {self.turn}, model call {self.calls}"

    def _recorded(self) -> Call:
        if self.turn is None:
            if self.cassette.title is None:
                raise CassetteUsedUp(f"{self.source} recorded no title request for this session")
            return self.cassette.title
        recorded = len(self.cassette.turns)
        if self.turn > recorded:
            raise CassetteUsedUp(
                f"{self.source} is used up: it recorded {recorded} turn{'s' if recorded != 1 else ''} and this is turn "
                f"{self.turn} of the session. Record the new turns (serve --record, or --record-mode=new_episodes "
                "in pytest) or start a new session."
            )
        calls = self.cassette.turns[self.turn - 1]
        if self.calls > len(calls) and self.turn in self.cassette.cancelled:
            raise ReplayedCancel(f"the recording was cancelled by its client in turn {self.turn} after {len(calls)} model calls")
        if self.calls > len(calls):
            raise CassetteUsedUp(
                f"{self.source}: turn {self.turn} made more model calls than the {len(calls)} recorded "
                f"(call {self.calls} has no recording)"
            )
        return calls[self.calls - 1]

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        raw = await request.aread()
        self.calls += 1
        body = self.normaliser.body(raw)
        path = request.url.path
        self.sent.append({"turn": self.turn, "call": self.calls, "path": path, "body": body})
        recorded = self._recorded()
        diff = request_diff(recorded, request.method.upper(), path, body)
        if diff is not None:
            text = (f"The replay of {self.source} diverged at {self._where()}: the request differs from the "
                    f"recorded one.\n{diff}\nIf the change is meant (a new prompt, tool or host version), record the session again.")
            if self.strict:
                raise ReplayDiverged(text)
            if self._warn is not None:
                self._warn(text)
        content = recorded.response_bytes(self.normaliser)
        headers = list(recorded.headers.items())
        if recorded.cancelled:
            return httpx2.Response(recorded.status, headers=headers, stream=_CutStream(content, self._where()), request=request)
        return httpx2.Response(recorded.status, headers=headers, content=content, request=request)


class _CutStream(httpx2.AsyncByteStream):
    """What a cancelled call had received, then the cancellation."""

    def __init__(self, content: bytes, where: str) -> None:
        self._content = content
        self._where = where

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._content:
            yield self._content
        raise ReplayedCancel(f"the recording was cancelled by its client at {self._where}")


class SessionRecordingTransport(httpx2.AsyncBaseTransport):
    """Forwards to ``inner`` and reports each finished exchange as a normalised ``Call``."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, normaliser: Normaliser, on_call: Callable[[Call], None]) -> None:
        self._inner = inner
        self._normaliser = normaliser
        self._on_call = on_call

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        raw = await request.aread()
        method, path, body = request.method.upper(), request.url.path, self._normaliser.body(raw)
        response = await self._inner.handle_async_request(request)
        status = response.status_code
        headers = kept_headers((name, values[-1]) for name, values in scrub_headers(response.headers.multi_items()).items())
        content_type = headers.get("content-type", "")

        def finished(data: bytes, complete: bool) -> None:
            text = self._normaliser.text(_decoded(data, headers))
            answer: Any = text
            if "json" in content_type:
                try:
                    answer = json.loads(text)
                except ValueError:
                    pass
            self._on_call(Call(method, path, body, status, headers, answer, cancelled=not complete))

        assert isinstance(response.stream, httpx2.AsyncByteStream)
        return httpx2.Response(status_code=status, headers=response.headers, stream=TeeStream(response.stream, finished),
                               request=request, extensions=response.extensions)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _decoded(data: bytes, headers: dict[str, str]) -> str:
    # The tee sees the body as it came off the wire; the cassette keeps it readable.
    encoding = headers.pop("content-encoding", "").lower()
    if encoding in ("gzip", "deflate"):
        data = zlib.decompress(data, 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
    elif encoding:
        headers["content-encoding"] = encoding
    return data.decode("utf-8", "replace")
