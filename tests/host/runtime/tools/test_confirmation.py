"""The confirmation flow end to end: a real host, a real client speaking what a real client
negotiates (AHP 1.0.0: the calls live in the session's default chat), the scripted model; what the
client is asked and what the model is told for each option, policy rules and auto-approve."""

from __future__ import annotations

import json
from pathlib import Path

from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS
from host.runtime.tools import RESULT_REJECTED
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import idle, ready_session, serving
from tests.host.runtime.agents.harness import run_chat_turn as run_turn
from tools.base import Tool, ToolContext, success_result

from ._support import calls, scripted, tool_results, tools_config, wait_pending


def confirm(client, chat, call, **fields) -> int:
    return client.dispatch(chat, {"type": "chat/toolCallConfirmed", "turnId": call["turnId"], "toolCallId": call["toolCallId"], **fields})


async def new_chat(client, **kwargs) -> str:
    """A new, ready session of the scripted agent; its default chat."""
    return default_chat_uri(await ready_session(client, provider="scripted", **kwargs))


async def test_server_tools_are_published_and_offered_to_the_model(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([reply("hi")])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        session = await ready_session(client, provider="scripted")
        await client.wait_for(lambda m, e: bool((client.state(session) or {}).get("serverTools")))
        await run_turn(client, session, "hello")
        published = [t["name"] for t in client.state(session)["serverTools"]]
    assert published == ["read_file", "list_dir", "glob", "grep", "edit_file", "write_file", "shell", "ask_user", "task"]
    assert [t.name for t in provider.requests[0].tools] == published


async def test_read_only_tools_run_without_asking(tmp_path: Path, frame_checker: FrameChecker) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    provider = ScriptedProvider([call_tools(("read_file", {"path": "a.txt"})), reply("done")])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        chat = await new_chat(client)
        turn = await run_turn(client, chat, "read it")
    [call] = [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]
    assert (call["status"], call["confirmed"], call["success"]) == ("completed", "not-needed", True)
    assert "alpha" in tool_results(provider, 1)[0].text


async def test_allow_once_runs_the_shell_command_and_asks_again_next_time(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("shell", {"command": "echo one"})), call_tools(("shell", {"command": "echo two"})), reply("ok")])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        chat = await new_chat(client)
        client.send_message(chat, "run")
        call = await wait_pending(client, chat)
        assert [o["id"] for o in call["options"]] == ["allow-once", "allow-session", "allow-always", "deny", "deny-with-reason"]
        assert call["editable"] is True
        confirm(client, chat, call, approved=True, confirmed="user-action", selectedOptionId="allow-once")
        await client.wait_for(lambda m, e: _pending_other(client, chat, call["toolCallId"]) is not None)
        call2 = _pending_other(client, chat, call["toolCallId"])
        confirm(client, chat, call2, approved=True, confirmed="user-action", selectedOptionId="allow-once")
        await idle(client, chat)
    assert "one" in tool_results(provider, 1)[0].text
    assert "two" in tool_results(provider, 2)[0].text


def _pending_other(client, chat, seen_id):
    for call in calls(client, chat):
        if call.get("status") == "pending-confirmation" and call["toolCallId"] != seen_id:
            return {**call, "turnId": client.state(chat)["activeTurn"]["id"]}
    return None


async def test_allow_in_this_session_remembers_the_command_prefix(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("shell", {"command": "echo one"})), reply("a"), call_tools(("shell", {"command": "echo two"})), reply("b"),
                                 call_tools(("shell", {"command": "ls"}))])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        chat = await new_chat(client)
        client.send_message(chat, "first")
        call = await wait_pending(client, chat)
        confirm(client, chat, call, approved=True, confirmed="user-action", selectedOptionId="allow-session")
        await idle(client, chat)
        turn = await run_turn(client, chat, "second")
        [second] = [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]
        assert (second["status"], second["confirmed"]) == ("completed", "setting")
        client.send_message(chat, "third")
        third = await wait_pending(client, chat)  # another command: asked again
        assert third["toolInput"] == json.dumps({"command": "ls"})


