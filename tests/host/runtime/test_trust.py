"""Workspace trust end to end, over real WebSockets: a hostile folder whose hooks and ``.mcp.json``
server write marker files runs nothing before the user trusts it, everything after, nothing again
once trust is revoked, and a restarted host runs no ``SessionStart`` until a client resumes the
session (then with ``source: "resume"``). Once trusted, a ``PreToolUse`` hook runs before the
tool call's confirmation (as in Claude Code: it may decide whether to ask), the call only after it."""

from __future__ import annotations

import json
import sys
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest

from ahp.state import default_chat_uri
from ahp.workspace_trust import (
    CONFIG_KEY,
    DONT_TRUST,
    TRUST_FOLDER,
    TRUST_SESSION,
    is_trust_request,
    trust_answers,
    without_folder,
)
from client import PROTOCOL_VERSIONS, AhpClient
from host.runtime.agents import ModelSpec, ProviderAgent, StaticSource, TurnSettings
from host.transport.server import RunningHost
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import config_for, ready_session, serving
from tests.host.runtime.agents.harness import run_chat_turn as run_turn
from tests.host.test_vscode import Peer
from tests.tools.mcp.conftest import KITCHEN_SINK

ROOT = "ahp-root://"
HOOKED = ("SessionStart", "UserPromptSubmit", "PreToolUse", "Stop")


def hostile_folder(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose hooks log every event they see (with their stdin) and whose
    ``.mcp.json`` server logs its start, both into ``markers/``."""
    folder = tmp_path / "repo"
    markers = tmp_path / "markers"
    markers.mkdir()
    (folder / ".github" / "hooks").mkdir(parents=True)
    hooks = {"hooks": {event: [{"hooks": [{"type": "command",
                                           "command": f"{{ echo {event}; cat; echo; }} >> {markers / 'hooks.log'}"}]}]
                       for event in HOOKED}}
    (folder / ".github" / "hooks" / "evil.json").write_text(json.dumps(hooks))
    start = f"echo started >> {markers / 'mcp.log'}; exec {sys.executable} {KITCHEN_SINK} stdio"
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": {"evil": {"command": "sh", "args": ["-c", start]}}}))
    (folder / ".claude" / "commands").mkdir(parents=True)
    settings_hook = {"type": "command", "command": f"echo settings >> {markers / 'settings.log'}"}
    # (Its allow rule counts once the folder is trusted: tests/host/runtime/customizations/test_claude_code.py.)
    (folder / ".claude" / "settings.json").write_text(json.dumps({
        "permissions": {"allow": ["Bash(make:*)"]}, "hooks": {"SessionStart": [{"hooks": [settings_hook]}]}}))
    (folder / ".claude" / "commands" / "status.md").write_text(
        f"---\nallowed-tools: Bash(touch:*)\n---\nStatus: !`touch {markers / 'bang'}`\n"
        f"```!\ntouch {markers / 'bang'}\n```\nSummarise it.\n")
    (folder / "README.md").write_text("# a repository\n")
    return folder, markers


def events(markers: Path) -> list[str]:
    log = markers / "hooks.log"
    return [line for line in log.read_text().splitlines() if line in HOOKED] if log.exists() else []


def payloads(markers: Path, event: str) -> list[dict[str, Any]]:
    log = markers / "hooks.log"
    found = []
    for line in log.read_text().splitlines() if log.exists() else ():
        if line.startswith("{") and f'"hook_event_name": "{event}"' in line:
            found.append(json.loads(line))
    return found


def mcp_starts(markers: Path) -> int:
    log = markers / "mcp.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def agent(provider: ScriptedProvider) -> ProviderAgent:
    return ProviderAgent("scripted", StaticSource(provider), display_name="Scripted", models=[ModelSpec("m1")],
                         settings=TurnSettings(title="first-words"))


def config(tmp_path: Path, folder: Path) -> Any:
    # Nothing trusted (the harness trusts the test folder by default); servers would start as soon as
    # a session opens, so an untrusted .mcp.json server that ran would have run by the first turn.
    # The folder's own command may run touch without asking: only trust holds its !`touch` back.
    return config_for(tmp_path, trust={"folders": []}, mcp={"start": "session"},
                      tools={"enabled": True, "allow": ["shell(touch:*)"]}, sessions={"default_directory": str(folder)})


def serve(config: Any, provider: ScriptedProvider, checker: FrameChecker) -> AbstractAsyncContextManager[tuple[RunningHost, AhpClient]]:
    """The harness's host with the scripted agent on ``provider``, and its client offering what a real
    client offers (the host picks 1.0.0)."""
    return serving(config, checker, [agent(provider)], versions=PROTOCOL_VERSIONS)


def _trust_entries(client: AhpClient, session: str) -> list[dict[str, Any]]:
    """The session's open trust questions (``inputNeeded``: asked outside a turn, in its default chat)."""
    return [entry for entry in (client.state(session) or {}).get("inputNeeded") or ()
            if entry.get("kind") == "chatInput" and is_trust_request(entry.get("request") or {})]


def trust_question(client: AhpClient, session: str) -> dict[str, Any] | None:
    return next((entry["request"] for entry in _trust_entries(client, session)), None)


def containers(client: AhpClient, session: str) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in (client.state(session) or {}).get("customizations") or ()}


