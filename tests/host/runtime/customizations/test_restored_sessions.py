"""Sessions recovered when the host starts again on the same data directory keep their
customizations (enabled flags, load states) and get their MCP servers back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from client import AhpClient
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import config_for, idle, ready_session, serving
from tests.host.runtime.customizations.test_mcp_sessions import (
    last_turn,
    scripted_agent,
    server_tools,
    sink_server,
    tool_calls,
    wait_tools,
)
from tests.host.runtime.customizations.test_service import settled


def config(tmp_path: Path, plugin_dir: Path, workspace: Path, servers: dict[str, Any]) -> Any:
    return config_for(tmp_path, plugins={"directories": [str(plugin_dir)]}, mcp={"servers": servers, "start": "session"},
                      sessions={"default_directory": str(workspace)})


def flags(client: AhpClient, session: str) -> dict[str, tuple[bool, dict]]:
    """Container name → (enabled, load state)."""
    return {c["name"]: (c["enabled"], c["load"]) for c in (client.state(session) or {}).get("customizations") or []}


async def test_a_restored_session_keeps_its_customizations_and_its_servers_start_again(
        tmp_path: Path, plugin_dir: Path, workspace: Path, hook_log: Path, frame_checker: FrameChecker) -> None:
    servers = {"sink": sink_server()}
    async with serving(config(tmp_path, plugin_dir, workspace, servers), frame_checker, [scripted_agent(ScriptedProvider([]))]) as (_, client):
        session = await ready_session(client)
        degraded = (await settled(client, session))["sample-degraded"]
        await wait_tools(client, session, "sink", "echo")
        client.dispatch(session, {"type": "session/customizationToggled", "id": degraded["id"], "enabled": False})
        # Disabled, its failed 'ghost' server no longer counts against it.
        await client.wait_for(lambda m, e: flags(client, session)["sample-degraded"][0] is False
                              and "ghost" not in json.dumps(flags(client, session)["sample-degraded"]), timeout=20)
        before = flags(client, session)

    provider = ScriptedProvider([])
    async with serving(config(tmp_path, plugin_dir, workspace, servers), frame_checker, [scripted_agent(provider)]) as (_, client):
        await client.subscribe(session)
        names = await wait_tools(client, session, "sink", "echo")
        await wait_tools(client, session, "tiny", "echo")
        await client.wait_for(lambda m, e: all(load["kind"] != "loading" for _, load in flags(client, session).values()), timeout=20)
        after = flags(client, session)
        provider.add(call_tools((names["echo"], {"text": "back again"})))
        provider.add(reply("ok"))
        client.send_message(session, "are you there?")
        await idle(client, session)
        [call] = tool_calls(last_turn(client, session))
    assert after == before
    assert after["sample-degraded"][0] is False and after["sample-toolkit"] == (True, {"kind": "loaded"})
    assert after["sample-broken"][1]["kind"] == "error"
    assert call["success"] is True and "back again" in json.dumps(call)


async def test_a_server_removed_from_the_config_leaves_no_tools_in_a_restored_session(
        tmp_path: Path, plugin_dir: Path, workspace: Path, hook_log: Path, frame_checker: FrameChecker) -> None:
    async with serving(config(tmp_path, plugin_dir, workspace, {"sink": sink_server()}), frame_checker,
                       [scripted_agent(ScriptedProvider([]))]) as (_, client):
        session = await ready_session(client)
        await wait_tools(client, session, "sink", "echo")
        await settled(client, session)

    provider = ScriptedProvider([reply("hi")])
    async with serving(config(tmp_path, plugin_dir, workspace, {}), frame_checker, [scripted_agent(provider)]) as (_, client):
        await client.subscribe(session)
        await wait_tools(client, session, "tiny", "echo")
        await client.wait_for(lambda m, e: not server_tools(client, session, "sink"), timeout=20)
        client.send_message(session, "hello")
        await idle(client, session)
    assert not any("sink" in tool.name for tool in provider.requests[0].tools)