async def test_always_allow_is_saved_and_survives_a_restart(tmp_path: Path, frame_checker: FrameChecker) -> None:
    config = tools_config(tmp_path)
    provider = ScriptedProvider([call_tools(("write_file", {"path": "x.txt", "content": "1"})), reply("a")])
    async with serving(config, frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        chat = await new_chat(client)
        client.send_message(chat, "write")
        call = await wait_pending(client, chat)
        assert call["edits"]["items"] and call["editable"] is True
        confirm(client, chat, call, approved=True, confirmed="user-action", selectedOptionId="allow-always")
        await idle(client, chat)
    provider = ScriptedProvider([call_tools(("write_file", {"path": "y.txt", "content": "2"})), reply("b")])
    async with serving(config, frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        chat = await new_chat(client)
        turn = await run_turn(client, chat, "write again")
    [call] = [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]
    assert (call["confirmed"], call["success"]) == ("setting", True)
    assert (tmp_path / "y.txt").read_text() == "2"


async def test_deny_and_deny_with_reason_tell_the_model(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("shell", {"command": "rm x"})), call_tools(("shell", {"command": "rm y"})), reply("ok")])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        chat = await new_chat(client)
        client.send_message(chat, "go")
        call = await wait_pending(client, chat)
        confirm(client, chat, call, approved=False, reason="denied", selectedOptionId="deny")
        await client.wait_for(lambda m, e: _pending_other(client, chat, call["toolCallId"]) is not None)
        call2 = _pending_other(client, chat, call["toolCallId"])
        confirm(client, chat, call2, approved=False, reason="denied", selectedOptionId="deny-with-reason",
                reasonMessage="Never delete files here", userSuggestion={"text": "move it to trash/ instead", "origin": {"kind": "user"}})
        await idle(client, chat)
        states = [(c["status"], c.get("reason")) for c in calls(client, chat)]
    assert states == [("cancelled", "denied"), ("cancelled", "denied")]
    assert tool_results(provider, 1)[0].text == "The user denied this tool call."
    told = tool_results(provider, 2)[0]
    assert told.is_error and "Never delete files here" in told.text and "move it to trash/ instead" in told.text


async def test_edited_input_is_what_runs(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("write_file", {"path": "a.txt", "content": "model"})), reply("ok")])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        chat = await new_chat(client)
        client.send_message(chat, "go")
        call = await wait_pending(client, chat)
        confirm(client, chat, call, approved=True, confirmed="user-action", selectedOptionId="allow-once",
                editedToolInput=json.dumps({"path": "b.txt", "content": "user"}))
        await idle(client, chat)
    assert not (tmp_path / "a.txt").exists() and (tmp_path / "b.txt").read_text() == "user"


async def test_policy_rules_from_config_allow_ask_and_deny(tmp_path: Path, frame_checker: FrameChecker) -> None:
    config = tools_config(tmp_path, allow=["shell(echo:*)"], deny=["shell(rm:*)"], ask=["read_file"])
    provider = ScriptedProvider([call_tools(("shell", {"command": "echo hi"}), ("shell", {"command": "rm -rf x"}), ("read_file", {"path": "a"})), reply("ok")])
    async with serving(config, frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        chat = await new_chat(client)
        client.send_message(chat, "go")
        asked = await wait_pending(client, chat)
        assert asked["toolName"] == "read_file"
        confirm(client, chat, asked, approved=False, reason="denied")
        await idle(client, chat)
        echo, rm, _ = calls(client, chat)
    assert (echo["confirmed"], echo["success"]) == ("setting", True)
    assert (rm["success"], rm["error"]["code"]) == (False, "denied_by_rule")
    assert "rm:*" in tool_results(provider, 1)[1].text


async def test_session_auto_approve_runs_calls_and_can_be_switched_off(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("shell", {"command": "echo a"})), reply("a"), call_tools(("shell", {"command": "echo b"}))])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        session = await ready_session(client, provider="scripted", config={"autoApprove": True})
        assert client.state(session)["config"]["values"]["autoApprove"] is True
        turn = await run_turn(client, session, "one")
        assert [p["toolCall"]["confirmed"] for p in turn["responseParts"] if p["kind"] == "toolCall"] == ["setting"]
        seq = client.dispatch(session, {"type": "session/configChanged", "config": {"autoApprove": False}})
        assert (await client.outcome(seq)).accepted
        chat = default_chat_uri(session)
        client.send_message(chat, "two")
        await wait_pending(client, chat)


async def test_result_confirmation_approved_and_denied(tmp_path: Path, frame_checker: FrameChecker) -> None:
    (tmp_path / "a.txt").write_text("secret\n")
    provider = ScriptedProvider([call_tools(("read_file", {"path": "a.txt"})), call_tools(("read_file", {"path": "a.txt"})), reply("ok")])
    async with serving(tools_config(tmp_path, result_confirmation=["read_file"]), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        chat = await new_chat(client)
        client.send_message(chat, "go")
        call = await wait_pending(client, chat, "pending-result-confirmation")
        client.dispatch(chat, {"type": "chat/toolCallResultConfirmed", "turnId": call["turnId"], "toolCallId": call["toolCallId"], "approved": True})
        await client.wait_for(lambda m, e: _pending_other_result(client, chat, call["toolCallId"]) is not None)
        call2 = _pending_other_result(client, chat, call["toolCallId"])
        client.dispatch(chat, {"type": "chat/toolCallResultConfirmed", "turnId": call2["turnId"], "toolCallId": call2["toolCallId"], "approved": False})
        await idle(client, chat)
        first, second = calls(client, chat)
    assert first["status"] == "completed" and (second["status"], second["reason"]) == ("cancelled", "result-denied")
    assert "secret" in tool_results(provider, 1)[0].text
    assert tool_results(provider, 2)[0].text == RESULT_REJECTED


def _pending_other_result(client, chat, seen_id):
    for call in calls(client, chat):
        if call.get("status") == "pending-result-confirmation" and call["toolCallId"] != seen_id:
            return {**call, "turnId": client.state(chat)["activeTurn"]["id"]}
    return None


class CarefulTool(Tool):
    """Runs, then asks whether it may go on (like a command about to write outside the root)."""

    name = "careful"
    title = "Careful"
    description = "Asks before its second step."
    input_schema = {"type": "object", "properties": {}}
    annotations = {"readOnlyHint": True}

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        go_on = await ctx.reconfirm("Write outside the working directory?")
        return success_result("Did both steps" if go_on else "Stopped after step one")


async def test_a_running_tool_can_ask_for_re_confirmation(tmp_path: Path, frame_checker: FrameChecker) -> None:
    from host.runtime.agents.environment import Contributor

    class Extra(Contributor):
        def tools(self, ctx):
            return [CarefulTool()]

    provider = ScriptedProvider([call_tools(("careful", {})), reply("ok")])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, client):
        running.host.environment.contributors.append(Extra())
        chat = await new_chat(client)
        client.send_message(chat, "go")
        call = await wait_pending(client, chat)
        assert call["confirmationTitle"] == "Write outside the working directory?"
        confirm(client, chat, call, approved=True, confirmed="user-action", selectedOptionId="continue")
        await idle(client, chat)
        [done] = calls(client, chat)
    assert (done["status"], done["pastTenseMessage"]) == ("completed", "Did both steps")


