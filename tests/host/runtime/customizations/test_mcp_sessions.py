"""MCP servers in sessions, end to end: servers declared in the host config (stdio and streamable
HTTP) and in a workspace ``.mcp.json``, elicitation answered through the session's input request,
crash and restart, and no server process left after dispose or host stop."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ahp.state import default_chat_uri
from client import AhpClient
from host.runtime.agents import ModelSpec, ProviderAgent, StaticSource, TurnSettings
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import TOKEN, FrameChecker
from tests.host.runtime.agents.harness import config_for, idle, ready_session, serving
from tests.tools.mcp.conftest import KITCHEN_SINK, NEVER, SILENT, eventually, let_start, process_gone, served_over_http

PYTHON = sys.executable


def scripted_agent(provider: ScriptedProvider) -> ProviderAgent:
    return ProviderAgent("scripted", StaticSource(provider), display_name="Scripted", models=[ModelSpec("m1")],
                         settings=TurnSettings(title="first-words"))


def sink_server(*args: str) -> dict[str, Any]:
    """A ``[mcp.servers.<name>]`` table running the kitchen-sink fixture over stdio."""
    return {"command": PYTHON, "args": [str(KITCHEN_SINK), "stdio", *args]}


def mcp_config(tmp_path: Path, servers: dict[str, dict[str, Any]], start: str = "session", **sections: Any) -> Any:
    """Servers start with the session by default here: most tests wait for their tools first."""
    return config_for(tmp_path, mcp={"servers": servers, "start": start}, plugins={"workspace": True}, **sections)


def server_tools(client: AhpClient, session: str, server: str) -> dict[str, str]:
    """MCP tool name → the name the session publishes it under, for one server."""
    return {t["_meta"]["mcpTool"]: t["name"] for t in (client.state(session) or {}).get("serverTools") or []
            if (t.get("_meta") or {}).get("mcpServer") == server}


async def wait_tools(client: AhpClient, session: str, server: str, *wanted: str) -> dict[str, str]:
    await client.wait_for(lambda m, e: set(wanted) <= set(server_tools(client, session, server)), timeout=60)
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


@pytest.fixture
async def http_sink() -> AsyncIterator[str]:
    """The kitchen-sink server over streamable HTTP, started by the test on 127.0.0.1 port 0."""
    async with served_over_http(KITCHEN_SINK, "http") as url:
        yield url


def started_pids(marker: Path) -> list[int]:
    """Pids the fixture server wrote at each start (``--marker``)."""
    return [int(line) for line in marker.read_text().split()] if marker.exists() else []


async def test_config_workspace_and_http_servers_are_listed_and_called_in_a_session(
        tmp_path: Path, http_sink: str, frame_checker: FrameChecker) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"local": {
        "command": PYTHON, "args": [str(KITCHEN_SINK), "stdio"], "env": {"WHERE": "${workspaceFolder}"}}}}))
    servers = {"sink": sink_server(), "web": {"type": "http", "url": http_sink}}
    provider = ScriptedProvider([])
    config = mcp_config(tmp_path, servers, sessions={"default_directory": str(workspace)})
    async with serving(config, frame_checker, [scripted_agent(provider)]) as (_, client):
        session = await ready_session(client)
        sink = await wait_tools(client, session, "sink", "echo")
        local = await wait_tools(client, session, "local", "env_var")
        web = await wait_tools(client, session, "web", "echo")
        provider.add(call_tools((sink["echo"], {"text": "from config"}), (local["env_var"], {"name": "WHERE"}),
                                (web["echo"], {"text": "over http"})))
        provider.add(reply("done"))
        client.send_message(session, "use them all")
        await idle(client, session)
        turn = last_turn(client, session)
        published = client.state(session)["serverTools"]
    offered = {tool.name for tool in provider.requests[0].tools}
    assert {sink["echo"], local["env_var"], web["echo"]} <= offered
    assert len({sink["echo"], local["echo"], web["echo"]}) == 3  # the same MCP tool, three distinct names
    assert all(t["name"] in offered for t in published)
    results = {c["toolName"]: c for c in tool_calls(turn)}
    assert all(c["success"] for c in results.values())
    assert "from config" in json.dumps(results[sink["echo"]])
    assert str(workspace) in json.dumps(results[local["env_var"]])
    assert "over http" in json.dumps(results[web["echo"]])


async def test_a_crashed_server_fails_the_call_in_flight_and_the_next_call_works(tmp_path: Path, frame_checker: FrameChecker) -> None:
    marker = tmp_path / "starts.txt"
    provider = ScriptedProvider([])
    config = mcp_config(tmp_path, {"sink": sink_server("--marker", str(marker))})
    async with serving(config, frame_checker, [scripted_agent(provider)]) as (_, client):
        session = await ready_session(client)
        names = await wait_tools(client, session, "sink", "die", "echo")
        provider.add(call_tools((names["die"], {})))
        provider.add(reply("it crashed"))
        provider.add(call_tools((names["echo"], {"text": "still here"})))
        provider.add(reply("fine"))
        client.send_message(session, "crash it")
        await idle(client, session)
        [crashed] = tool_calls(last_turn(client, session))
        client.send_message(session, "try again")
        await idle(client, session)
        [after] = tool_calls(last_turn(client, session))
        first, second = started_pids(marker)[:2]
    assert crashed["success"] is False
    assert crashed["error"]["message"].startswith("The MCP server 'sink' exited with code 3 while the call was running")
    assert "not retried" in crashed["error"]["message"]
    assert "exited with code 3" in provider.requests[1].messages[-1].results[0].text
    assert after["success"] is True and "still here" in json.dumps(after)
    assert first != second and process_gone(first)


async def test_no_server_process_survives_dispose_or_host_stop(tmp_path: Path, frame_checker: FrameChecker) -> None:
    marker = tmp_path / "starts.txt"
    provider = ScriptedProvider([])
    config = mcp_config(tmp_path, {"sink": sink_server("--marker", str(marker))})
    async with serving(config, frame_checker, [scripted_agent(provider)]) as (_, client):
        disposed = await ready_session(client)
        names = await wait_tools(client, disposed, "sink", "spawn_sleeper")
        provider.add(call_tools((names["spawn_sleeper"], {})))
        provider.add(reply("spawned"))
        client.send_message(disposed, "spawn")
        await idle(client, disposed)
        [spawned] = tool_calls(last_turn(client, disposed))
        grandchild = int(spawned["content"][0]["text"])
        [server] = started_pids(marker)
        await client.dispose_session(disposed)
        assert await eventually(lambda: process_gone(server) and process_gone(grandchild))
        kept = await ready_session(client)
        await wait_tools(client, kept, "sink", "echo")
        [_, survivor] = started_pids(marker)
        assert not process_gone(survivor)
    assert process_gone(survivor)  # host stop returns only once its servers are gone


async def test_a_config_or_workspace_server_that_fails_to_start_is_visible_in_the_session_and_logged_once(
    tmp_path: Path, frame_checker: FrameChecker, caplog: pytest.LogCaptureFixture
) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"broken": {"command": PYTHON, "args": [str(KITCHEN_SINK), "stdio", "--die-at-start"]}}}))
    config = mcp_config(tmp_path, {"sink": sink_server()}, sessions={"default_directory": str(workspace)})
    provider = ScriptedProvider([reply("hi")])
    async with serving(config, frame_checker, [scripted_agent(provider)]) as (_, client):
        session = await ready_session(client)

        def container() -> dict[str, Any] | None:
            return next((c for c in client.state(session).get("customizations") or [] if c.get("id") == "mcp-servers"), None)

        def load() -> dict[str, Any]:
            return (container() or {}).get("load") or {}

        # Restarting after each crash first (the message says when it tries again), then failed.
        await client.wait_for(lambda m, e: "restarting in" in load().get("message", ""), timeout=60)
        restarting = load()
        await client.wait_for(lambda m, e: "MCP server 'broken' failed" in load().get("message", ""), timeout=60)
        listed = container()
    assert restarting["kind"] == "degraded" and "(attempt 1 of 5)" in restarting["message"]
    assert sorted(child["name"] for child in listed["children"]) == ["broken", "sink"]
    assert all(child["type"] == "mcpServer" for child in listed["children"])
    message = listed["load"]["message"]
    assert "MCP server 'broken' failed" in message
    assert "refusing to start" in message  # its stderr says why
    assert "'sink'" not in message
    logged = [r.getMessage() for r in caplog.records if "MCP server 'broken' failed" in r.getMessage()]
    assert len(logged) == 1


async def test_servers_start_with_the_first_turn_stop_when_idle_and_start_again(tmp_path: Path, frame_checker: FrameChecker) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    config = mcp_config(tmp_path, {"sink": sink_server()}, start="first-turn",
                        sessions={"default_directory": str(workspace)})
    config.mcp.idle_stop = 0.5
    config.mcp.start_wait = NEVER  # each turn here waits for the server's start to end, however long that takes
    provider = ScriptedProvider([reply("one"), reply("two")])
    async with serving(config, frame_checker, [scripted_agent(provider)]) as (running, client):
        session = await ready_session(client)
        # The session lists its servers once it has decided whether to start them: an eager start
        # would have made their runtime in the same step.
        await client.wait_for(lambda m, e: [c["name"] for c in mcp_container(client, session).get("children") or []] == ["sink"])
        assert server_tools(client, session, "sink") == {}
        assert running.host.customizations.runtime(running.host.session_uri(session)).mcp is None  # no process spawned yet
        await run_turn_and_idle(client, session, "first")
        first_tools = {t.name for t in provider.requests[0].tools}
        assert any(name.startswith("mcp__sink__") for name in first_tools)
        # Idle for longer than idle_stop: the servers stop and their tools are withdrawn.
        await client.wait_for(lambda m, e: server_tools(client, session, "sink") == {}, timeout=60)
        assert running.host.customizations.runtime(running.host.session_uri(session)).mcp is None
        await run_turn_and_idle(client, session, "second")
        assert any(t.name.startswith("mcp__sink__") for t in provider.requests[1].tools)


async def run_turn_and_idle(client: AhpClient, session: str, text: str) -> None:
    turn_id = client.send_message(session, text)
    await client.wait_for(lambda m, e: any(t["id"] == turn_id for t in client.state(session).get("turns") or []), timeout=60)
    await idle(client, session)


def silent_server(marker: Path) -> dict[str, Any]:
    """A ``.mcp.json`` entry for a server that never answers, not even ``initialize``."""
    return {"command": PYTHON, "args": [str(SILENT), "--marker", str(marker)]}


def mcp_container(client: AhpClient, session: str) -> dict[str, Any]:
    return next((c for c in client.state(session).get("customizations") or [] if c.get("id") == "mcp-servers"), {})


async def test_a_server_that_never_answers_neither_holds_up_a_turn_nor_the_host_stop(
        tmp_path: Path, frame_checker: FrameChecker, caplog: pytest.LogCaptureFixture) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    marker = tmp_path / "silent.pids"
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"mute": silent_server(marker)}}))
    config = mcp_config(tmp_path, {"sink": sink_server()}, start="first-turn", sessions={"default_directory": str(workspace)})
    provider = ScriptedProvider([reply("without it"), reply("still without it")])
    still_starting = {"kind": "degraded", "message": "MCP server 'mute' is still starting; its tools are added once it is up."}
    async with serving(config, frame_checker, [scripted_agent(provider)]) as (running, client):
        session = await ready_session(client)
        await run_turn_and_idle(client, session, "hello")  # the servers are launched by this turn
        # 'sink' may not be up within [mcp] start_wait on a busy machine: once it is, only 'mute' is left.
        await client.wait_for(lambda m, e: mcp_container(client, session).get("load") == still_starting, timeout=60)
        await wait_tools(client, session, "sink", "echo")
        await run_turn_and_idle(client, session, "again")
        [pid] = [int(line) for line in marker.read_text().split()]
        assert not process_gone(pid)
        await client.close()
        await running.stop()  # (stopping it again on the way out is a no-op)
    # Before: the first turn waited 30 s for it, and stopping the host took 14 s more.
    # Its start times out after 30 s (then it is restarting): still starting, the turn was let go by
    # [mcp] start_wait (3 s from the servers' launch), and it said so.
    first, second = provider.requests
    assert "- MCP server 'mute' is still starting." in (first.system or "")
    assert not any(tool.name.startswith("mcp__mute__") for tool in first.tools)
    assert any(tool.name.startswith("mcp__sink__") for tool in second.tools)
    assert not any(tool.name.startswith("mcp__mute__") for tool in second.tools)
    assert "- MCP server 'mute' is still starting." in (second.system or "")
    # The host's stop signalled it rather than waiting for its start to end (or giving up on it).
    assert process_gone(pid)
    assert not [r for r in caplog.records if "did not shut down in time" in r.getMessage()]


async def test_a_server_that_crashes_at_start_holds_up_neither_the_first_turn_nor_new_sessions(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    gate = tmp_path / "gate"  # each start of the server waits for a ticket from the test
    gate.mkdir()
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"broken": {
        "command": PYTHON, "args": [str(KITCHEN_SINK), "stdio", "--gate", str(gate), "--die-at-start"]}}}))
    config = mcp_config(tmp_path, {}, start="first-turn", sessions={"default_directory": str(workspace)})
    config.mcp.start_wait = NEVER  # a turn that waited for a start would wait as long as the start takes
    provider = ScriptedProvider([reply("one"), reply("two"), reply("three")])
    async with serving(config, frame_checker, [scripted_agent(provider)]) as (_, client):
        let_start(gate)  # its first start goes on (and crashes); its restart waits for the next ticket
        await run_turn_and_idle(client, await ready_session(client), "first session")
        for text in ("second session", "third session"):
            session = await ready_session(client)
            await run_turn_and_idle(client, session, text)  # its start has no ticket: not waited for at all
        let_start(gate, 18)  # every start and restart of the three sessions can go on now
        # The latest session went ahead before its server even started; it shows once it has crashed.
        await client.wait_for(lambda m, e: "exited with code 7" in mcp_container(client, session)["load"].get("message", ""),
                              timeout=60)
        shown = mcp_container(client, session)["load"]
    # Before: every new session's first turn waited 15-20 s while the server was restarted 5 times.
    told = provider.requests[0].system or ""  # the first session's turn waited for the first attempt only
    assert "- MCP server 'broken' exited with code 7" in told and "restarting in 0.5 s (attempt 1 of 5)" in told, told[:400]
    for later in provider.requests[1:]:  # it crashed before in this host: the next sessions' turns did not wait
        assert "- MCP server 'broken' is still starting." in (later.system or ""), (later.system or "")[:400]
    assert shown["kind"] == "degraded" and "restarting in" in shown["message"]


async def test_a_tool_call_that_never_returns_times_out_with_an_error_the_model_sees(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([])
    config = mcp_config(tmp_path, {"sink": sink_server()}, tools={"enabled": True, "auto_approve": True})
    config.mcp.call_timeout = 1.0
    async with serving(config, frame_checker, [scripted_agent(provider)]) as (_, client):
        session = await ready_session(client)
        names = await wait_tools(client, session, "sink", "hang")
        provider.add(call_tools((names["hang"], {})))
        provider.add(reply("it timed out"))
        await run_turn_and_idle(client, session, "hang")  # the tool never returns: only the timeout ends it
        [call] = tool_calls(last_turn(client, session))
    assert call["success"] is False and call["error"]["code"] == "timeout"
    assert call["error"]["message"].startswith("The MCP server 'sink' did not answer within 1 s, so the call was cancelled.")
    assert "did not answer within 1 s" in provider.requests[1].messages[-1].results[0].text


async def test_the_servers_of_a_session_nobody_is_connected_to_stop_soon_after_its_turn(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    marker = tmp_path / "starts.txt"
    config = mcp_config(tmp_path, {"sink": sink_server("--marker", str(marker))}, start="first-turn")
    config.mcp.unwatched_stop = 0.5  # idle_stop stays at its 15 minutes
    provider = ScriptedProvider([reply("done")])
    async with serving(config, frame_checker, [scripted_agent(provider)]) as (running, _):
        one_shot = await AhpClient.connect(running.url.split("?")[0], token=TOKEN)  # like `agent-host chat URL -p`
        await one_shot.initialize(subscriptions=["ahp-root://"])  # in the version it speaks (1.0.0)
        session = await ready_session(one_shot)
        chat = default_chat_uri(session)
        turn = one_shot.send_message(session, "do it")
        await one_shot.wait_for(lambda m, e: [t["id"] for t in (one_shot.state(chat) or {}).get("turns") or []] == [turn]
                                and not (one_shot.state(chat) or {}).get("activeTurn"), timeout=60)
        await wait_tools(one_shot, session, "sink", "echo")  # it is up (on a busy machine, maybe only after the turn)
        [server] = started_pids(marker)
        assert not process_gone(server)
        await one_shot.close()
        gone = await eventually(lambda: process_gone(server), timeout=60)
        still_there = running.host.session_uri(session) in running.host.store
    assert gone and still_there  # the session is kept; its next turn starts the servers again


async def test_a_client_backgrounds_a_server_start_that_holds_up_a_turn(tmp_path: Path, frame_checker: FrameChecker) -> None:
    from tests.host.transport.dialects._clients import Client

    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"mute": silent_server(tmp_path / "silent.pids")}}))
    config = mcp_config(tmp_path, {}, start="first-turn", sessions={"default_directory": str(workspace)})
    config.mcp.start_wait = NEVER  # the turn waits for the server's start, however long it takes
    provider = ScriptedProvider([reply("went on without it")])
    async with serving(config, frame_checker, [scripted_agent(provider)]) as (running, client):
        shown = await ready_session(client)
        session = running.host.session_uri(shown)
        store = running.host.store
        peer = await Client.open(running)
        try:
            await peer.join("client-10", "1.0.0", ("ahp-root://", session))

            def mute() -> dict[str, Any]:
                container = next((c for c in store.state(session).get("customizations") or [] if c.get("id") == "mcp-servers"), {})
                return next((child for child in container.get("children") or [] if child.get("name") == "mute"), {})

            turn_id = client.send_message(shown, "hello")
            # The turn waits for the server: its entry says its start holds the turn back.
            await peer.until(lambda: mute().get("state") == {"kind": "starting", "blocking": True}, timeout=30)
            assert provider.requests == []
            await peer.dispatch(session, {"type": "session/mcpServerBackgroundRequested", "id": mute()["id"]})
            # (Well within the silent server's 30 s start timeout, after which the turn would go on anyway.)
            await client.wait_for(lambda m, e: any(t["id"] == turn_id for t in client.state(shown).get("turns") or []), timeout=15)
            [request] = provider.requests
            assert not any(tool.name.startswith("mcp__mute__") for tool in request.tools)
            assert "- MCP server 'mute' is still starting." in (request.system or "")
            # It keeps starting, and nothing waits for it now.
            await peer.until(lambda: mute().get("state") == {"kind": "starting"}, timeout=10)
            assert any(a["action"]["type"] == "session/mcpServerStateChanged" and a["action"]["state"].get("blocking") is True
                       for a in peer.actions())
        finally:
            await peer.close()
