"""Client-provided tools end to end with two connected clients: offering (and the name-clash
rule), dispatch to the owner, completion only by the owner, departure with a grace period,
reclaim, and cancellation."""

from __future__ import annotations

from pathlib import Path

from client import AhpClient
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import TOKEN, FrameChecker
from tests.host.runtime.agents.harness import idle, serving

from ._support import calls, scripted, session_with, tool_results, tools_config

EDITOR_TOOL = {
    "name": "open_editor",
    "title": "Open in editor",
    "description": "Opens a file in the user's editor.",
    "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
}
CLASHING_TOOL = {"name": "read_file", "description": "The editor's own file reader."}


async def second_client(running, client_id: str | None = None) -> AhpClient:
    other = await AhpClient.connect(running.url.split("?")[0], token=TOKEN, client_id=client_id)
    # 0.2.0, as ``serving``'s client is: it claims the session by its 0.2.0 name and shapes
    # (``session/activeClientChanged``) and the two clients' views are compared.
    await other.initialize(subscriptions=["ahp-root://"], protocol_versions=("0.2.0",))
    return other


async def claim(client: AhpClient, session: str, *tools: dict) -> None:
    seq = client.dispatch(session, {"type": "session/activeClientChanged",
                                    "activeClient": {"clientId": client.client_id, "displayName": "Editor", "tools": list(tools)}})
    outcome = await client.outcome(seq)
    assert outcome.status == "accepted", outcome.reason


def running_client_call(client: AhpClient, session: str) -> dict | None:
    state = client.state(session) or {}
    for call in calls(client, session):
        if call.get("toolClientId") and call.get("status") == "running" and state.get("activeTurn"):
            return {**call, "turnId": state["activeTurn"]["id"]}
    return None


def complete(client: AhpClient, session: str, call: dict, text: str) -> int:
    return client.dispatch(session, {"type": "session/toolCallComplete", "turnId": call["turnId"], "toolCallId": call["toolCallId"],
                                     "result": {"success": True, "pastTenseMessage": "Opened", "content": [{"type": "text", "text": text}]}})


async def test_full_lifecycle_with_two_clients_and_the_wrong_client_refused(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("open_editor", {"path": "a.py"})), reply("opened")])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)]) as (running, owner):
        other = await second_client(running)
        try:
            session = await session_with(owner)
            await other.subscribe(session)
            await claim(owner, session, EDITOR_TOOL, CLASHING_TOOL)
            refused = await other.outcome(other.dispatch(session, {"type": "session/activeClientChanged",
                                                                   "activeClient": {"clientId": other.client_id, "tools": []}}))
            assert refused.status == "rejected" and owner.client_id in refused.reason
            owner.send_message(session, "open a.py")
            await owner.wait_for(lambda m, e: running_client_call(owner, session) is not None)
            call = running_client_call(owner, session)
            assert (call["toolName"], call["toolClientId"], call["confirmed"]) == ("open_editor", owner.client_id, "not-needed")
            wrong = await other.outcome(complete(other, session, call, "forged"))
            assert wrong.status == "rejected" and "only it can complete" in wrong.reason
            assert (await owner.outcome(complete(owner, session, call, "opened a.py in tab 3"))).status == "accepted"
            await idle(owner, session)
        finally:
            await other.close()
    offered = [t.name for t in provider.requests[0].tools]
    assert "open_editor" in offered and "client__read_file" in offered and offered.count("read_file") == 1
    assert tool_results(provider, 1)[0].text == "opened a.py in tab 3"


async def test_a_departed_client_fails_its_calls_after_the_grace_period(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("open_editor", {"path": "a.py"})), reply("the editor went away")])
    async with serving(tools_config(tmp_path, client_tool_grace=0.05), frame_checker, [scripted(provider)]) as (running, watcher):
        owner = await second_client(running)
        session = await session_with(watcher)
        await owner.subscribe(session)
        await claim(owner, session, EDITOR_TOOL)
        watcher.send_message(session, "open a.py")
        await watcher.wait_for(lambda m, e: running_client_call(watcher, session) is not None)
        await owner.close()
        await idle(watcher, session)
        [call] = calls(watcher, session)
        assert "activeClient" not in watcher.state(session)
    assert (call["status"], call["success"], call["error"]["code"]) == ("completed", False, "client_gone")
    told = tool_results(provider, 1)[0]
    assert told.is_error and "disconnected" in told.text
    assert watcher.state(session)["turns"][-1]["state"] == "complete"


