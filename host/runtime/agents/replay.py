"""The replay agent: recorded provider traffic served through the real SDKs, fully offline.

A model whose cassette is a session cassette (``version: 2``, written by ``serve --record``) is
served by ``host.runtime.agents.session_source`` (turn by turn, requests checked). This module
serves the older format, and the vendored cassettes of the built-in demo agent:
each model of such a replay agent is one vcrpy cassette. A session replays its model's cassette
interaction by interaction: each model call (including the calls after tool results) gets the
next recorded response, through the same SDK and provider code a live agent uses, so what
streams into a client is exactly what the real provider sent. When every interaction has been
played, the next *turn* starts the cassette again; a model call inside a turn that finds the
cassette exhausted fails the turn with a message saying so (nothing is made up).

The user's words do not change the recorded answer; the agent's description says so. With
``warn`` (an agent the user configured, ``strict`` by default), a request that no longer matches
the recorded one is logged once per cassette, as a warning that the cassette predates the format
replay checks and should be recorded again; the demo agent serves without a word of that.
In the keyless demo (``TurnSettings.recorded_demo``) the answers say what they are: every turn
opens with a notice that the answer is a recording (the first turn of a session with how to connect a real provider, ``DEMO_NOTICE``), and the usage a turn reports names the
recorded model as a recording (``recorded_label``), which the terminal and ``-p`` print.
``DemoSecretTool`` and ``DemoWeatherTool`` are the tools the vendored cassettes call; they give
fixed, clearly labelled answers so the recorded tool loops can complete.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections import OrderedDict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import providers
from host.runtime.agents.sources import make_provider
from providers import Provider, ProviderError
from tools.base import Tool, ToolContext, success_result
from tools.content import text_content

if TYPE_CHECKING:
    from providers import ModelRequest, ModelStream, StreamEvent

__all__ = [
    "ReplaySource", "RecordingEnded", "cassette_kind", "DemoSecretTool", "DemoWeatherTool", "replayable", "VENDORED_CASSETTES",
    "session_cassette_kind", "DEMO_NOTICE", "DEMO_LABEL", "recorded_label",
]

logger = logging.getLogger(__name__)

VENDORED_CASSETTES = Path(__file__).resolve().parents[3] / "cassettes"
"""The cassettes shipped with the repository (see cassettes/SOURCES.md)."""

_SESSIONS_KEPT = 512

DEMO_NOTICE = (
    "Recorded demo: no model is connected, so this answer is a recorded provider response replayed offline; "
    "what you type does not change it. To talk to a real model, set ANTHROPIC_API_KEY or OPENAI_API_KEY "
    "(or configure [agents] in the host's config.toml, see config.example.toml) and start agent-host again."
)
"""The first turn of a replay session opens with this."""

DEMO_LABEL = "Recorded demo: this answer is a recording, not a live model."
"""Every later turn of a replay session opens with this."""


def recorded_label(model: str) -> str:
    """The model a turn's usage names when the answer came from a recording of ``model``."""
    return f"recording of {model}"


class RecordingEnded(ProviderError):
    """The turn asked for more model calls than the cassette recorded."""

    error_type = "recording_ended"


def _peek(path: Path) -> tuple[str, int]:
    """The first request URI and response status of a vcrpy cassette, without parsing the YAML:
    listing agents happens at start-up, and loading every recorded body would slow it down."""
    text = path.read_text(encoding="utf-8")
    uri = re.search(r"^\s+uri:\s*(\S+)\s*$", text, re.MULTILINE)
    code = re.search(r"^\s+code:\s*(\d+)\s*$", text, re.MULTILINE)
    if uri is None or code is None:
        raise ValueError(f"{path} is not a vcrpy cassette with at least one interaction")
    return uri.group(1).strip("'\""), int(code.group(1))


def session_cassette_kind(path: Path) -> str | None:
    """The agent kind a session cassette was recorded with, or None when ``path`` is not one (read
    from its head, without parsing the YAML: agents are listed at start-up)."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        head = handle.read(4096)
    if "format: agent-host session cassette" not in head:
        return None
    kind = re.search(r"^kind:\s*(\S+)\s*$", head, re.MULTILINE)
    return kind.group(1).strip("'\"") if kind else "openai"


def cassette_kind(path: Path) -> tuple[str, str]:
    """The agent kind (SDK) a cassette was recorded with and the base URL it talked to, from its
    first request (the base URL matters for recordings made against a local or proxy server)."""
    uri = _peek(path)[0].split("?", 1)[0]
    for suffix, kind in (("/v1/messages", "anthropic"), ("/responses", "openai"), ("/chat/completions", "openai-chat")):
        if uri.endswith(suffix):
            return kind, uri[: -len(suffix)]
    raise ValueError(f"{path} does not record an OpenAI or Anthropic API call ({uri})")


def replayable(path: Path) -> bool:
    """Whether a cassette's first response is a success (the demo agent offers only those)."""
    try:
        return _peek(path)[1] == 200
    except (OSError, ValueError):
        return False