def waiting(client: AhpClient, session: str) -> set[str]:
    return {name for name, c in containers(client, session).items() if "Waiting for trust" in str(c.get("load", {}).get("message"))}


def evil_tools(client: AhpClient, session: str) -> list[str]:
    return [t["name"] for t in (client.state(session) or {}).get("serverTools") or () if t.get("_meta", {}).get("mcpServer") == "evil"]


def answer(client: AhpClient, session: str, request: dict[str, Any], choice: str) -> None:
    """Answer a trust question in the chat that asked it."""
    chat = next((entry["chat"] for entry in _trust_entries(client, session) if entry["request"]["id"] == request["id"]),
                default_chat_uri(session))
    client.dispatch(chat, {"type": "chat/inputCompleted", "requestId": request["id"], "response": "accept",
                           "answers": trust_answers(choice)})


async def idle(client: AhpClient, session: str) -> None:
    """Until the session's default chat runs no turn and shows no activity."""
    chat = default_chat_uri(session)
    await client.wait_for(lambda m, e: not (client.state(chat) or {}).get("activeTurn")
                          and "activity" not in (client.state(chat) or {}) and "activity" not in (client.state(session) or {}))


def trusted_list(client: AhpClient) -> list[str]:
    return ((client.state(ROOT) or {}).get("config") or {}).get("values", {}).get(CONFIG_KEY) or []


