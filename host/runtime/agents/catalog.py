"""Agents from the host config: each ``[agents.<id>]`` table becomes one AHP ``AgentInfo``.

Without an ``[agents]`` table the host offers its built-in set, in this order (which agent a
session created without a provider gets is ``sessions.default_agent``, see ``host.service``):

1. ``offline``: the embedded echo agent (only when ``sessions.offline_agent`` is true, the
   default; tests rely on it being deterministic);
2. ``openai`` and ``anthropic`` with a few current models, keys from ``OPENAI_API_KEY`` /
   ``ANTHROPIC_API_KEY``;
3. ``replay``: the vendored cassettes in ``cassettes/`` replayed through the real SDKs, so a
   newcomer without any key sees real recorded reasoning, text and tool calls stream in.

With an ``[agents]`` table, exactly the configured agents are offered (in file order), followed by
the offline agent when ``sessions.offline_agent`` is true.

A provider whose key is missing stays listed; creating a session on it fails with
``session/creationFailed`` naming the variable to set. Keys are read from ``config.environ``
(the variables captured by ``load_config``) or the table's ``api_key``; they are never logged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from host.config import DEFAULT_KEY_VARIABLES, AgentConfig, HostConfig, ModelConfig
from host.errors import ConfigError
from host.runtime.agents.base import Agent
from host.runtime.agents.offline import OfflineAgent
from host.runtime.agents.provider import ModelSpec, ProviderAgent, TurnSettings
from host.runtime.agents.replay import (
    VENDORED_CASSETTES,
    DemoSecretTool,
    DemoWeatherTool,
    RecordingEnded,
    ReplaySource,
    replayable,
    session_cassette_kind,
)
from host.runtime.agents.session_source import LiveProvider, SessionCassetteSource
from host.runtime.agents.sources import SdkSource, cassette_path_for
from host.runtime.agents.system_prompt import BUILTIN_SYSTEM_PROMPT, configured_system_prompt

__all__ = ["build_agents", "default_agent_configs", "agent_from_config", "vendored_replay_models"]

logger = logging.getLogger(__name__)

_DISPLAY = {
    "openai": "OpenAI",
    "openai-chat": "OpenAI-compatible",
    "anthropic": "Anthropic",
    "litellm": "LiteLLM",
    "replay": "Recorded replay",
}


def default_agent_configs() -> dict[str, AgentConfig]:
    """The agents offered when the config has no ``[agents]`` table."""
    return {
        "openai": AgentConfig(
            kind="openai",
            display_name="OpenAI",
            description="OpenAI models through the Responses API.",
            models=[
                ModelConfig(id="gpt-5", name="GPT-5", context_window=400_000, vision=True, reasoning="effort", default_level="medium"),
                ModelConfig(id="gpt-5-mini", name="GPT-5 mini", context_window=400_000, vision=True, reasoning="effort", default_level="low"),
                ModelConfig(id="gpt-4.1", name="GPT-4.1", context_window=1_047_576, vision=True),
            ],
        ),
        "anthropic": AgentConfig(
            kind="anthropic",
            display_name="Anthropic",
            description="Claude models through the Anthropic Messages API.",
            models=[
                ModelConfig(id="claude-sonnet-4-5", name="Claude Sonnet 4.5", context_window=200_000, vision=True, reasoning="thinking"),
                ModelConfig(id="claude-opus-4-1", name="Claude Opus 4.1", context_window=200_000, vision=True, reasoning="thinking"),
                ModelConfig(id="claude-haiku-4-5", name="Claude Haiku 4.5", context_window=200_000, vision=True, reasoning="thinking"),
            ],
        ),
    }


def vendored_replay_models(directory: Path = VENDORED_CASSETTES) -> list[ModelConfig]:
    """One replay model per vendored cassette whose first response is a success."""
    models = []
    for path in sorted(directory.glob("*/*.yaml")):
        if replayable(path):
            vendor = path.parent.name
            label = path.stem.replace("-", " ")
            models.append(ModelConfig(id=f"{vendor}/{path.stem}", name=f"{_DISPLAY.get(vendor, vendor)}: {label}", cassette=str(path)))
    return models


def build_agents(config: HostConfig) -> list[Agent]:
    agents: list[Agent] = []
    configured = config.agents
    if configured is None:
        if config.sessions.offline_agent:
            agents.append(OfflineAgent(delay=config.sessions.offline_delay))
        tables = default_agent_configs()
        models = vendored_replay_models() if VENDORED_CASSETTES.is_dir() else []
        if models:
            tables["replay"] = AgentConfig(
                kind="replay",
                display_name="Recorded replay (offline)",
                description="Real recorded OpenAI and Anthropic responses replayed offline; "
                "your message does not change the recorded answer.",
                models=models,
                title="first-words",
                strict=False,  # the demo: any message gets the recorded answer
            )
        for name, table in tables.items():
            agent = agent_from_config(name, table, config)
            if name == "replay":  # the keyless demo says it is one (a configured replay agent is the user's own)
                agent.settings = replace(agent.settings, recorded_demo=True)
            agents.append(agent)
        return agents
    agents.extend(agent_from_config(name, table, config) for name, table in configured.items())
    if config.sessions.offline_agent and "offline" not in configured:
        agents.append(OfflineAgent(delay=config.sessions.offline_delay))
    return agents


def agent_from_config(name: str, table: AgentConfig, config: HostConfig) -> ProviderAgent:
    display = table.display_name or name
    models = [
        ModelSpec(
            id=m.id, name=m.name, context_window=m.context_window, vision=m.vision, reasoning=m.reasoning, default_level=m.default_level
        )
        for m in table.models
    ]
    base = Path(config.source).parent if config.source and Path(config.source).is_file() else Path.cwd()
    cassettes = _replay_cassettes(name, table, base) if table.kind == "replay" else {}
    kinds = {session_cassette_kind(path) for path in cassettes.values()}
    if len(kinds) > 1 and None in kinds:
        raise ConfigError(f"agents.{name}.models: mixes session cassettes (serve --record) with older vcrpy cassettes; "
                          "give each kind its own replay agent")
    # A replay of a recorded session sends what the recorded agent sent: the same prompt, title request and tools.
    sessions = table.kind == "replay" and None not in kinds
    older_replay = table.kind == "replay" and not sessions
    settings = TurnSettings(
        system_prompt=configured_system_prompt(name, table.system_prompt, table.system_prompt_file, base,
                                               default=None if older_replay else BUILTIN_SYSTEM_PROMPT),
        max_tokens=table.max_tokens,
        retries=table.retries,
        retry_base_delay=table.retry_base_delay,
        retry_max_delay=table.retry_max_delay,
        max_model_calls=table.max_model_calls,
        title="first-words" if older_replay else table.title,
        stall_timeout=table.stall_timeout or None,
        compact_at=table.compact_at or None,
        keep_recent_turns=table.keep_recent_turns,
        tool_output_limit=table.tool_output_limit,
    )
    if sessions:
        kind = next(iter(kinds)) or "openai"
        return ProviderAgent(
            name,
            SessionCassetteSource(cassette_for=_cassette_of(name, cassettes), kind=kind, strict=table.strict),
            display_name=display,
            description=table.description or "A recorded session replayed offline, checked request by request.",
            models=models,
            settings=settings,
            sleep=_no_wait,
        )
    if table.kind == "replay":
        return ProviderAgent(
            name,
            ReplaySource(cassettes, warn=table.strict),
            display_name=display,
            description=table.description or "Recorded provider responses replayed offline.",
            models=models,
            settings=settings,
            tools=[DemoSecretTool(), DemoWeatherTool()],
            sleep=_no_wait,
        )
    variable = table.api_key_env or DEFAULT_KEY_VARIABLES.get(table.kind)
    key = table.api_key or (config.environ.get(variable) if variable else None)
    unavailable = None
    # A compatible local server (base_url) needs no key; LiteLLM reads each vendor's own variable.
    keyless = table.kind == "openai-chat" and table.base_url is not None and table.api_key_env is None
    if key is None and variable is not None and not keyless:
        unavailable = (
            f"{display} has no API key: set the {variable} environment variable "
            f"(or api_key_env / api_key in [agents.{name}] of the config) and restart the host."
        )
    record_to = Path(config.recording.directory).expanduser() if config.recording.enabled else None
    if record_to is not None and table.kind == "litellm":
        from providers.litellm import recordable

        for spec in models:
            if not recordable(spec.id):
                logger.warning(
                    "record mode: [agents.%s] model %s is served by a LiteLLM backend whose traffic cannot be "
                    "recorded (only openai/, OpenAI-compatible vendors and anthropic/ are); its turns write no cassette",
                    name, spec.id,
                )
    recorder = None
    if record_to is not None:
        live = LiveProvider(table.kind, key or _local_server_key(table), table.base_url)
        recorder = SessionCassetteSource(
            cassette_for=lambda session, model: cassette_path_for(record_to, name, session), kind=table.kind, live=live,
            replay=False, redact=tuple(config.recording.redact),
        )
    source = SdkSource(table.kind, agent=name, api_key=key or _local_server_key(table), base_url=table.base_url, recorder=recorder)
    hint = f"the {variable} environment variable" if variable and not table.api_key else f"api_key in [agents.{name}]"
    return ProviderAgent(
        name,
        source,
        display_name=display,
        description=table.description or f"{_DISPLAY[table.kind]} models",
        models=models,
        settings=settings,
        unavailable=unavailable,
        key_hint=hint,
    )


def _replay_cassettes(name: str, table: AgentConfig, base: Path) -> dict[str, Path]:
    if not table.models:
        raise ConfigError(f"agents.{name}.models: a replay agent needs at least one model with a cassette, "
                          f'e.g. models = [{{ id = "recorded", cassette = "path/to/cassette.yaml" }}]')
    cassettes = {}
    for model in table.models:
        if not model.cassette:
            raise ConfigError(f"agents.{name}.models: model {model.id!r} of a replay agent needs a cassette path")
        path = Path(model.cassette).expanduser()
        path = path if path.is_absolute() else base / path
        if not path.is_file():
            raise ConfigError(f"agents.{name}.models: cassette = {model.cassette!r} does not exist ({path})")
        cassettes[model.id] = path
    return cassettes


def _cassette_of(name: str, cassettes: dict[str, Path]) -> Callable[[str, str], Path]:
    def cassette_for(session: str, model: str) -> Path:
        if model not in cassettes:
            known = ", ".join(sorted(cassettes)) or "none"
            raise RecordingEnded(f"No recording is configured for model {model!r} of {name} (recorded models: {known}).", provider="replay")
        return cassettes[model]
    return cassette_for


async def _no_wait(delay: float) -> None:
    """A replay's retries: the recorded retry-after or backoff is not waited for again."""


def _local_server_key(table: AgentConfig) -> str | None:
    # OpenAI-compatible local servers (Ollama, llama.cpp...) ignore the key, but the SDK wants one.
    return "not-needed" if table.kind == "openai-chat" and table.base_url else None
