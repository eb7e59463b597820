"""Provider sources: which provider object serves a turn, with or without recording.

* ``SdkSource`` drives a real provider SDK (OpenAI Responses, Chat Completions, Anthropic,
  LiteLLM). Without recording every turn shares one provider (the SDK clients are safe to use
  concurrently). With recording (``recorder``, a ``host.runtime.agents.session_source.SessionCassetteSource``)
  each turn gets its own provider from the recorder, whose ``httpx2`` client writes the turn into
  the session's cassette ``<directory>/<agent>/<session id>.yaml`` (``cassette_path_for``): per-turn
  transports, no global patching, so concurrent sessions never mix their traffic.
  LiteLLM is recorded the same way for the backends it lets a caller route per call
  (``providers.litellm.recordable``); the others are logged as not recorded.
* ``ReplaySource`` serves turns from recorded cassettes through the real SDK (see
  ``host.runtime.agents.replay``).

SDKs and ``httpx2`` are imported on first use, so building sources costs nothing at start-up.
``SdkSource.warm`` (called when a session is created on the agent) imports the SDK in a worker
thread ahead of the first model call: imported on the event loop by that call, it would stop
every session on the host while it runs (``benchmarks/README.md``, "Figures moved out of
docstrings", has the measurements). In a thread the loop keeps running, and the import runs with
the garbage collector held off (``host.runtime.memory.import_out_of_sight``). A turn that starts
while the import still runs awaits it (``for_turn``) rather than importing the SDK on the loop,
where it would wait for the thread's import lock with every other session stopped. The same thread
builds the process's TLS context (``providers._tls``), which the first model call would otherwise
build on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from host.runtime.memory import import_ahead
from providers import Provider

__all__ = ["SdkSource", "API_BY_KIND", "cassette_path_for"]

API_BY_KIND = {
    "openai": "openai-responses",
    "openai-chat": "openai-chat",
    "anthropic": "anthropic",
    "litellm": "litellm",
}
"""The wire API each SDK-backed agent kind speaks."""

def _import_openai() -> None:
    import openai.resources  # noqa: F401  (what the client's first .chat / .responses imports)

    import providers.openai  # noqa: F401
    from providers._tls import ssl_context

    ssl_context()  # what making the SDK's client at the first model call would build


def _import_anthropic() -> None:
    import anthropic.resources  # noqa: F401

    import providers.anthropic  # noqa: F401
    from providers._tls import ssl_context

    ssl_context()


def _import_litellm() -> None:
    from providers.litellm import import_litellm

    import_litellm()


_SDK_IMPORTS = {"openai": _import_openai, "openai-chat": _import_openai, "anthropic": _import_anthropic, "litellm": _import_litellm}
"""What the first model call of each kind would import on the event loop."""


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def cassette_path_for(directory: Path, agent: str, session: str) -> Path:
    """Where a recorded session goes; every component is made safe as a file name."""
    session_id = session.split(":/", 1)[-1]
    parts = [_UNSAFE.sub("_", piece).strip("._") or "_" for piece in (agent, session_id)]
    return directory / parts[0] / f"{parts[1]}.yaml"


def make_provider(kind: str, *, api_key: str | None, base_url: str | None, http_client: Any = None) -> Provider:
    """A provider of ``kind``; ``http_client`` (an ``httpx2.AsyncClient``) carries recording."""
    import providers

    if kind == "openai":
        return providers.OpenAIResponsesProvider(api_key=api_key, base_url=base_url, http_client=http_client)
    if kind == "openai-chat":
        return providers.OpenAIChatProvider(api_key=api_key, base_url=base_url, http_client=http_client)
    if kind == "anthropic":
        return providers.AnthropicProvider(api_key=api_key, base_url=base_url, http_client=http_client)
    if kind == "litellm":
        return providers.LiteLLMProvider(api_key=api_key, api_base=base_url, http_client=http_client)
    raise ValueError(f"no SDK provider for agent kind {kind!r}")


class SdkSource:
    def __init__(
        self,
        kind: str,
        *,
        agent: str,
        api_key: str | None,
        base_url: str | None = None,
        recorder: Any = None,
    ) -> None:
        self.kind = kind
        self.api = API_BY_KIND[kind]
        self.agent = agent
        self._api_key = api_key
        self._base_url = base_url
        self.recorder = recorder
        """A ``SessionCassetteSource`` recording every turn, or None."""
        self._shared: Provider | None = None
        self._warming: asyncio.Future[None] | None = None

    def warm(self) -> None:
        """Start importing this kind's SDK in a worker thread, once (see the module docstring)."""
        if self._warming is None:
            self._warming = asyncio.ensure_future(asyncio.to_thread(import_ahead, _SDK_IMPORTS[self.kind], f"the {self.kind} SDK"))

    @contextlib.asynccontextmanager
    async def for_turn(self, session: str, turn_id: str, model: str, *, workdir: str | None = None) -> AsyncIterator[Provider]:
        if self._warming is not None and not self._warming.done():
            # A message sent right after the session was made: wait for the import here, not
            # inside it on the event loop (blocked on the import lock, every session with it).
            await asyncio.shield(self._warming)
        if self.recorder is None:
            if self._shared is None:
                self._shared = make_provider(self.kind, api_key=self._api_key, base_url=self._base_url)
            yield self._shared
            return
        async with self.recorder.for_turn(session, turn_id, model, workdir=workdir) as provider:
            yield provider

    async def aclose(self) -> None:
        if self._shared is not None:
            await self._shared.aclose()
            self._shared = None
