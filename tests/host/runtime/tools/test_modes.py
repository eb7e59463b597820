"""Permission modes end to end: a real host, a real client, the scripted model. What the model is
offered in each mode, what runs without asking, what asks, the plan approval, VS Code's ``mode``
kept in step, and the OS sandbox around commands. The client speaks AHP 1.0.0 (what current clients
negotiate); VS Code's 0.9.0 and our 0.2.0 client meet over one session's mode in the last test but one."""

from __future__ import annotations

from pathlib import Path

import pytest

from ahp.dialects.v0_2.uris import v02_session_uri
from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS, AhpClient
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import config_for, idle, ready_session, serving
from tools.os_sandbox import unavailable

from ._support import calls, scripted, tool_results, wait_pending
from .test_client_tools import second_client

READ_ONLY = {"read_file", "list_dir", "glob", "grep", "ask_user", "task"}  # task: a sub-agent, in plan mode too


def _config(tmp_path: Path, **tools):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return config_for(tmp_path, tools={"enabled": True, **tools}, sessions={"default_directory": str(work)}), work


def _mode(client, session) -> str | None:
    return ((client.state(session) or {}).get("config") or {}).get("values", {}).get("permissionMode")


async def _session(client: AhpClient, **config: str) -> tuple[str, str]:
    """A ready session with ``config`` chosen up front, and its default chat."""
    session = await ready_session(client, config=config)
    return session, default_chat_uri(session)


def _open_requests(client: AhpClient, chat: str) -> list[dict]:
    """The input requests of the chat's running turn that wait for an answer."""
    active = (client.state(chat) or {}).get("activeTurn") or {}
    return [p["request"] for p in active.get("responseParts") or () if p.get("kind") == "inputRequest" and "response" not in p]


async def _answer_plan(client: AhpClient, chat: str, option: str, feedback: str | None = None) -> None:
    await client.wait_for(lambda m, e: bool(_open_requests(client, chat)))
    [request] = _open_requests(client, chat)
    assert request["id"].startswith("plan-")
    value = {"kind": "selected", "value": option, **({"freeformValues": [feedback]} if feedback else {})}
    answer = {"state": "submitted", "value": value}
    await client.outcome(client.dispatch(chat, {"type": "chat/inputAnswerChanged", "requestId": request["id"],
                                                "questionId": "approval", "answer": answer}))
    client.dispatch(chat, {"type": "chat/inputCompleted", "requestId": request["id"], "response": "accept"})