async def test_ask_user_publishes_an_input_request_and_the_synced_answer_reaches_the_model(tmp_path: Path, frame_checker: FrameChecker) -> None:
    question = {"id": "colour", "kind": "text", "message": "Favourite colour?", "required": True}
    provider = ScriptedProvider([call_tools(("ask_user", {"questions": [question]})), reply("noted")])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        chat = await new_chat(client)
        client.send_message(chat, "ask me")
        # The question is an input-request part of the running turn (the model's place for it).
        def asked() -> list:
            active = (client.state(chat) or {}).get("activeTurn") or {}
            return [p["request"] for p in active.get("responseParts") or () if p.get("kind") == "inputRequest" and "response" not in p]
        await client.wait_for(lambda m, e: bool(asked()))
        [request] = asked()
        answer = {"state": "submitted", "value": {"kind": "text", "value": "blue"}}
        await client.outcome(client.dispatch(chat, {"type": "chat/inputAnswerChanged", "requestId": request["id"], "questionId": "colour", "answer": answer}))
        client.dispatch(chat, {"type": "chat/inputCompleted", "requestId": request["id"], "response": "accept"})
        await idle(client, chat)
    assert "blue" in tool_results(provider, 1)[0].text


async def test_deny_with_a_reason_chosen_without_one_is_a_plain_deny(tmp_path: Path, frame_checker: FrameChecker) -> None:
    """"Deny with a reason…" stays offered: the options are the chat's state, the same for every
    client that watches it, and AHP says nothing of which clients can collect a reason (our terminal
    and AG-UI do). VS Code 1.139.1 shows it in its Deny dropdown but asks for none: it sends the
    option's id with ``approved: false, reason: "denied"`` and no ``reasonMessage``
    (``tests/e2e/vscode/README.md``, step n); the terminal sends none when its reason prompt is
    left empty. Either is a plain deny, and the model is told exactly what "Deny" tells it."""
    provider = ScriptedProvider([call_tools(("shell", {"command": "rm x"})), call_tools(("shell", {"command": "rm y"})),
                                 call_tools(("shell", {"command": "rm z"})), reply("ok")])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        assert client.protocol_version == "1.0.0"
        session = await client.create_session(provider="scripted")
        chat = default_chat_uri(session)
        client.send_message(chat, "go")
        answers = [  # as VS Code sends it; a blank reason and suggestion; a plain Deny
            {"selectedOptionId": "deny-with-reason"},
            {"selectedOptionId": "deny-with-reason", "reasonMessage": "  ", "userSuggestion": {"text": "", "origin": {"kind": "user"}}},
            {"selectedOptionId": "deny"},
        ]
        for answer in answers:
            call = await wait_pending(client, chat)
            assert [o["id"] for o in call["options"]][-2:] == ["deny", "deny-with-reason"]
            outcome = await client.outcome(client.dispatch(chat, {
                "type": "chat/toolCallConfirmed", "turnId": call["turnId"], "toolCallId": call["toolCallId"],
                "approved": False, "reason": "denied", **answer}))
            assert outcome.accepted, outcome.reason
        await client.wait_for(lambda m, e: (client.state(chat) or {}).get("activeTurn") is None)
        [turn] = client.state(chat)["turns"]
        denied = [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]
    assert [(c["status"], c["reason"], c["selectedOption"]["id"]) for c in denied] == [
        ("cancelled", "denied", "deny-with-reason"), ("cancelled", "denied", "deny-with-reason"), ("cancelled", "denied", "deny")]
    told = [tool_results(provider, index)[0] for index in (1, 2, 3)]
    assert [t.text for t in told] == ["The user denied this tool call."] * 3 and all(t.is_error for t in told)
