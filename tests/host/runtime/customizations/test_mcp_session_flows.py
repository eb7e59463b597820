"""MCP tool flows in a session, end to end with the tools runtime on: a tool that is not read-only
waits for the user's confirmation while a ``readOnlyHint`` tool runs without a prompt; progress
notifications update the running tool call; ``tools/list_changed`` reaches ``serverTools`` and the
model's next call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from client import AhpClient
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import Recorder, idle, ready_session, serving
from tests.host.runtime.customizations.test_mcp_sessions import (
    last_turn,
    mcp_config,
    scripted_agent,
    sink_server,
    tool_calls,
    wait_tools,
)


def pending_call(client: AhpClient, session: str) -> dict[str, Any] | None:
    """The active turn's call waiting for the user, with its turn id, or None."""
    active = (client.state(session) or {}).get("activeTurn")
    if not active:
        return None
    for call in tool_calls(active):
        if call.get("status") == "pending-confirmation":
            return {**call, "turnId": active["id"]}
    return None


def call_actions(recorder: Recorder, tool_call_id: str) -> list[dict[str, Any]]:
    """The actions the client received about one tool call, in order."""
    return [a for a in recorder.drain() if a.get("toolCallId") == tool_call_id]


async def test_a_tool_that_is_not_read_only_waits_for_approval_and_a_read_only_one_does_not(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([])
    config = mcp_config(tmp_path, {"sink": sink_server()}, tools={"enabled": True})
    async with serving(config, frame_checker, [scripted_agent(provider)]) as (_, client):
        session = await ready_session(client)
        names = await wait_tools(client, session, "sink", "echo", "slow")
        provider.add(call_tools((names["echo"], {"text": "looked"}), (names["slow"], {"steps": 1})))
        provider.add(reply("both ran"))
        client.send_message(session, "use the sink")
        await client.wait_for(lambda m, e: pending_call(client, session) is not None, timeout=20)
        asked = pending_call(client, session)
        assert asked is not None
        # While the user has not answered, the slow tool has not run: the model has not been called again.
        assert len(provider.requests) == 1
        client.dispatch(session, {"type": "session/toolCallConfirmed", "turnId": asked["turnId"], "toolCallId": asked["toolCallId"],
                                  "approved": True, "confirmed": "user-action", "selectedOptionId": "allow-once"})
        await idle(client, session)
        calls = {c["toolName"]: c for c in tool_calls(last_turn(client, session))}
    assert asked["toolName"] == names["slow"]
    assert [o["id"] for o in asked["options"]][0] == "allow-once"
    assert {o["kind"] for o in asked["options"]} == {"approve", "deny"}
    echo, slow = calls[names["echo"]], calls[names["slow"]]
    assert (echo["status"], echo["confirmed"], echo["success"]) == ("completed", "not-needed", True)
    assert "options" not in echo or not echo["options"]
    assert (slow["status"], slow["confirmed"], slow["success"]) == ("completed", "user-action", True)
    assert slow["selectedOption"]["id"] == "allow-once"
    results = [r.text for r in provider.requests[1].messages[-1].results]
    assert any("looked" in text for text in results)
    assert any("done after 1 steps" in text for text in results)


async def test_progress_notifications_update_the_running_tool_call(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([])
    config = mcp_config(tmp_path, {"sink": sink_server()}, tools={"enabled": True, "auto_approve": True})
    async with serving(config, frame_checker, [scripted_agent(provider)]) as (_, client):
        session = await ready_session(client)
        names = await wait_tools(client, session, "sink", "slow")
        recorder = Recorder(client, session)
        provider.add(call_tools((names["slow"], {"steps": 3})))
        provider.add(reply("finished"))
        client.send_message(session, "go slowly")
        await idle(client, session)
        [call] = tool_calls(last_turn(client, session))
        seen = call_actions(recorder, call["toolCallId"])
    kinds = [a["type"] for a in seen]
    assert "session/toolCallContentChanged" in kinds
    assert kinds.index("session/toolCallContentChanged") < kinds.index("session/toolCallComplete")
    progress = [a for a in seen if a["type"] == "session/toolCallContentChanged"]
    assert all(a["turnId"] == last_turn(client, session)["id"] for a in progress)
    assert "step 1 of 3" in json.dumps(progress[0]["content"])
    # The completion replaces the progress text with the result.
    assert (call["status"], call["success"]) == ("completed", True)
    assert "done after 3 steps" in json.dumps(call["content"])
    assert "done after 3 steps" in provider.requests[1].messages[-1].results[0].text


async def test_a_servers_changed_tool_list_reaches_server_tools_and_the_next_model_call(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([])
    config = mcp_config(tmp_path, {"sink": sink_server()}, tools={"enabled": True, "auto_approve": True})
    async with serving(config, frame_checker, [scripted_agent(provider)]) as (_, client):
        session = await ready_session(client)
        names = await wait_tools(client, session, "sink", "grow")
        assert "extra" not in names
        recorder = Recorder(client, session)
        provider.add(call_tools((names["grow"], {})))
        provider.add(reply("grown"))
        client.send_message(session, "grow")
        await idle(client, session)
        grown = await wait_tools(client, session, "sink", "extra")
        announced = [a for a in recorder.drain() if a["type"] == "session/serverToolsChanged"]
        provider.add(call_tools((grown["extra"], {})))
        provider.add(reply("used it"))
        client.send_message(session, "use the new tool")
        await idle(client, session)
        [extra_call] = tool_calls(last_turn(client, session))
    assert announced and grown["extra"] in {t["name"] for t in announced[-1]["tools"]}
    assert grown["extra"] not in {t.name for t in provider.requests[0].tools}
    # The call that changed the list resolves only after the re-list: the very next model call
    # of the same turn is already offered the new tool.
    assert grown["extra"] in {t.name for t in provider.requests[1].tools}
    assert grown["extra"] in {t.name for t in provider.requests[2].tools}
    assert extra_call["success"] is True and "extra!" in json.dumps(extra_call["content"])
    assert "extra!" in provider.requests[3].messages[-1].results[0].text
