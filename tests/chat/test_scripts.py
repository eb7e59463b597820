"""``agent-host chat -p`` as scripts run it: stdin piped in, JSON output a program parses, sessions
continued or resumed, and limits that end a stalled or runaway turn. A real host with the scenario
agent; what the agent received is read from the host's store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from host.transport.server import RunningHost
from tests.chat._hostwait import chats, until_host
from tests.chat._scenario import MODEL_ID
from tests.chat.test_oneshot import run_p


def _messages(host: RunningHost) -> list[str]:
    return [t["message"]["text"] for _, state in chats(host) for t in state.get("turns") or ()]


def _lines(out: str) -> list[dict[str, Any]]:
    assert out.endswith("\n")
    return [json.loads(line) for line in out.splitlines()]  # every line is one whole object


async def test_piped_stdin_follows_the_message_between_markers(chat_host: RunningHost, workdir: Path) -> None:
    diff = b"diff --git a/x.py b/x.py\n-old\n+new\n"
    code, out, _ = await run_p(chat_host.url, "-p", "review this", cwd=workdir, stdin=diff)
    assert code == 0
    assert out == "Hello from the scenario agent (effort low)\n"
    assert _messages(chat_host) == ["review this\n\n<stdin>\ndiff --git a/x.py b/x.py\n-old\n+new\n</stdin>"]


async def test_p_dash_or_p_alone_sends_stdin_as_the_message(chat_host: RunningHost, workdir: Path) -> None:
    assert (await run_p(chat_host.url, "-p", "-", cwd=workdir, stdin=b"hello from a pipe\n"))[0] == 0
    assert (await run_p(chat_host.url, "-p", cwd=workdir, stdin=b"think about it"))[:2] == (0, "the answer is 42\n")
    assert _messages(chat_host) == ["hello from a pipe\n", "think about it"]


async def test_nothing_to_send_is_a_usage_error(chat_host: RunningHost, workdir: Path) -> None:
    code, out, err = await run_p(chat_host.url, "-p", cwd=workdir, stdin=b"")
    assert (code, out) == (2, "")
    assert "-p has nothing to send" in err
    assert chats(chat_host) == []


async def test_json_prints_one_object_with_the_result_at_the_end(chat_host: RunningHost, workdir: Path) -> None:
    code, out, _ = await run_p(chat_host.url, "-p", "hello", "--output-format", "json", cwd=workdir)
    assert code == 0
    [result] = _lines(out)
    [(session, _)] = chats(chat_host)
    assert result["type"] == "result" and result["subtype"] == "success" and result["is_error"] is False
    assert result["result"] == "Hello from the scenario agent (effort low)"
    assert result["session"] == session and result["session_id"] == session.rsplit("/", 1)[-1]
    assert result["usage"]["input_tokens"] == 3 and result["usage"]["output_tokens"] == 5
    assert result["num_turns"] == 1 and result["exit_code"] == 0 and result["cost_usd"] is None


async def test_json_says_when_the_turn_errored(chat_host: RunningHost, workdir: Path) -> None:
    code, out, err = await run_p(chat_host.url, "-p", "fail", "--output-format", "json", cwd=workdir)
    assert code == 1
    [result] = _lines(out)
    assert result["is_error"] is True and result["subtype"] == "error" and result["exit_code"] == 1
    assert result["result"] == "trying"
    assert "quota exceeded" in result["error"]


async def test_stream_json_is_one_object_per_event_as_a_script_reads_it(chat_host: RunningHost, workdir: Path) -> None:
    code, out, _ = await run_p(chat_host.url, "-p", "confirm", "--output-format", "stream-json", cwd=workdir)
    assert code == 3  # completed, but the client denied the tool call for the user
    events = _lines(out)
    [(session, _)] = chats(chat_host)
    assert events[0] == {"type": "init", "session_id": session.rsplit("/", 1)[-1], "session": session,
                         "agent": "scenario", "model": "scene-1", "cwd": str(workdir)}
    kinds = [e["type"] for e in events]
    assert kinds.index("tool_call") < kinds.index("decision") < kinds.index("tool_result") < kinds.index("text_delta")
    call = next(e for e in events if e["type"] == "tool_call")
    assert call["tool"] == "shell" and call["status"] == "pending-confirmation" and call["input"] == {"command": "ls -la"}
    decision = next(e for e in events if e["type"] == "decision")
    assert decision["decision"] == "denied" and decision["option"] == "deny"
    tool_result = next(e for e in events if e["type"] == "tool_result")
    assert tool_result["success"] is False and "Denied automatically" in tool_result["error"]
    assert events[-1]["type"] == "result" and events[-1]["subtype"] == "denied" and events[-1]["exit_code"] == 3
    text = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert text == events[-1]["result"] and text.startswith("denied (Denied automatically")


async def test_stream_json_streams_the_answer_in_pieces(chat_host: RunningHost, workdir: Path) -> None:
    code, out, err = await run_p(chat_host.url, "-p", "think", "--output-format", "stream-json", cwd=workdir)
    assert code == 0
    events = _lines(out)
    assert "".join(e["text"] for e in events if e["type"] == "reasoning_delta") == "pondering deeply"
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == "the answer is 42"
    assert events[-1]["result"] == "the answer is 42"
    assert "thinking" not in out.split("\n")[0]


async def test_continue_opens_the_last_session_of_this_directory(chat_host: RunningHost, workdir: Path, tmp_path: Path) -> None:
    code, _, err = await run_p(chat_host.url, "-p", "hello", "--continue", cwd=workdir)
    assert code == 2 and "no session to continue" in err
    assert (await run_p(chat_host.url, "-p", "hello", cwd=workdir))[0] == 0
    assert (await run_p(chat_host.url, "-p", "again", "--continue", cwd=workdir))[0] == 0
    [(_, state)] = chats(chat_host)
    assert [t["message"]["text"] for t in state["turns"]] == ["hello", "again"]


async def test_resume_takes_a_session_id_or_its_uri(chat_host: RunningHost, workdir: Path) -> None:
    code, out, _ = await run_p(chat_host.url, "-p", "hello", "--output-format", "json", cwd=workdir)
    first = json.loads(out)
    assert (await run_p(chat_host.url, "-p", "second", "--resume", first["session_id"], cwd=workdir))[0] == 0
    assert (await run_p(chat_host.url, "-p", "third", "--resume", first["session"], cwd=workdir))[0] == 0
    [(_, state)] = chats(chat_host)
    assert [t["message"]["text"] for t in state["turns"]] == ["hello", "second", "third"]
    # Without an id a script cannot pick one: a usage error that says what to do instead.
    code, out, err = await run_p(chat_host.url, "--resume", "-p", "fourth", cwd=workdir)
    assert (code, out) == (2, "") and "--resume needs a session id with -p (or --continue" in err


async def test_model_with_resume_switches_the_resumed_session_instead_of_being_ignored(chat_host: RunningHost, workdir: Path) -> None:
    code, out, _ = await run_p(chat_host.url, "-p", "hello", "--output-format", "json", cwd=workdir)
    first = json.loads(out)
    [(_, chat)] = chats(chat_host)
    assert chat["draft"]["model"]["id"] == MODEL_ID
    code, out, err = await run_p(chat_host.url, "-p", "second", "--resume", first["session_id"], "--model", "offline-echo", cwd=workdir)
    assert code == 0, err
    [(_, chat)] = chats(chat_host)
    assert chat["draft"]["model"]["id"] == "offline-echo"  # the session's model from its next turn on, as /model sets it
    code, _, err = await run_p(chat_host.url, "-p", "third", "--resume", first["session_id"], "--model", "no-such-model", cwd=workdir)
    assert code == 2 and "no-such-model" in err


async def test_max_turns_stops_a_turn_whose_tools_would_ask_the_model_again(chat_host: RunningHost, workdir: Path) -> None:
    code, out, err = await run_p(chat_host.url, "-p", "confirm", "--yes", "--max-turns", "1", "--output-format", "json", cwd=workdir)
    assert code == 1
    [result] = _lines(out)
    assert result["subtype"] == "max_turns" and result["is_error"] is True
    assert "--max-turns 1" in err
    [(_, state)] = chats(chat_host)
    assert state["turns"][-1]["state"] == "cancelled"
    assert "tool finished" not in result["result"]  # the tool never ran
    code, out, _ = await run_p(chat_host.url, "-p", "confirm", "--yes", "--max-turns", "2", cwd=workdir)
    assert (code, out) == (0, "tool finished via allow-once\n")


async def test_a_silent_agent_is_given_up_after_the_timeout_and_the_error_says_so(chat_host: RunningHost, workdir: Path) -> None:
    code, out, err = await run_p(chat_host.url, "-p", "slow", "--timeout", "1", "--output-format", "json", cwd=workdir, timeout=15)
    assert code == 1
    [result] = _lines(out)
    assert result["subtype"] == "timeout"
    assert "no news from the agent for 1s (--timeout); the turn was cancelled" in err
    [(_, state)] = chats(chat_host)
    assert state["turns"][-1]["state"] == "cancelled"


async def test_script_options_need_p(chat_host: RunningHost, workdir: Path) -> None:
    code, _, err = await run_p(chat_host.url, "--output-format", "json", cwd=workdir)
    assert code == 2 and "--output-format only applies with -p" in err


async def test_the_interactive_chat_continues_the_last_session_too(chat_host: RunningHost, workdir: Path, spawn_chat: Any) -> None:
    assert (await run_p(chat_host.url, "-p", "hello", cwd=workdir))[0] == 0
    chat = spawn_chat("--continue")
    await chat.expect("Hello from the scenario agent (effort low)")  # the history of the session
    chat.send("again")
    await until_host(chat_host, lambda: len(chats(chat_host)[0][1].get("turns") or ()) == 2)
    chat.send("/quit")
    assert await chat.wait() == 0
