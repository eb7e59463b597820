"""The interactive terminal client, driven in a real pseudo-terminal against a real host."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from host.transport.server import RunningHost
from tests.chat._hostwait import chats, sessions, until_host
from tests.chat._pty import ChatProcess

Spawn = Callable[..., ChatProcess]


async def test_a_message_streams_the_answer_with_usage(spawn_chat: Spawn) -> None:
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send("hello there")
    await chat.expect("Hello from the scenario agent (effort low)")
    await chat.expect("[3 in · 5 out · scene-1]")
    await chat.expect("> ")
    chat.send("/quit")
    assert await chat.wait() == 0


@pytest.mark.parametrize(
    ("choice", "reason", "expected"),
    [
        ("1", None, "tool finished via allow-once"),
        ("2", None, "tool finished via allow-session"),
        ("3", None, "tool finished via allow-always"),
        ("4", "", "denied (no reason)"),
        ("5", "too risky", "denied (too risky)"),
    ],
)
async def test_a_confirmation_offers_the_hosts_options_and_sends_the_chosen_one(
    spawn_chat: Spawn, chat_host: RunningHost, choice: str, reason: str | None, expected: str
) -> None:
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send("confirm please")
    prompt = await chat.expect("Choose [1-5, e]: ")
    assert "Run ls -la?" in prompt
    assert "$ ls -la" in prompt
    for label in ("1) Allow once", "2) Allow in this session", "3) Always allow", "4) Deny", "5) Deny with reason"):
        assert label in prompt
    assert prompt.count("──") == 2  # dividers where the option group changes
    chat.send(choice)
    if choice == "5":  # only the option that says so asks for a reason
        await chat.expect("Reason to give the agent")
        chat.send(reason)
    elif reason is None:
        await chat.expect("✓ shell Ran")
        await chat.expect("all good")  # the short result under the finished call
    await chat.expect(expected)
    assert "Reason to give" not in chat.text or choice == "5"
    [(_, state)] = chats(chat_host)
    call = state["turns"][-1]["responseParts"][0]["toolCall"]
    option_id = {"1": "allow-once", "2": "allow-session", "3": "allow-always", "4": "deny", "5": "deny-reason"}[choice]
    assert call["selectedOption"]["id"] == option_id
    if reason is None:
        assert call["status"] == "completed"
    else:
        assert call["status"] == "cancelled" and call["reason"] == "denied"
        assert call.get("reasonMessage") == (reason or None)


async def test_the_shell_command_can_be_edited_before_it_runs(spawn_chat: Spawn, chat_host: RunningHost) -> None:
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send("confirm please")
    await chat.expect("Choose [1-5, e]: ")
    chat.send("e")
    await chat.expect("New command (Enter keeps it): ")
    chat.send("echo safe")
    await chat.expect("now pick an allow option")
    await chat.expect("Choose [1-5, e]: ")
    chat.send("1")
    await chat.expect('Ran {"command": "echo safe"}')
    [(_, state)] = chats(chat_host)
    assert state["turns"][-1]["responseParts"][0]["toolCall"]["toolInput"] == '{"command": "echo safe"}'


async def test_file_edits_are_previewed_as_a_diff_and_json_input_is_editable(spawn_chat: Spawn) -> None:
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send("patch it")
    preview = await chat.expect("Choose [1-2, e]: ")
    assert "--- a/notes.txt" in preview and "+++ b/notes.txt" in preview
    assert "-old line" in preview and "+new line" in preview and " same line" in preview
    chat.send("e")
    await chat.expect("New input as JSON on one line (Enter keeps it): ")
    chat.send("{not json")
    await chat.expect("that is not valid JSON")
    chat.send('{"path": "notes.txt", "text": "edited"}')
    await chat.expect("Choose [1-2, e]: ")
    chat.send("y")
    await chat.expect('Ran {"path": "notes.txt", "text": "edited"}')


async def test_a_result_waiting_for_acceptance_is_accepted(spawn_chat: Spawn) -> None:
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send("result please")
    await chat.expect("page body")
    await chat.expect("Accept this result? [y/n] ")
    chat.send("y")
    await chat.expect("result accepted")


async def test_an_input_request_asks_each_question_kind(spawn_chat: Spawn, scenario: Any) -> None:
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send("ask me")
    await chat.expect("A few questions")
    await chat.expect("Your name?")
    chat.send("")  # required: refused
    await chat.expect("this question needs an answer")
    chat.send("Ada")
    await chat.expect("Your age?")
    chat.send("old")
    await chat.expect("type a whole number")
    chat.send("36")
    await chat.expect("Proceed?")
    chat.send("")  # the default (yes)
    await chat.expect("2) Blue")
    chat.send("teal")  # freeform allowed
    await chat.expect("3) Olives")
    chat.send("1, 3")
    await chat.expect("answers: name=Ada age=36 ok=True color=+['teal'] toppings=['cheese', 'olives']")
    [completed] = scenario.completed_inputs
    assert completed["response"] == "accept"


async def test_an_input_request_can_be_declined(spawn_chat: Spawn) -> None:
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send("ask me")
    await chat.expect("Your name?")
    chat.send("/decline")
    await chat.expect("input decline")


async def test_text_typed_during_a_turn_steers_it_and_double_angle_queues(spawn_chat: Spawn, chat_host: RunningHost) -> None:
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send("steer me")
    await chat.expect("waiting for steering")
    chat.send(">> hello after")
    await chat.expect("(queued for after the turn)")
    chat.send("go left")
    await chat.expect("(steering the running turn)")
    await chat.expect("steered by: go left")
    # The host starts the queued message as the next turn; the client follows it live.
    await chat.expect("Hello from the scenario agent")
    assert await chat.printed("(the turn took in your steering message)") == 1
    await until_host(chat_host, lambda: len(chats(chat_host)[0][1].get("turns") or []) == 2)
    [(_, state)] = chats(chat_host)
    assert [t["message"]["text"] for t in state["turns"]] == ["steer me", "hello after"]


async def test_a_steering_message_the_turn_did_not_take_in_runs_next_in_order(spawn_chat: Spawn, chat_host: RunningHost) -> None:
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send("late work")
    await chat.expect("finishing up")
    chat.send(">> queued first")
    await chat.expect("(queued for after the turn)")
    chat.send("too late steering")  # the turn ends without another model call
    await chat.expect("(steering the running turn)")
    await chat.expect("done")
    shown = await chat.expect("» queued first", timeout=20)
    # What happened to it is on screen, and it ran before the message queued earlier.
    assert "» too late steering" in shown
    assert "runs as its own turn" in shown.split("» too late steering", 1)[1]
    assert "(the turn took in your steering message)" not in shown
    await until_host(chat_host, lambda: len(chats(chat_host)[0][1].get("turns") or []) == 3)
    [(_, state)] = chats(chat_host)
    assert [t["message"]["text"] for t in state["turns"]] == ["late work", "too late steering", "queued first"]


async def test_ctrl_c_cancels_the_turn_and_ctrl_c_when_idle_exits(spawn_chat: Spawn, chat_host: RunningHost) -> None:
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send("slow down")
    await chat.expect("working")
    chat.ctrl_c()
    await chat.expect("cancelling the turn")
    await chat.expect("(cancelled)")
    await until_host(chat_host, lambda: bool(chats(chat_host)[0][1].get("turns")))
    [(_, state)] = chats(chat_host)
    assert state["turns"][-1]["state"] == "cancelled"
    await chat.expect("> ")
    chat.ctrl_c()  # the second of a pair with the one that cancelled: exits ...
    while not chat._closed and "press Ctrl-C again to exit" not in chat.text:
        await asyncio.sleep(0.02)  # (which of the two happens is not an event to wait on)
    if not chat._closed:  # ... unless more than two seconds went by: one alone does not exit
        chat.ctrl_c()
    assert await chat.wait() == 0


async def test_a_failed_turn_shows_the_error_message(spawn_chat: Spawn) -> None:
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send("fail now")
    await chat.expect("error: The provider refused: quota exceeded. (quotaExceeded)")


async def test_reasoning_is_shown_before_the_answer(spawn_chat: Spawn) -> None:
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send("think hard")
    await chat.expect("thinking: pondering deeply")
    await chat.expect("the answer is 42")


async def test_a_session_is_resumed_with_its_history_and_can_be_forked(spawn_chat: Spawn, chat_host: RunningHost) -> None:
    first = spawn_chat()
    await first.expect("/help for commands")
    first.send("hello one")
    await first.expect("[3 in")
    first.send("/quit")
    assert await first.wait() == 0
    [(uri, _)] = chats(chat_host)

    second = spawn_chat("--session", uri)
    history = await second.expect("> ")
    assert "#1 you: hello one" in history and "Hello from the scenario agent" in history
    second.send("/sessions")
    await second.expect("1) New Session")
    second.send("/fork 1")
    await second.expect("(forked at turn 1)")
    await second.expect("#1 you: hello one")
    # The fork is a second chat of the one session (AHP 1.0.0's model), which holds both.
    [(_, session)] = sessions(chat_host)
    assert len(session["chats"]) == 2


async def test_model_options_come_from_the_config_schema_and_apply_to_the_next_turn(spawn_chat: Spawn) -> None:
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send("/model")
    await chat.expect("effort=low|high")
    chat.send("/model scene-1 effort=extreme")
    await chat.expect("effort must be one of low, high")
    chat.send("/model scene-1 effort=high")
    await chat.expect("(model scene-1 for the new session)")
    chat.send("hello")
    await chat.expect("(effort high)")


async def test_at_path_attaches_a_file_and_an_unknown_slash_command_is_refused(spawn_chat: Spawn, workdir: Any) -> None:
    (workdir / "plan.md").write_text("# plan\n")
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send("hello see @plan.md")
    await chat.expect("(attached plan.md)")
    await chat.expect("with plan.md")
    await chat.expect("> ")
    chat.send("/deploy now")  # the host's completions offer no skill or command of that name
    await chat.expect("unknown command /deploy; /help lists commands")


async def test_a_wrong_token_is_a_clear_error_without_a_traceback(spawn_chat: Spawn, chat_host: RunningHost) -> None:
    chat = spawn_chat(url=chat_host.url.replace("token=", "token=wrong"))
    output = await chat.expect("token is missing or wrong")
    assert await chat.wait() == 2
    assert "Traceback" not in chat.text and "wrong" + chat_host.token not in output


async def test_an_unknown_agent_exits_2_before_the_chat_starts(spawn_chat: Spawn) -> None:
    chat = spawn_chat("--agent", "nope")
    await chat.expect("no agent 'nope' (agents: scenario, offline)")
    assert await chat.wait() == 2
    assert "Traceback" not in chat.text


async def test_a_new_sessions_trust_question_is_answered_before_its_first_message(
        spawn_chat: Spawn, chat_host: RunningHost, workdir: Any) -> None:
    (workdir / ".github" / "hooks").mkdir(parents=True)
    hook = {"type": "command", "command": "true"}
    (workdir / ".github" / "hooks" / "start.json").write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [hook]}]}}))
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send("hello")
    await chat.expect("Do you trust the files in")
    await chat.expect("3) Don't trust it")
    chat.send("1")
    await chat.expect("Hello from the scenario agent")
    await chat.expect("[3 in")  # the turn's end: /trust waits for a running turn
    folder = str(workdir.resolve())
    assert chat_host.host.store.state("ahp-root://")["config"]["values"]["trustedFolders"] == [folder]
    [(uri, _)] = sessions(chat_host)
    assert chat_host.host.customizations.runtime(uri).folder_trusted
    [(_, chat_state)] = chats(chat_host)
    assert [turn["message"]["text"] for turn in chat_state["turns"]] == ["hello"]  # the answer was not sent as a message

    chat.send("/trust")
    await chat.expect("trusted by the host's trusted folders (its hooks")
    chat.send("/trust revoke")
    await chat.expect("(no longer trusted: ")
    await until_host(chat_host, lambda: not chat_host.host.store.state("ahp-root://")["config"]["values"]["trustedFolders"])
    await until_host(chat_host, lambda: not chat_host.host.customizations.runtime(uri).folder_trusted)
    for _ in range(50):  # the host has published it; the chat shows it once the update reached it
        chat.send("/plugins")
        shown = await chat.expect(".github/hooks")
        if "degraded" in await chat.expect("\n"):
            break
    else:
        raise AssertionError(f"the hooks never showed as waiting: {shown}")
    await chat.expect("Waiting for trust: its hooks run once you trust")