async def test_plan_mode_offers_only_read_only_tools_and_runs_nothing_before_the_plan_is_approved(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    config, work = _config(tmp_path)
    provider = ScriptedProvider([
        call_tools(("write_file", {"path": "early.txt", "content": "too soon"})),
        call_tools(("propose_plan", {"plan": "1. Write plan.txt"})),
        call_tools(("write_file", {"path": "plan.txt", "content": "done"})),
        reply("finished"),
    ])
    async with serving(config, frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        session, chat = await _session(client, permissionMode="plan")
        assert _mode(client, session) == "plan"
        client.send_message(chat, "plan it")
        await _answer_plan(client, chat, "accept-edits")
        await idle(client, chat)
        final_mode = _mode(client, session)
        done = calls(client, chat)
    offered = [{tool.name for tool in request.tools} for request in provider.requests]
    assert offered[0] == READ_ONLY | {"propose_plan"} and offered[1] == offered[0]
    assert not (work / "early.txt").exists()  # not offered, and refused: nothing ran
    assert tool_results(provider, 1)[0].is_error
    assert "approved" in tool_results(provider, 2)[0].text
    # Approval left plan mode: every tool again, and the edit ran without asking (accept-edits).
    assert {"write_file", "shell", "edit_file"} <= offered[2] and "propose_plan" not in offered[2]
    assert final_mode == "accept-edits"
    assert (work / "plan.txt").read_text() == "done"
    assert (done[-1]["toolName"], done[-1]["confirmed"], done[-1]["success"]) == ("write_file", "setting", True)
    assert "plan mode" in (provider.requests[0].system or "")
    assert "plan mode" not in (provider.requests[2].system or "")


async def test_keep_planning_stays_in_plan_mode_and_tells_the_model_what_to_change(tmp_path: Path, frame_checker: FrameChecker) -> None:
    config, work = _config(tmp_path)
    provider = ScriptedProvider([call_tools(("propose_plan", {"plan": "1. Delete everything"})), reply("revising")])
    async with serving(config, frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        session, chat = await _session(client, permissionMode="plan")
        client.send_message(chat, "plan it")
        await _answer_plan(client, chat, "keep-planning", feedback="keep the tests")
        await idle(client, chat)
        assert _mode(client, session) == "plan"
    told = tool_results(provider, 1)[0].text
    assert "stays in plan mode" in told and "keep the tests" in told


async def test_accept_edits_runs_an_edit_without_asking_but_asks_for_a_command(tmp_path: Path, frame_checker: FrameChecker) -> None:
    config, work = _config(tmp_path)
    provider = ScriptedProvider([call_tools(("write_file", {"path": "a.txt", "content": "edited"})),
                                 call_tools(("shell", {"command": "echo hi"})), reply("ok")])
    async with serving(config, frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        _, chat = await _session(client, permissionMode="accept-edits")
        client.send_message(chat, "go")
        call = await wait_pending(client, chat)
        assert call["toolName"] == "shell"
        assert (work / "a.txt").read_text() == "edited"
        [edit, _] = calls(client, chat)
        assert (edit["toolName"], edit["confirmed"]) == ("write_file", "setting")


async def test_accept_edits_covers_the_extra_roots_too(tmp_path: Path, frame_checker: FrameChecker) -> None:
    config, work = _config(tmp_path, extra_roots=[str(tmp_path / "shared")])
    (tmp_path / "shared").mkdir()
    provider = ScriptedProvider([call_tools(("write_file", {"path": str(tmp_path / "shared" / "b.txt"), "content": "x"})), reply("ok")])
    async with serving(config, frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        _, chat = await _session(client, permissionMode="accept-edits")
        client.send_message(chat, "go")
        await idle(client, chat)
        [call] = calls(client, chat)
    assert (call["confirmed"], call["success"]) == ("setting", True)
    assert (tmp_path / "shared" / "b.txt").read_text() == "x"


async def test_full_auto_runs_a_command_without_asking(tmp_path: Path, frame_checker: FrameChecker) -> None:
    config, work = _config(tmp_path, sandbox="off")
    provider = ScriptedProvider([call_tools(("shell", {"command": "echo ran > out.txt"})), reply("ok")])
    async with serving(config, frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        _, chat = await _session(client, permissionMode="full-auto")
        client.send_message(chat, "go")
        await idle(client, chat)
        [call] = calls(client, chat)
    assert (call["confirmed"], call["success"]) == ("setting", True)
    assert (work / "out.txt").read_text() == "ran\n"


async def test_a_client_switches_the_mode_and_every_client_sees_it(tmp_path: Path, frame_checker: FrameChecker) -> None:
    config, _ = _config(tmp_path)
    provider = ScriptedProvider([call_tools(("shell", {"command": "echo hi"})), reply("ok")])
    async with serving(config, frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, client):
        session, _ = await _session(client)
        assert _mode(client, session) == "default"
        other = await second_client(running)  # AHP 0.2.0: it names the session as 0.2.0 does
        old_name = v02_session_uri(session)
        assert old_name is not None
        await other.subscribe(old_name)
        refused = await client.outcome(client.dispatch(session, {"type": "session/configChanged", "config": {"permissionMode": "yolo"}}))
        assert refused.status != "accepted" and "permissionMode" in refused.reason and "plan" in refused.reason
        assert _mode(client, session) == "default"  # refused, and the connection goes on
        accepted = await client.outcome(client.dispatch(session, {"type": "session/configChanged", "config": {"permissionMode": "plan"}}))
        assert accepted.status == "accepted"
        await other.wait_for(lambda m, e: _mode(other, old_name) == "plan")
        await other.close()


async def test_vscode_mode_and_permission_mode_follow_each_other(tmp_path: Path, frame_checker: FrameChecker) -> None:
    config, _ = _config(tmp_path)
    async with serving(config, frame_checker, [scripted(ScriptedProvider([]))], versions=PROTOCOL_VERSIONS) as (_, client):
        session, _ = await _session(client, mode="plan")
        assert _mode(client, session) == "plan"
        client.dispatch(session, {"type": "session/configChanged", "config": {"permissionMode": "full-auto"}})
        await client.wait_for(lambda m, e: client.state(session)["config"]["values"].get("mode") == "autopilot")
        client.dispatch(session, {"type": "session/configChanged", "config": {"mode": "plan"}})
        await client.wait_for(lambda m, e: _mode(client, session) == "plan")
        client.dispatch(session, {"type": "session/configChanged", "config": {"permissionMode": "accept-edits"}})
        await client.wait_for(lambda m, e: client.state(session)["config"]["values"].get("mode") == "interactive")
        assert _mode(client, session) == "accept-edits"


needs_bwrap = pytest.mark.skipif(unavailable() is not None, reason=f"no OS sandbox here: {unavailable()}")


@needs_bwrap
async def test_a_sandboxed_command_writes_inside_the_sessions_folder_but_not_outside(tmp_path: Path, frame_checker: FrameChecker) -> None:
    config, work = _config(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    provider = ScriptedProvider([call_tools(("shell", {"command": "echo in > inside.txt && echo scratch > /tmp/scratch && cat /tmp/scratch"})),
                                 call_tools(("shell", {"command": f"echo out > {outside}/escape.txt"})),
                                 call_tools(("shell", {"command": f"echo home > {Path.home()}/.agent-host-sandbox-test"})),
                                 reply("ok")])
    async with serving(config, frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        _, chat = await _session(client, permissionMode="full-auto")
        client.send_message(chat, "go")
        await idle(client, chat)
        inside, escape, home = calls(client, chat)
    assert inside["success"] is True and (work / "inside.txt").read_text() == "in\n"
    assert "scratch" in tool_results(provider, 1)[0].text  # a private /tmp works
    assert escape["success"] is False and not (outside / "escape.txt").exists()
    assert home["success"] is False and not (Path.home() / ".agent-host-sandbox-test").exists()
    assert "Read-only file system" in tool_results(provider, 3)[0].text


@needs_bwrap
@pytest.mark.parametrize("network", [False, True])
async def test_the_sandbox_cuts_the_network_unless_the_setting_allows_it(tmp_path: Path, frame_checker: FrameChecker, network: bool) -> None:
    interfaces = sorted(line.split(":")[0].strip() for line in Path("/proc/net/dev").read_text().splitlines()[2:])
    if network and interfaces == ["lo"]:
        pytest.skip("this machine has no network interface besides loopback to see in the sandbox")
    config, _ = _config(tmp_path, sandbox="always", sandbox_network=network)
    provider = ScriptedProvider([call_tools(("shell", {"command": "echo \"interfaces=$(tail -n +3 /proc/net/dev | cut -d: -f1 | sort | tr -d ' ' | tr '\\n' ',')\""})), reply("ok")])
    async with serving(config, frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        _, chat = await _session(client)  # sandbox "always": the default mode too (the command asks first)
        client.send_message(chat, "go")
        call = await wait_pending(client, chat)
        client.dispatch(chat, {"type": "chat/toolCallConfirmed", "turnId": call["turnId"], "toolCallId": call["toolCallId"],
                               "approved": True, "confirmed": "user-action", "selectedOptionId": "allow-once"})
        await idle(client, chat)
    [line] = [line for line in tool_results(provider, 1)[0].text.splitlines() if line.startswith("interfaces=")]
    seen = line.removeprefix("interfaces=").strip(",").split(",")
    assert sorted(seen) == (interfaces if network else ["lo"])


async def test_full_auto_refuses_commands_where_the_platform_has_no_sandbox(tmp_path: Path, frame_checker: FrameChecker) -> None:
    config, work = _config(tmp_path)
    provider = ScriptedProvider([call_tools(("shell", {"command": "echo ran > out.txt"})), reply("ok")])
    async with serving(config, frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, client):
        running.host.tools.modes._sandbox_unavailable = lambda: "bubblewrap (bwrap) is not installed: install bubblewrap"
        _, chat = await _session(client, permissionMode="full-auto")
        client.send_message(chat, "go")
        await idle(client, chat)
        [call] = calls(client, chat)
    assert call["success"] is False and not (work / "out.txt").exists()
    told = tool_results(provider, 1)[0].text
    assert "sandbox" in told and "install bubblewrap" in told


async def test_vscode_over_0_9_0_and_our_0_2_0_client_see_and_change_the_same_mode(tmp_path: Path, frame_checker: FrameChecker) -> None:
    import uuid

    from tests.host.test_vscode import Peer

    config, work = _config(tmp_path)
    async with serving(config, frame_checker, [scripted(ScriptedProvider([]))]) as (running, client):
        peer = await Peer.open(running)
        try:
            await peer.initialize(str(uuid.uuid4()), ["0.9.0"])
            channel = f"scripted:/{uuid.uuid4()}"
            reply = await peer.request("createSession", {"channel": channel, "provider": "scripted", "workingDirectories": [work.as_uri()],
                                                         "config": {"isolation": "folder", "autoApprove": "default", "mode": "plan"},
                                                         "progressToken": str(uuid.uuid4())})
            assert "error" not in reply, reply
            subscribed = await peer.request("subscribe", {"channel": channel})
            assert subscribed["result"]["snapshot"]["state"]["config"]["values"]["permissionMode"] == "plan"
            ours = next(s["resource"] for s in await client.list_sessions())
            await client.subscribe(ours)
            assert _mode(client, ours) == "plan"  # the 0.2.0 client sees VS Code's plan mode
            client.dispatch(ours, {"type": "session/configChanged", "config": {"permissionMode": "accept-edits"}})

            def changed() -> bool:
                return any(a["action"].get("type") == "session/configChanged" and a["action"]["config"].get("mode") == "interactive"
                           for a in peer.actions())
            await peer.until(changed)  # VS Code is told in its own terms: mode "interactive"
            assert any(a["action"].get("config", {}).get("permissionMode") == "accept-edits" for a in peer.actions())
        finally:
            await peer.close()


async def test_a_sub_agent_in_plan_mode_reads_but_cannot_write_or_approve_a_plan(tmp_path: Path, frame_checker: FrameChecker) -> None:
    config, work = _config(tmp_path)
    task = {"description": "Look around", "prompt": "Find the entry point, then write notes.txt."}
    provider = ScriptedProvider([
        call_tools(("task", task)),
        call_tools(("write_file", {"path": "notes.txt", "content": "sneaky"})),  # the sub-agent tries to write
        reply("I could not write in plan mode."),
        reply("The sub-agent only looked."),
    ])
    async with serving(config, frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        _, chat = await _session(client, permissionMode="plan")
        client.send_message(chat, "explore")
        await idle(client, chat)
        await client.wait_for(lambda m, e: len(provider.requests) == 4)
    sub_agent = {tool.name for tool in provider.requests[1].tools}
    assert sub_agent == READ_ONLY - {"task"}  # no writers, no nested task, no propose_plan
    assert not (work / "notes.txt").exists()
    assert tool_results(provider, 2)[0].is_error
