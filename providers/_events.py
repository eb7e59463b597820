"""Where a provider's stream events come from: the one seam between the raw SSE path and the SDK's own.

Both ways give the translators the same thing: ``async for event_name, data in stream`` over the
vendor's stream events as plain dicts, and ``await stream.close()``.

* **raw** (the default): the SDK sends the request with the body the provider built
  (``providers._request_body.open_stream``: the client's ``post`` with ``content=`` and the
  raw-response header) and the body is read as server-sent events, each ``data`` parsed with
  orjson (``providers._sse.RawEventStream``). Fast, and it leans on the SDK's ``post`` taking
  those arguments.
* **sdk** (the fallback): the SDK's public ``create(**params, stream=True)`` and its typed events,
  each dumped to the dict it was parsed from (``model_dump(mode="json", exclude_none=True)``).
  Several times slower a chunk (``benchmarks/provider_parsing.py`` prints the SDKs' typed events
  for that reason), but it needs nothing beyond the SDKs' documented API.

:func:`open_events` takes the raw way unless ``AGENT_HOST_PROVIDER_EVENTS=sdk`` is set in the
environment, or the SDK client's ``post`` no longer takes what the raw way passes (checked once
per client class, and logged): an SDK upgrade that changes it then makes streams slower, never
broken. Errors sent inside a stream are raised as the SDK raises them either way (``error`` for
the raw way; the SDK's own stream does it for its typed events).
"""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import AsyncIterator, Callable
from typing import Any

from ._request_body import READ_TIMEOUT_HEADER, open_stream, unbounded_reads
from ._sse import RawEventStream

__all__ = ["ENVIRONMENT_VARIABLE", "TypedEventStream", "open_events", "raw_supported"]

logger = logging.getLogger(__name__)

ENVIRONMENT_VARIABLE = "AGENT_HOST_PROVIDER_EVENTS"
"""``sdk`` reads every provider stream through the SDK's typed events (``raw``, or unset: the raw path)."""

_RAW_ARGUMENTS = frozenset({"cast_to", "content", "options", "stream"})
"""What the raw path passes to the client's ``post`` besides the path."""

_CREATE = {
    "/chat/completions": ("chat", "completions"),
    "/responses": ("responses",),
    "/v1/messages": ("messages",),
}
"""The SDK resource whose ``create`` sends what each path is posted."""

_checked: dict[type, bool] = {}


def raw_supported(client: Any) -> bool:
    """Whether ``client``'s ``post`` takes the arguments the raw path passes (once per client class)."""
    kind = type(client)
    known = _checked.get(kind)
    if known is None:
        try:
            parameters = inspect.signature(client.post).parameters
            known = _RAW_ARGUMENTS <= parameters.keys()
        except (AttributeError, TypeError, ValueError):
            known = False
        if not known:
            logger.warning("%s.post no longer takes %s: provider streams are read through the SDK's typed events "
                           "(slower, same results)", kind.__name__, ", ".join(sorted(_RAW_ARGUMENTS)))
        _checked[kind] = known
    return known


async def open_events(
    client: Any, path: str, params: dict[str, Any], *,
    done: str | None = None, error: Callable[[Any, Any], BaseException | None] | None = None, names: bool = True,
    watched: tuple[float, type] | None = None,
) -> RawEventStream | TypedEventStream:
    """Open the stream of ``params`` posted to ``path`` (see the module docstring). ``done`` and
    ``error(response, data)`` are the raw way's end marker and in-stream error mapping;
    ``names=False`` (for a caller that reads only each event's data) spares the raw way decoding
    each event's name (it gives None instead). ``watched``: (the stall timeout, the SDK's
    ``Timeout`` class) when the caller's stall watch bounds every read: the request then goes
    without the client's per-read bound (``providers._request_body.unbounded_reads``)."""
    options: dict[str, Any] | None = None
    if watched is not None:
        stall_timeout, timeout_type = watched
        options = {"timeout": unbounded_reads(timeout_type, client.timeout),
                   "headers": {READ_TIMEOUT_HEADER: str(float(stall_timeout))}}
    if os.environ.get(ENVIRONMENT_VARIABLE, "raw") != "sdk" and raw_supported(client):
        response = await open_stream(client, path, params, options)
        return RawEventStream(response, done=done,
                              error=(lambda data: error(response, data)) if error is not None else None, names=names)
    resource: Any = client
    for name in _CREATE[path]:
        resource = getattr(resource, name)
    if options is not None:
        return TypedEventStream(await resource.create(**params, stream=True, timeout=options["timeout"],
                                                      extra_headers=options["headers"]))
    return TypedEventStream(await resource.create(**params, stream=True))


class TypedEventStream:
    """The SDK's typed stream read as ``(event type, plain dict)`` pairs, like ``RawEventStream``."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __aiter__(self) -> AsyncIterator[tuple[str | None, Any]]:
        return self._events()

    async def _events(self) -> AsyncIterator[tuple[str | None, Any]]:
        async for event in self._stream:
            yield getattr(event, "type", None), event.model_dump(mode="json", exclude_none=True)

    async def close(self) -> None:
        await self._stream.close()