class _ReplayProvider:
    """A real SDK provider over a replay transport; turns "cassette exhausted" into an error."""

    def __init__(self, inner: Provider, transport: Any, source: str, warn: set[str] | None = None) -> None:
        self._inner = inner
        self.transport = transport
        self.name = inner.name
        self.api = inner.api
        self._source = source
        self._warn = warn
        """The cassettes already warned about (shared by the source), or None: no warnings."""

    def stream(self, request: ModelRequest) -> ModelStream:
        inner = providers.ModelStream.open(self._inner, request)
        return inner.relayed(self._events(inner))

    async def _events(self, inner: ModelStream) -> AsyncIterator[StreamEvent | str]:
        from providers.cassette import CassetteError

        if not self.transport.unplayed:
            raise RecordingEnded(
                f"The recording {self._source} has no more responses for this turn. "
                "Send another message to replay it from the start.",
                provider=self.name,
            )
        try:
            async with contextlib.aclosing(inner):
                async for event in inner.bare():  # bare deltas passed on bare (``ModelStream.relayed``)
                    yield event
        except CassetteError as error:  # a BaseException: keep it from killing the turn silently
            raise RecordingEnded(f"The recording {self._source} cannot answer this request ({error}).", provider=self.name) from None
        finally:
            self._check_last()

    def _check_last(self) -> None:
        """Warn once when what was just sent is not what the older cassette recorded."""
        if self._warn is None or self._source in self._warn or not self.transport.played:
            return
        index = self.transport.played[-1]
        recorded = _json(self.transport.interactions[index].request.body)
        sent = _json(self.transport.requests[-1].content)
        if recorded is None or sent is None or recorded == sent:
            return
        keys = sorted(k for k in set(recorded) | set(sent) if recorded.get(k) != sent.get(k))
        self._warn.add(self._source)
        logger.warning(
            "replay: %s is an older (version 1, vcrpy) cassette and this host's requests no longer match it "
            "(interaction %d differs in %s); its answers are served unchecked. Record the session again "
            "(serve --record) for a session cassette whose requests replay checks.",
            self._source, index + 1, ", ".join(keys),
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class ReplaySource:
    """Per (session, model) replay state over the cassettes of one replay agent."""

    api = "replay"

    def __init__(self, cassettes: dict[str, Path], *, warn: bool = False) -> None:
        self.cassettes = dict(cassettes)
        self._warned: set[str] | None = set() if warn else None
        self._kinds: dict[str, tuple[str, str]] = {}
        self._live: OrderedDict[tuple[str, str], _ReplayProvider] = OrderedDict()

    @contextlib.asynccontextmanager
    async def for_turn(self, session: str, turn_id: str, model: str, *, workdir: str | None = None) -> AsyncIterator[Provider]:
        key = (session, model)
        provider = self._live.get(key)
        if provider is None or not provider.transport.unplayed:
            provider = self._open(model)
            old = self._live.pop(key, None)
            if old is not None:
                await old.aclose()
            self._live[key] = provider
            while len(self._live) > _SESSIONS_KEPT:
                _, evicted = self._live.popitem(last=False)
                await evicted.aclose()
        self._live.move_to_end(key)
        yield provider

    def transport_for(self, session: str, model: str) -> Any:
        """The ``ReplayTransport`` now serving ``session`` on ``model`` (its ``requests`` are what was sent)."""
        provider = self._live.get((session, model))
        return provider.transport if provider is not None else None

    def _open(self, model: str) -> _ReplayProvider:
        from providers.cassette import replay_client

        path = self.cassettes.get(model)
        if path is None:
            known = ", ".join(sorted(self.cassettes)) or "none"
            raise providers.ModelNotFoundError(
                f"This replay agent has no recording for the model {model!r}; pick one of its models: {known}.",
                provider="replay")
        kind, base_url = self._kinds.get(model) or cassette_kind(path)
        self._kinds[model] = (kind, base_url)
        client, transport = replay_client(path)
        # The SDKs insist on a key; replayed requests never leave the process.
        inner = make_provider(kind, api_key="replay-no-key", base_url=base_url, http_client=client)
        return _ReplayProvider(inner, transport, path.name, self._warned)

    async def aclose(self) -> None:
        while self._live:
            _, provider = self._live.popitem()
            await provider.aclose()


def _json(body: Any) -> dict[str, Any] | None:
    try:
        data = json.loads(body) if body else None
    except (TypeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class DemoSecretTool(Tool):
    name = "secret_retrieval_tool"
    title = "Secret retrieval (demo)"
    description = "A tool that requires a password to retrieve a secret."
    input_schema = {
        "type": "object",
        "properties": {"password": {"title": "Password", "type": "string"}},
        "required": ["password"],
        "additionalProperties": False,
    }
    annotations = {"readOnlyHint": True}
    _SECRETS = {"mellon": "Welcome to Moria!", "radiance": "Life before Death"}

    def describe(self, args: dict) -> str:
        return f"Retrieve the secret for {args.get('password', '?')!r}"

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        secret = self._SECRETS.get(args["password"], "No secret is stored for that password.")
        return success_result(f"Retrieved the secret for {args['password']!r}", [text_content(secret)])


class DemoWeatherTool(Tool):
    name = "get_current_weather"
    title = "Current weather (demo)"
    description = "Get the current weather in a given location."
    input_schema = {
        "type": "object",
        "properties": {"location": {"type": "string", "description": "The city and state, e.g. Boston, MA"}},
        "required": ["location"],
    }
    annotations = {"readOnlyHint": True}

    def describe(self, args: dict) -> str:
        return f"Look up the weather in {args.get('location', '?')}"

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        text = f"This replay demo has no live weather data for {args['location']}."
        return success_result(f"Looked up the weather in {args['location']}", [text_content(text)])