async def test_a_hostile_folder_runs_nothing_before_trust_everything_after_and_nothing_once_revoked(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    folder, markers = hostile_folder(tmp_path)
    provider = ScriptedProvider([reply("hello")])
    async with serve(config(tmp_path, folder), provider, frame_checker) as (running, client):
        session = await ready_session(client)
        question = trust_question(client, session)
        assert question is not None, client.state(session)
        text = json.dumps(question)
        assert str(folder.resolve()) in question["message"] and "evil" in text and "SessionStart" in text
        assert waiting(client, session) == {".github/hooks", ".claude/settings.json", "MCP servers"}
        assert client.state(session)["status"] & 31 == 24  # InputNeeded

        # Before trust: the session works (the folder's command too), and nothing of the folder runs.
        turn = await run_turn(client, session, "/status")
        assert turn["state"] == "complete"
        await idle(client, session)
        assert events(markers) == [] and mcp_starts(markers) == 0
        assert not (markers / "bang").exists() and not (markers / "settings.log").exists()
        assert repr(provider.requests[0].messages[-1]).count("was not run") == 2  # the inline line and the ```! block
        assert evil_tools(client, session) == []
        assert trust_question(client, session) is not None  # still open after the turn

        # Trust: SessionStart runs now, the server starts, the extras are no longer waiting.
        answer(client, session, trust_question(client, session), TRUST_FOLDER)
        await client.wait_for(lambda m, e: trust_question(client, session) is None and evil_tools(client, session)
                              and not waiting(client, session), timeout=20)
        assert trusted_list(client) == [str(folder.resolve())]
        assert mcp_starts(markers) == 1

        # A tool call: the trusted folder's PreToolUse hook runs before the confirmation, the call after it.
        provider.add(call_tools(("shell", {"command": "echo hi"})))
        provider.add(reply("done"))
        chat = default_chat_uri(session)
        turn_id = client.send_message(chat, "run it")
        await client.wait_for(lambda m, e: any(p["toolCall"].get("status") == "pending-confirmation"
                                               for p in ((client.state(chat) or {}).get("activeTurn") or {}).get("responseParts", ())
                                               if p.get("kind") == "toolCall"), timeout=20)
        call = next(p["toolCall"] for p in client.state(chat)["activeTurn"]["responseParts"] if p.get("kind") == "toolCall")
        # (A turn waits for the SessionStart hooks trust released: they ran before its UserPromptSubmit.)
        assert events(markers) == ["SessionStart", "UserPromptSubmit", "PreToolUse"]
        assert payloads(markers, "PreToolUse")[-1]["tool_input"] == {"command": "echo hi"}
        assert [p["source"] for p in payloads(markers, "SessionStart")] == ["startup"]
        assert (markers / "settings.log").read_text() == "settings\n"
        option = next(o for o in call["options"] if o["kind"] == "approve")
        client.dispatch(chat, {"type": "chat/toolCallConfirmed", "turnId": turn_id, "toolCallId": call["toolCallId"],
                               "approved": True, "confirmed": "user-action", "selectedOptionId": option["id"]})
        await client.wait_for(lambda m, e: any(t["id"] == turn_id for t in (client.state(chat) or {}).get("turns") or ()), timeout=20)
        assert events(markers) == ["SessionStart", "UserPromptSubmit", "PreToolUse", "Stop"]  # once each

        # Revoke: the server stops, the hooks wait again, a turn runs none of them.
        client.dispatch(ROOT, {"type": "root/configChanged", "config": {CONFIG_KEY: without_folder(trusted_list(client), str(folder))}})
        await client.wait_for(lambda m, e: waiting(client, session) == {".github/hooks", ".claude/settings.json", "MCP servers"}
                              and not evil_tools(client, session), timeout=20)
        before = events(markers)
        provider.add(reply("again"))
        await run_turn(client, session, "again")
        await idle(client, session)
        assert events(markers) == before
        assert mcp_starts(markers) == 1


async def test_a_restarted_host_runs_no_session_start_until_a_client_resumes_the_session(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    folder, markers = hostile_folder(tmp_path)
    async with serve(config(tmp_path, folder), ScriptedProvider([reply("first")]), frame_checker) as (running, client):
        session = await ready_session(client)
        answer(client, session, trust_question(client, session), TRUST_FOLDER)
        await client.wait_for(lambda m, e: evil_tools(client, session), timeout=20)
        await run_turn(client, session, "first")  # a turn waits for the SessionStart hooks
        assert events(markers) == ["SessionStart", "UserPromptSubmit", "Stop"]
    starts = mcp_starts(markers)

    provider = ScriptedProvider([reply("back")])
    async with serve(config(tmp_path, folder), provider, frame_checker) as (running, client):
        runtime = running.host.customizations.runtime(running.host.session_uri(session))
        assert runtime is not None and runtime.resume_pending and runtime.folder_trusted
        assert events(markers) == ["SessionStart", "UserPromptSubmit", "Stop"] and mcp_starts(markers) == starts

        await client.subscribe(session)  # a client resumes it
        await client.subscribe(default_chat_uri(session))
        turn = await run_turn(client, session, "still there?")
        assert turn["state"] == "complete"
        assert events(markers)[3:] == ["SessionStart", "UserPromptSubmit", "Stop"]
        assert [p["source"] for p in payloads(markers, "SessionStart")] == ["startup", "resume"]
        assert trust_question(client, session) is None  # trust was remembered across the restart


async def test_not_trusting_or_trusting_for_one_session_is_not_remembered(tmp_path: Path, frame_checker: FrameChecker) -> None:
    folder, markers = hostile_folder(tmp_path)
    async with serve(config(tmp_path, folder), ScriptedProvider([reply("ok")]), frame_checker) as (running, client):
        first = await ready_session(client)
        answer(client, first, trust_question(client, first), DONT_TRUST)
        await client.wait_for(lambda m, e: trust_question(client, first) is None, timeout=20)
        second = await ready_session(client)
        assert trust_question(client, second) is not None  # asked again in a new session
        answer(client, second, trust_question(client, second), TRUST_SESSION)
        await client.wait_for(lambda m, e: not waiting(client, second), timeout=20)
        await run_turn(client, second, "go")
        assert events(markers) == ["SessionStart", "UserPromptSubmit", "Stop"]
        assert waiting(client, first) == {".github/hooks", ".claude/settings.json", "MCP servers"}  # the other stays as it was
        assert trusted_list(client) == []
        third = await ready_session(client)
        assert trust_question(client, third) is not None


async def test_a_0_9_0_client_answers_the_question_from_the_sessions_input_needed(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    folder, markers = hostile_folder(tmp_path)
    async with serve(config(tmp_path, folder), ScriptedProvider([]), frame_checker) as (running, client):
        peer = await Peer.open(running)
        try:
            await peer.initialize("vscode-like", ["0.9.0"])
            session = f"scripted:/{__import__('uuid').uuid4()}"
            assert (await peer.request("createSession", {"channel": session, "workingDirectory": folder.as_uri()})).get("error") is None
            snapshot = (await peer.request("subscribe", {"channel": session}))["result"]["snapshot"]["state"]
            [entry] = [e for e in snapshot.get("inputNeeded") or () if e["kind"] == "chatInput"]
            assert is_trust_request(entry["request"])
            await peer.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {"channel": entry["chat"], "clientSeq": 1, "action": {
                "type": "chat/inputCompleted", "requestId": entry["request"]["id"], "response": "accept",
                "answers": trust_answers(TRUST_FOLDER)}}})
            # (An answer dispatched to a chat the client did not subscribe to: 0.9.0 allows it.)
            await peer.until(lambda: (running.host.store.state(ROOT) or {}).get("config", {}).get("values", {}).get(CONFIG_KEY)
                             or next((a for a in peer.actions() if "rejectionReason" in a), None))
            assert not [a for a in peer.actions() if "rejectionReason" in a]
            assert running.host.store.state(ROOT)["config"]["values"][CONFIG_KEY] == [str(folder.resolve())]
            await peer.until(lambda: running.host.customizations.runtime(session).folder_trusted)
            await peer.until(lambda: not (running.host.store.state(session) or {}).get("inputNeeded"))
        finally:
            await peer.close()


async def test_a_folder_trusted_in_the_config_asks_nothing_and_a_bad_trusted_list_is_refused(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    folder, markers = hostile_folder(tmp_path)
    trusted = config_for(tmp_path, trust={"folders": [str(tmp_path)]}, sessions={"default_directory": str(folder)})
    async with serve(trusted, ScriptedProvider([reply("ok")]), frame_checker) as (running, client):
        session = await ready_session(client)
        assert trust_question(client, session) is None and waiting(client, session) == set()
        await run_turn(client, session, "go")
        assert events(markers) == ["SessionStart", "UserPromptSubmit", "Stop"]
        seq = client.dispatch(ROOT, {"type": "root/configChanged", "config": {CONFIG_KEY: ["relative/path"]}})
        outcome = await client.outcome(seq)
        assert outcome.status == "rejected" and "absolute folder paths" in outcome.reason
        assert trusted_list(client) == []


async def test_a_question_left_open_by_a_restart_is_asked_again_once_and_its_answer_works(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    folder, markers = hostile_folder(tmp_path)
    async with serve(config(tmp_path, folder), ScriptedProvider([]), frame_checker) as (running, client):
        session = await ready_session(client)
        before = trust_question(client, session)
        assert before is not None

    async with serve(config(tmp_path, folder), ScriptedProvider([reply("ok")]), frame_checker) as (running, client):
        await client.subscribe(session)
        await client.subscribe(default_chat_uri(session))
        questions = [entry["request"] for entry in _trust_entries(client, session)]
        assert len(questions) == 1 and questions[0]["id"] != before["id"]
        answer(client, session, questions[0], TRUST_FOLDER)
        await client.wait_for(lambda m, e: not waiting(client, session), timeout=20)
        await run_turn(client, session, "go")
        assert events(markers) == ["SessionStart", "UserPromptSubmit", "Stop"]
        assert [p["source"] for p in payloads(markers, "SessionStart")] == ["resume"]


async def test_a_client_plugin_inside_the_folder_waits_for_trust_and_one_elsewhere_does_not(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    folder, markers = hostile_folder(tmp_path)
    for root in (folder / "tools" / "inner", tmp_path / "outer"):
        (root / "hooks").mkdir(parents=True)
        hook = {"type": "command", "command": f"echo {root.name} >> {markers / 'plugins.log'}"}
        (root / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [{"hooks": [hook]}]}}))
    provider = ScriptedProvider([reply("one"), reply("two")])
    async with serve(config(tmp_path, folder), provider, frame_checker) as (running, client):
        session = await ready_session(client)
        published = [{"type": "plugin", "id": name, "uri": root.as_uri(), "name": name, "enabled": True, "nonce": "1"}
                     for name, root in (("inner", folder / "tools" / "inner"), ("outer", tmp_path / "outer"))]
        client.dispatch(session, {"type": "session/activeClientSet", "activeClient": {
            "clientId": client.client_id, "displayName": "Editor", "tools": [], "customizations": published}})
        await client.wait_for(lambda m, e: {"inner", "outer"} <= set(containers(client, session)), timeout=20)
        assert "inner" in waiting(client, session) and "outer" not in waiting(client, session)
        await run_turn(client, session, "hi")
        log = markers / "plugins.log"
        assert log.read_text().split() == ["outer"]
        answer(client, session, trust_question(client, session), TRUST_SESSION)
        await client.wait_for(lambda m, e: "inner" not in waiting(client, session), timeout=20)
        await run_turn(client, session, "again")
        assert sorted(log.read_text().split()) == ["inner", "outer", "outer"]


# -- VS Code's own workspace trust, forwarded ------------------------------------------------------


async def forward_vscode_trust(peer: Peer, enabled: bool, folders: list[Path]) -> None:
    """What VS Code 1.139.1 dispatches after ``initialize`` and whenever its trusted folders change
    (``clientSeq`` 0, as it sends it), waited for until the host echoes it."""
    value = {"enabled": enabled, "trustedUris": [folder.as_uri() for folder in folders]}
    seen = len(peer.actions())
    await peer.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {"channel": ROOT, "clientSeq": 0, "action": {
        "type": "root/configChanged", "config": {"workspaceTrust": value}}}})
    echo = await peer.until(lambda: next((a for a in peer.actions()[seen:] if a["action"].get("config", {}).get("workspaceTrust") == value), None))
    assert "rejectionReason" not in echo, echo


