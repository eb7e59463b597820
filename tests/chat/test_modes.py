"""Permission modes from the terminal: a real ``agent-host`` on a pty whose model is a scripted
provider server. Shift+Tab switches the mode and the status line shows it; the model of a session
in plan mode is offered read-only tools only; ``/mode`` switches in the line terminal; and
``--permission-mode`` does it from the command line, for the chat and for ``-p``."""

from __future__ import annotations

import json
from pathlib import Path

from tests.chat._fakehost import agent_host_chat, host_toml, spawn_agent_host
from tests.providers.fake_server import FakeProviderServer, Reply, SeenRequest, chat_sse

SHIFT_TAB = "\x1b[Z"
WRITERS = {"write_file", "edit_file", "shell"}


def _tools(request: SeenRequest) -> set[str]:
    return {tool["function"]["name"] for tool in request.json().get("tools") or ()}


async def test_shift_tab_cycles_the_mode_shown_in_the_status_line_and_plan_mode_offers_only_read_only_tools(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    replies = [Reply(200, chat_sse("I would start by reading the README."))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        async with agent_host_chat(tmp_path, project, host_toml(server), tty=True) as chat:
            chat.type(SHIFT_TAB)
            await chat.expect("accept edits on (shift+tab to cycle)")
            chat.type(SHIFT_TAB)
            chat.send("/mode")  # (the live region is redrawn by differences: a new prompt draws it whole)
            await chat.expect("● plan")
            await chat.expect("plan mode on (shift+tab to cycle)")
            chat.send("how would you clean up?")
            await chat.expect("I would start by reading the README.", timeout=30)
            await chat.expect("plan mode on")  # still in plan mode after the turn: the session's own mode
            chat.type(SHIFT_TAB)  # plan → default: the reminder goes
            chat.send("/mode")
            await chat.expect("● default")
    [first] = server.requests
    offered = _tools(first)
    assert "propose_plan" in offered and "read_file" in offered and not offered & WRITERS
    system = next(m["content"] for m in first.json()["messages"] if m["role"] == "system")
    assert "plan mode" in system


async def test_mode_in_the_line_terminal_switches_to_full_auto_and_a_command_runs_without_asking(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    replies = [Reply(200, chat_sse("Running it.", tool_calls=[("call_1", "shell", json.dumps({"command": "echo ran > out.txt"}))])),
               Reply(200, chat_sse("It ran."))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        async with agent_host_chat(tmp_path, project, host_toml(server, '[tools]\nsandbox = "off"\n')) as chat:
            chat.send("/mode warp")
            await chat.expect("no permission mode 'warp'; choose one of default, accept-edits, plan, full-auto")
            chat.send("/mode full-auto")
            await chat.expect("(permission mode: full-auto")
            chat.send("make out.txt")
            await chat.expect("It ran.", timeout=30)
            shown = chat.text
    assert (project / "out.txt").read_text() == "ran\n"
    assert "Choose [" not in shown  # nothing asked


async def test_the_permission_mode_flag_with_p_accepts_edits_but_refuses_a_command_for_the_absent_user(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    replies = [Reply(200, chat_sse("Editing.", tool_calls=[("call_1", "write_file", json.dumps({"path": "notes.txt", "content": "hi\n"})),
                                                          ("call_2", "shell", json.dumps({"command": "echo no > cmd.txt"}))])),
               Reply(200, chat_sse("Done."))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        run = spawn_agent_host(tmp_path, project, host_toml(server), "--permission-mode", "accept-edits", "-p", "write the notes")
        try:
            await run.expect("Done.", timeout=30)
            status = await run.wait(30)
        finally:
            run.close()
    assert (project / "notes.txt").read_text() == "hi\n"  # the edit ran without asking
    assert not (project / "cmd.txt").exists()  # the command asked, and -p without --yes refuses it
    assert status == 3


async def test_a_plan_approved_in_the_terminal_leaves_plan_mode_and_nothing_ran_before(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    plan = "1. Write notes.txt with a greeting"
    replies = [Reply(200, chat_sse("Here is my plan.", tool_calls=[("call_1", "propose_plan", json.dumps({"plan": plan}))])),
               Reply(200, chat_sse("Carrying it out.", tool_calls=[("call_2", "write_file", json.dumps({"path": "notes.txt", "content": "hi\n"}))])),
               Reply(200, chat_sse("Notes written."))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        async with agent_host_chat(tmp_path, project, host_toml(server), "--permission-mode", "plan") as chat:
            chat.send("add notes")
            await chat.expect(plan, timeout=30)
            await chat.expect("1) Yes, and accept edits")
            await chat.expect("3) No, keep planning")
            assert not (project / "notes.txt").exists()
            chat.send("1")
            await chat.expect("Notes written.", timeout=30)
            chat.send("/mode")
            await chat.expect("● accept-edits")
    first, second, third = server.requests
    assert not _tools(first) & WRITERS and "propose_plan" in _tools(first)
    assert WRITERS <= _tools(second) and "propose_plan" not in _tools(second)
    assert (project / "notes.txt").read_text() == "hi\n"  # accept-edits: the edit ran without asking


async def test_an_edit_accept_edits_ran_without_asking_shows_its_diff(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("tea\n")
    edit = {"path": "notes.txt", "old_string": "tea", "new_string": "green tea"}
    replies = [Reply(200, chat_sse("Editing.", tool_calls=[("call_1", "edit_file", json.dumps(edit))])), Reply(200, chat_sse("Edited."))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        async with agent_host_chat(tmp_path, project, host_toml(server), "--permission-mode", "accept-edits") as chat:
            chat.send("make it green")
            await chat.expect("Edited.", timeout=30)
            shown = chat.text
    assert "Choose [" not in shown  # not asked ...
    assert "-tea" in shown and "+green tea" in shown  # ... and the change it made is shown, not only (+1 -1)
    assert (project / "notes.txt").read_text() == "green tea\n"
