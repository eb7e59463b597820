"""MCP servers in sessions, end to end: servers declared in the host config (stdio and streamable
HTTP) and in a workspace ``.mcp.json``, elicitation answered through the session's input request,
crash and restart, and no server process left after dispose or host stop."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from host.agents import ModelSpec, ProviderAgent, StaticSource, TurnSettings
from host.client import AhpClient
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.agents.harness import config_for, idle, ready_session, serving
from tests.tools.mcp.conftest import KITCHEN_SINK

PYTHON = sys.executable


def scripted_agent(provider: ScriptedProvider) -> ProviderAgent:
    return ProviderAgent("scripted", StaticSource(provider), display_name="Scripted", models=[ModelSpec("m1")],
                         settings=TurnSettings(title="first-words"))


def sink_server(*args: str) -> dict[str, Any]:
    """A ``[mcp.servers.<name>]`` table running the kitchen-sink fixture over stdio."""
    return {"command": PYTHON, "args": [str(KITCHEN_SINK), "stdio", *args]}


def mcp_config(tmp_path: Path, servers: dict[str, dict[str, Any]], **sections: Any) -> Any:
    return config_for(tmp_path, mcp={"servers": servers}, plugins={"workspace": True}, **sections)


def server_tools(client: AhpClient, session: str, server: str) -> dict[str, str]:
    """MCP tool name → the name the session publishes it under, for one server."""
    return {t["_meta"]["mcpTool"]: t["name"] for t in (client.state(session) or {}).get("serverTools") or []
            if (t.get("_meta") or {}).get("mcpServer") == server}


async def wait_tools(client: AhpClient, session: str, server: str, *wanted: str) -> dict[str, str]:
    await client.wait_for(lambda m, e: set(wanted) <= set(server_tools(client, session, server)), timeout=20)
    return server_tools(client, session, server)


def tool_calls(turn: dict[str, Any]) -> list[dict[str, Any]]:
    return [p["toolCall"] for p in turn.get("responseParts") or [] if p.get("kind") == "toolCall"]


def last_turn(client: AhpClient, session: str) -> dict[str, Any]:
    return client.state(session)["turns"][-1]


def answer(client: AhpClient, session: str, request_id: str, question: str, value: dict[str, Any]) -> int:
    return client.dispatch(session, {"type": "session/inputAnswerChanged", "requestId": request_id, "questionId": question,
                                     "answer": {"state": "submitted", "value": value}})


async def open_request(client: AhpClient, session: str) -> dict[str, Any]:
    await client.wait_for(lambda m, e: bool((client.state(session) or {}).get("inputRequests")), timeout=20)
    return client.state(session)["inputRequests"][0]


async def test_an_elicitation_is_answered_through_the_sessions_input_request(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([])
    config = mcp_config(tmp_path, {"sink": sink_server()}, tools={"enabled": True, "auto_approve": True})
    async with serving(config, frame_checker, [scripted_agent(provider)]) as (_, client):
        session = await ready_session(client)
        names = await wait_tools(client, session, "sink", "ask_name")
        provider.add(call_tools((names["ask_name"], {})))
        provider.add(reply("greeted"))
        client.send_message(session, "who am I?")
        request = await open_request(client, session)
        questions = {q["id"]: q for q in request["questions"]}
        for question, value in (("name", {"kind": "text", "value": "Ada"}), ("age", {"kind": "number", "value": 36}),
                                ("colour", {"kind": "selected", "value": "green"}),
                                ("subscribe", {"kind": "boolean", "value": True})):
            await client.outcome(answer(client, session, request["id"], question, value))
        client.dispatch(session, {"type": "session/inputCompleted", "requestId": request["id"], "response": "accept"})
        await idle(client, session)
        turn = last_turn(client, session)
    assert request["message"] == "Who are you?"
    assert (questions["name"]["kind"], questions["age"]["kind"], questions["subscribe"]["kind"]) == ("text", "integer", "boolean")
    assert [o["id"] for o in questions["colour"]["options"]] == ["red", "green", "blue"]
    [call] = tool_calls(turn)
    assert call["success"] is True
    assert "hello Ada (36, green, subscribe=True)" in json.dumps(call)
    assert "hello Ada (36, green, subscribe=True)" in provider.requests[1].messages[-1].results[0].text


async def test_a_declined_elicitation_reaches_the_server_and_the_tool_result_says_so(tmp_path: Path, frame_checker: FrameChecker) -> None:
    # No tools runtime here: the customization contributor itself turns the elicitation into the request.
    provider = ScriptedProvider([])
    async with serving(mcp_config(tmp_path, {"sink": sink_server()}), frame_checker, [scripted_agent(provider)]) as (_, client):
        session = await ready_session(client)
        names = await wait_tools(client, session, "sink", "ask_name")
        provider.add(call_tools((names["ask_name"], {})))
        provider.add(reply("fine"))
        client.send_message(session, "who am I?")
        request = await open_request(client, session)
        client.dispatch(session, {"type": "session/inputCompleted", "requestId": request["id"], "response": "decline"})
        await idle(client, session)
        turn = last_turn(client, session)
        left_open = client.state(session).get("inputRequests")
    [call] = tool_calls(turn)
    assert "no answer: decline" in json.dumps(call)
    assert "no answer: decline" in provider.requests[1].messages[-1].results[0].text
    assert not left_open