async def vscode_like(running: RunningHost) -> Peer:
    peer = await Peer.open(running)
    result = (await peer.initialize("vscode-like", ["0.9.0", "0.7.0", "0.6.0"]))["result"]
    [root] = [s["state"] for s in result["snapshots"] if s["resource"] == ROOT]
    assert root["config"]["schema"]["properties"]["workspaceTrust"]["readOnly"] is True  # as VS Code's own host says
    return peer


async def test_a_folder_vscode_trusts_runs_its_hooks_once_vscode_forwards_it_and_stops_when_vscode_no_longer_does(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    folder, markers = hostile_folder(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    provider = ScriptedProvider([reply("one"), reply("two"), reply("three"), reply("four")])
    async with serve(config(tmp_path, folder), provider, frame_checker) as (running, client):
        peer = await vscode_like(running)
        try:
            await forward_vscode_trust(peer, True, [elsewhere])  # VS Code trusts another folder only
            session = await ready_session(client)
            question = trust_question(client, session)
            assert question is not None and "VS Code's trusted folders" in question["message"]
            await run_turn(client, session, "before")
            await idle(client, session)
            assert events(markers) == [] and mcp_starts(markers) == 0

            # The user trusts the folder in VS Code: VS Code forwards its new list; no second question.
            await forward_vscode_trust(peer, True, [elsewhere, folder])
            await client.wait_for(lambda m, e: trust_question(client, session) is None and evil_tools(client, session)
                                  and not waiting(client, session), timeout=20)
            await run_turn(client, session, "after")
            assert events(markers) == ["SessionStart", "UserPromptSubmit", "Stop"]
            assert [p["source"] for p in payloads(markers, "SessionStart")] == ["startup"]
            assert mcp_starts(markers) == 1
            assert trusted_list(client) == []  # the host's own list is not touched

            # The host's own list trusts it as well: VS Code dropping it revokes nothing then.
            seq = client.dispatch(ROOT, {"type": "root/configChanged", "config": {CONFIG_KEY: [str(folder)]}})
            assert (await client.outcome(seq)).status == "accepted"
            await forward_vscode_trust(peer, True, [elsewhere])
            await run_turn(client, session, "still trusted here")
            assert events(markers)[3:] == ["UserPromptSubmit", "Stop"] and not waiting(client, session)

            # Revoked here too: now nothing trusts it, and nothing of it runs.
            client.dispatch(ROOT, {"type": "root/configChanged", "config": {CONFIG_KEY: []}})
            await client.wait_for(lambda m, e: waiting(client, session) == {".github/hooks", ".claude/settings.json", "MCP servers"}
                                  and not evil_tools(client, session), timeout=20)
            before = events(markers)
            await run_turn(client, session, "revoked")
            await idle(client, session)
            assert events(markers) == before
        finally:
            await peer.close()


@pytest.mark.parametrize(("client_trust", "runs"), [("follow", True), ("folders", False), ("ignore", False)])
async def test_vscode_with_workspace_trust_switched_off_trusts_every_folder_as_client_trust_says(
        tmp_path: Path, frame_checker: FrameChecker, client_trust: str, runs: bool) -> None:
    folder, markers = hostile_folder(tmp_path)
    settings = config_for(tmp_path, trust={"folders": [], "client_trust": client_trust},
                          sessions={"default_directory": str(folder)})
    async with serve(settings, ScriptedProvider([reply("ok")]), frame_checker) as (running, client):
        peer = await vscode_like(running)
        try:
            session = await ready_session(client)
            assert trust_question(client, session) is not None
            # What VS Code sends when its workspace trust is off (code-server --disable-workspace-trust).
            await forward_vscode_trust(peer, False, [])
            if runs:
                await client.wait_for(lambda m, e: trust_question(client, session) is None and not waiting(client, session), timeout=20)
            await run_turn(client, session, "go")
            assert events(markers) == (["SessionStart", "UserPromptSubmit", "Stop"] if runs else [])
            assert (trust_question(client, session) is None) == runs
        finally:
            await peer.close()


async def test_a_trusted_path_with_dot_segments_is_refused_and_trusts_nothing(tmp_path: Path, frame_checker: FrameChecker) -> None:
    folder, markers = hostile_folder(tmp_path)
    sneaky = f"{(tmp_path / 'elsewhere').as_uri()}/../"  # reads as a sibling; resolved lexically it is tmp_path, above the folder
    async with serve(config(tmp_path, folder), ScriptedProvider([reply("one")]), frame_checker) as (running, client):
        peer = await vscode_like(running)
        try:
            value = {"enabled": True, "trustedUris": [sneaky]}
            seen = len(peer.actions())
            await peer.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {"channel": ROOT, "clientSeq": 0, "action": {
                "type": "root/configChanged", "config": {"workspaceTrust": value}}}})
            echo = await peer.until(lambda: next((a for a in peer.actions()[seen:] if a["action"].get("config", {}).get("workspaceTrust") == value), None))
            assert "must list folders without '.' or '..' in their paths" in echo["rejectionReason"]
            listed = await client.outcome(client.dispatch(ROOT, {"type": "root/configChanged", "config": {CONFIG_KEY: [f"{tmp_path}/x/.."]}}))
            assert listed.status == "rejected" and "without '.' or '..'" in listed.reason
            session = await ready_session(client)
            assert trust_question(client, session) is not None  # still asked: nothing trusted it
            await run_turn(client, session, "go")
            await idle(client, session)
            assert events(markers) == [] and mcp_starts(markers) == 0 and trusted_list(client) == []
        finally:
            await peer.close()


