"""resolveSessionConfig and sessionConfigCompletions over a real WebSocket: the schema follows the
chosen model (reasoning effort vs thinking), values are checked and defaulted, the working
directory completes from the allowed roots, and createSession takes the resolved values."""

from __future__ import annotations

from pathlib import Path

import pytest

from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS, AhpClient
from client.errors import AhpError
from host.runtime.agents import ModelSpec, ProviderAgent, StaticSource, TurnSettings
from providers import ScriptedProvider
from tests.host.runtime.agents.harness import config_for, serving

ROOT = "ahp-root://"


def agent() -> ProviderAgent:
    models = [ModelSpec("gpt-x", name="GPT X", reasoning="effort", default_level="low"),
              ModelSpec("claude-y", name="Claude Y", reasoning="thinking"),
              ModelSpec("plain")]
    return ProviderAgent("scripted", StaticSource(ScriptedProvider([])), display_name="Scripted", models=models,
                         settings=TurnSettings(title="first-words"))


@pytest.fixture
async def host(tmp_path: Path, frame_checker):
    (tmp_path / "projects" / "alpha").mkdir(parents=True)
    (tmp_path / "projects" / "beta").mkdir()
    (tmp_path / "projects" / "alpine.txt").write_text("not a directory")
    config = config_for(tmp_path, tools={"enabled": True}, sessions={"allowed_directories": [str(tmp_path / "projects")]})
    async with serving(config, frame_checker, agents=[agent()], versions=PROTOCOL_VERSIONS) as (running, client):
        yield client, tmp_path / "projects"


async def resolve(client: AhpClient, **params):
    return await client.request("resolveSessionConfig", {"channel": ROOT, **params})


async def complete(client: AhpClient, prop: str, query: str = "", **params):
    result = await client.request("sessionConfigCompletions", {"channel": ROOT, "property": prop, "query": query, **params})
    return result["items"]


async def test_the_schema_follows_the_chosen_model(host) -> None:
    client, projects = host
    first = await resolve(client, provider="scripted")
    properties = first["schema"]["properties"]
    assert properties["model"]["enum"] == ["gpt-x", "claude-y", "plain"]
    assert properties["model"]["enumLabels"] == ["GPT X", "Claude Y", "plain"]
    assert properties["reasoningEffort"]["enum"] == ["minimal", "low", "medium", "high"]
    assert "thinking" not in properties
    assert properties["workingDirectory"]["enumDynamic"] is True
    assert properties["autoApprove"]["sessionMutable"] is True
    assert first["values"]["model"] == "gpt-x"
    assert first["values"]["reasoningEffort"] == "low"  # the model's default level
    assert first["values"]["autoApprove"] is False

    second = await resolve(client, provider="scripted", config={"model": "claude-y", "autoApprove": True})
    assert "reasoningEffort" not in second["schema"]["properties"]
    assert second["schema"]["properties"]["thinking"]["enum"] == ["off", "low", "medium", "high"]
    assert second["values"] == {**second["values"], "model": "claude-y", "thinking": "off", "autoApprove": True}

    plain = await resolve(client, provider="scripted", config={"model": "plain"}, workingDirectory=(projects / "alpha").as_uri())
    assert set(plain["schema"]["properties"]) == {"model", "workingDirectory", "autoApprove", "useRememberedApprovals", "permissionMode"}
    assert plain["values"]["workingDirectory"] == (projects / "alpha").as_uri()


@pytest.mark.parametrize("params, words", [
    ({"provider": "nope"}, ["nope", "scripted"]),
    ({"config": {"model": "gpt-9"}}, ["gpt-9", "gpt-x"]),
    ({"config": {"reasoningEffort": "extreme"}}, ["extreme", "minimal"]),
    ({"config": {"autoApprove": "yes"}}, ["true or false"]),
    ({"config": {"colour": "red"}}, ["colour", "model"]),
    ({"workingDirectory": "file:///etc"}, ["/etc", "allowed_directories"]),
])
async def test_bad_values_are_refused_saying_what_is_allowed(host, params, words) -> None:
    client, _ = host
    with pytest.raises(AhpError) as refused:
        await resolve(client, **{"provider": "scripted", **params})
    assert refused.value.code in (-32602, -32002)
    for word in words:
        assert word in refused.value.message
    assert await client.ping() is None


async def test_enum_completions_filter_by_value_or_label(host) -> None:
    client, _ = host
    assert [item["value"] for item in await complete(client, "model", "claude", provider="scripted")] == ["claude-y"]
    assert [item["value"] for item in await complete(client, "model", "", provider="scripted")] == ["gpt-x", "claude-y", "plain"]
    efforts = await complete(client, "reasoningEffort", "HI", provider="scripted")
    assert efforts == [{"value": "high", "label": "High"}]
    thinking = await complete(client, "thinking", "", provider="scripted", config={"model": "claude-y"})
    assert [item["value"] for item in thinking] == ["off", "low", "medium", "high"]
    with pytest.raises(AhpError) as unknown:
        await complete(client, "thinking", "", provider="scripted")  # gpt-x has no thinking levels
    assert unknown.value.code == -32602 and "reasoningEffort" in unknown.value.message


async def test_working_directory_completes_directories_inside_the_allowed_roots(host) -> None:
    client, projects = host
    roots = await complete(client, "workingDirectory", "", provider="scripted")
    assert {"value": projects.resolve().as_uri(), "label": str(projects.resolve())} in roots
    found = await complete(client, "workingDirectory", str(projects) + "/al", provider="scripted")
    assert [item["label"] for item in found] == [str(projects.resolve() / "alpha")]  # alpine.txt is a file
    listed = await complete(client, "workingDirectory", projects.as_uri() + "/", provider="scripted")
    assert [Path(item["label"]).name for item in listed] == ["alpha", "beta"]
    assert await complete(client, "workingDirectory", "/et", provider="scripted") == []  # outside the roots


async def test_create_session_takes_the_resolved_values(host) -> None:
    client, projects = host
    resolved = await resolve(client, provider="scripted", config={"model": "gpt-x", "reasoningEffort": "high", "autoApprove": True},
                             workingDirectory=(projects / "beta").as_uri())
    session = "scripted:/configured"
    await client.request("createSession", {"channel": session, "provider": "scripted", "config": resolved["values"]})
    await client.subscribe(session)
    await client.subscribe(default_chat_uri(session))
    state = client.state(session)
    # The model for the session's first message is the default chat's draft (the model's place for it).
    assert client.state(default_chat_uri(session))["draft"]["model"] == {"id": "gpt-x", "config": {"reasoningEffort": "high"}}
    assert state["workingDirectories"] == [(projects / "beta").resolve().as_uri()]
    assert state["config"]["values"]["autoApprove"] is True
    assert state["config"]["schema"]["properties"]["reasoningEffort"]["default"] == "low"
    with pytest.raises(AhpError) as stale:
        await client.request("createSession", {"channel": "scripted:/stale", "provider": "scripted",
                                               "config": {**resolved["values"], "reasoningEffort": "extreme"}})
    assert stale.value.code == -32602
