"""Shared helpers: a host with the tools runtime on, a scripted agent, and readers of tool calls."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from client import AhpClient
from host.runtime.agents import ModelSpec, ProviderAgent, StaticSource, TurnSettings
from providers import ScriptedProvider, ToolResultsMessage
from tests.host.runtime.agents.harness import config_for


def tools_config(tmp_path: Path, **tools: Any):
    return config_for(tmp_path, tools={"enabled": True, **tools})


def scripted(provider: ScriptedProvider) -> ProviderAgent:
    return ProviderAgent("scripted", StaticSource(provider), display_name="Scripted", models=[ModelSpec("m1")],
                         settings=TurnSettings(title="first-words"))


def calls(client: AhpClient, session: str) -> list[dict[str, Any]]:
    state = client.state(session) or {}
    turn = state.get("activeTurn") or ((state.get("turns") or [{}])[-1])
    return [p["toolCall"] for p in turn.get("responseParts") or [] if p.get("kind") == "toolCall"]


def pending(client: AhpClient, session: str, status: str = "pending-confirmation") -> dict[str, Any] | None:
    active = (client.state(session) or {}).get("activeTurn")
    if not active:
        return None
    for call in calls(client, session):
        if call.get("status") == status:
            return {**call, "turnId": active["id"]}
    return None


async def wait_pending(client: AhpClient, session: str, status: str = "pending-confirmation") -> dict[str, Any]:
    await client.wait_for(lambda m, e: pending(client, session, status) is not None)
    return pending(client, session, status)  # type: ignore[return-value]  # waited for above


def tool_results(provider: ScriptedProvider, request_index: int) -> list[Any]:
    [results] = [m for m in provider.requests[request_index].messages if isinstance(m, ToolResultsMessage)][-1:]
    return list(results.results)


async def session_with(client: AhpClient, **params: Any) -> str:
    """``createSession`` with raw params (e.g. ``config``, ``activeClient``), subscribed and ready."""
    channel = f"ahp-session:/{uuid.uuid4()}"
    await client.request("createSession", {"channel": channel, **params})
    await client.subscribe(channel)
    await client.wait_for(lambda m, e: (client.state(channel) or {}).get("lifecycle") == "ready")
    return channel