async def test_a_restored_session_trusted_again_for_itself_has_its_folders_mcp_tools_in_its_next_turn(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    # A project whose .mcp.json declares a server (as `npx -y @modelcontextprotocol/server-filesystem`
    # or `mcp-server-git` would be), trusted "for this session only", then the host restarts: the
    # session asks again when a client resumes it, and the message sent right after the answer
    # (what `agent-host chat -c -p MESSAGE --trust` does) gets the folder's tools, as it does in a
    # new session, rather than a first model request without them.
    folder, markers = hostile_folder(tmp_path)
    async with serve(config(tmp_path, folder), ScriptedProvider([reply("first")]), frame_checker) as (running, client):
        session = await ready_session(client)
        answer(client, session, trust_question(client, session), TRUST_SESSION)
        await client.wait_for(lambda m, e: evil_tools(client, session), timeout=20)

    provider = ScriptedProvider([reply("back")])
    async with serve(config(tmp_path, folder), provider, frame_checker) as (running, client):
        await client.subscribe(session)  # a client resumes it: the question is asked again
        await client.subscribe(default_chat_uri(session))
        await client.wait_for(lambda m, e: trust_question(client, session) is not None, timeout=20)
        answer(client, session, trust_question(client, session), TRUST_SESSION)
        turn = await run_turn(client, session, "still there?")
    assert turn["state"] == "complete"
    assert any("evil" in tool.name for tool in provider.requests[0].tools), [tool.name for tool in provider.requests[0].tools]
