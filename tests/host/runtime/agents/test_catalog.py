"""Agents from configuration: the default set, the example config, key handling, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from host.config import load_config
from host.errors import ConfigError
from host.runtime.agents import build_agents

REPO = Path(__file__).resolve().parents[4]


def providers(config) -> list[str]:
    return [agent.provider for agent in build_agents(config)]


def test_the_default_host_offers_offline_openai_anthropic_and_the_vendored_replays() -> None:
    config = load_config(None, environ={})
    assert providers(config) == ["offline", "openai", "anthropic", "replay"]
    replay = next(a for a in build_agents(config) if a.provider == "replay")
    ids = [m["id"] for m in replay.info()["models"]]
    assert "anthropic/messages-stream-thinking-multiturn" in ids
    assert not any("error" in i for i in ids)  # only recordings that succeed are offered


def test_without_the_offline_agent_the_first_default_is_a_provider() -> None:
    config = load_config(None, overrides={"sessions": {"offline_agent": False}}, environ={})
    assert providers(config)[0] == "openai"


def test_the_example_config_loads_and_every_agent_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    config = load_config(REPO / "config.example.toml", environ={"OPENAI_API_KEY": "sk-x"})
    agents = {agent.provider: agent for agent in build_agents(config)}
    assert list(agents) == ["openai", "anthropic", "replay", "offline"]
    assert agents["openai"].unavailable is None
    assert "ANTHROPIC_API_KEY" in agents["anthropic"].unavailable
    effort = agents["openai"].info()["models"][0]["configSchema"]["properties"]["reasoningEffort"]
    assert effort["default"] == "medium"


def test_keys_are_kept_only_for_variables_agents_read() -> None:
    config = load_config(None, environ={"ANTHROPIC_API_KEY": "sk-ant-distinctive", "HOME": "/root", "AWS_SECRET": "s"})
    assert config.environ == {"ANTHROPIC_API_KEY": "sk-ant-distinctive"}
    assert "sk-ant-distinctive" not in repr(config) and "environ" not in config.model_dump()


def test_config_errors_name_the_key_and_value(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[agents.x]\nkind = "openia"\napi_key = 5\n[agents.y]\nkind = "openai"\nretries = -1\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path, environ={})
    message = str(caught.value)
    assert "agents.x.kind = 'openia'" in message and "'openai'" in message
    assert "agents.x.api_key = <hidden>" in message
    assert "agents.y.retries = -1" in message


def test_a_replay_model_without_a_cassette_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "replay.toml"
    path.write_text('[agents.r]\nkind = "replay"\nmodels = [{id = "a", cassette = "missing.yaml"}]\n')
    with pytest.raises(ConfigError, match="missing.yaml"):
        build_agents(load_config(path, environ={}))


def test_a_replay_agent_without_models_is_a_config_error_naming_what_to_add(tmp_path: Path) -> None:
    path = tmp_path / "replay.toml"
    path.write_text('[agents.r]\nkind = "replay"\n')
    with pytest.raises(ConfigError, match=r"agents\.r\.models: .*at least one model") as caught:
        build_agents(load_config(path, environ={}))
    assert "cassette" in str(caught.value)