async def test_a_client_that_comes_back_within_the_grace_period_completes_its_call(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("open_editor", {"path": "a.py"})), reply("done")])
    async with serving(tools_config(tmp_path, client_tool_grace=60), frame_checker, [scripted(provider)]) as (running, watcher):
        owner = await second_client(running, "editor-1")
        session = await session_with(watcher)
        await owner.subscribe(session)
        await claim(owner, session, EDITOR_TOOL)
        watcher.send_message(session, "open a.py")
        await watcher.wait_for(lambda m, e: running_client_call(watcher, session) is not None)
        await owner.close()
        await watcher.wait_for(lambda m, e: "activeClient" not in watcher.state(session))
        back = await second_client(running, "editor-1")
        try:
            await back.subscribe(session)
            await claim(back, session, EDITOR_TOOL)
            call = running_client_call(back, session)
            assert call is not None
            assert (await back.outcome(complete(back, session, call, "opened after reconnecting"))).status == "accepted"
            await idle(watcher, session)
        finally:
            await back.close()
    assert tool_results(provider, 1)[0].text == "opened after reconnecting"


async def test_cancelling_the_turn_cancels_the_client_call(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("open_editor", {"path": "a.py"}))])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)]) as (_, owner):
        session = await session_with(owner)
        await claim(owner, session, EDITOR_TOOL)
        turn_id = owner.send_message(session, "open a.py")
        await owner.wait_for(lambda m, e: running_client_call(owner, session) is not None)
        call = running_client_call(owner, session)
        owner.cancel_turn(session, turn_id)
        await idle(owner, session)
        [cancelled] = calls(owner, session)
        late = await owner.outcome(complete(owner, session, call, "too late"))
    assert (cancelled["status"], cancelled["reason"]) == ("cancelled", "skipped")
    assert late.status == "rejected"


async def test_a_server_rule_makes_the_owner_confirm_and_its_denial_cancels_the_call(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("open_editor", {"path": "a.py"})), reply("ok")])
    async with serving(tools_config(tmp_path, ask=["open_editor"]), frame_checker, [scripted(provider)]) as (_, owner):
        session = await session_with(owner)
        await claim(owner, session, EDITOR_TOOL)
        owner.send_message(session, "open a.py")
        await owner.wait_for(lambda m, e: any(c.get("status") == "pending-confirmation" for c in calls(owner, session)))
        [call] = calls(owner, session)
        turn_id = owner.state(session)["activeTurn"]["id"]
        owner.dispatch(session, {"type": "session/toolCallConfirmed", "turnId": turn_id, "toolCallId": call["toolCallId"],
                                 "approved": False, "reason": "denied", "reasonMessage": "I do not know this tool"})
        await idle(owner, session)
        [done] = calls(owner, session)
    assert (done["status"], done["reason"]) == ("cancelled", "denied")
    assert "I do not know this tool" in tool_results(provider, 1)[0].text


async def test_claiming_with_tools_is_refused_in_a_way_the_client_can_act_on(tmp_path: Path, frame_checker: FrameChecker) -> None:
    async with serving(tools_config(tmp_path), frame_checker, [scripted(ScriptedProvider([]))]) as (running, first):
        session = await session_with(first)
        other = await second_client(running)
        try:
            await other.subscribe(session)
            outcome = await other.outcome(other.dispatch(session, {"type": "session/activeClientToolsChanged", "tools": [EDITOR_TOOL]}))
        finally:
            await other.close()
    assert outcome.status == "rejected" and "claim the role first" in outcome.reason


async def test_an_owner_denying_its_running_call_fails_it_and_the_turn_goes_on(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("open_editor", {"path": "a.py"})), reply("understood")])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)]) as (running, owner):
        other = await second_client(running)
        try:
            session = await session_with(owner)
            await other.subscribe(session)
            await claim(owner, session, EDITOR_TOOL)
            owner.send_message(session, "open a.py")
            await owner.wait_for(lambda m, e: running_client_call(owner, session) is not None)
            call = running_client_call(owner, session)
            deny = {"type": "session/toolCallConfirmed", "turnId": call["turnId"], "toolCallId": call["toolCallId"],
                    "approved": False, "reason": "denied", "reasonMessage": "I do not know this tool"}
            # Another client's late denial is refused and changes nothing.
            assert (await other.outcome(other.dispatch(session, deny))).status == "rejected"
            assert running_client_call(owner, session) is not None
            # The owner's is refused too (the call is running), but the host then fails the call itself.
            assert (await owner.outcome(owner.dispatch(session, deny))).status == "rejected"
            await idle(owner, session)
            [done] = calls(owner, session)
        finally:
            await other.close()
    assert (done["status"], done["success"]) == ("completed", False)
    assert done["error"]["code"] == "declined_by_client"
    told = tool_results(provider, 1)[0].text
    assert "declined" in told and "I do not know this tool" in told
    assert provider.requests[1] is not None and len(provider.requests) == 2
