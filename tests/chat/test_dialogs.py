"""The confirmation dialog on a real ``agent-host`` whose model is a scripted provider server: what
the edit would do (its diff) comes before the choices, right above where the answer is typed, and
no raw JSON line; a command cut short by cancelling the turn says so (not "skipped"), and the model
is told on the next request that it did not run to completion."""

from __future__ import annotations

import json
from pathlib import Path

from tests.chat._fakehost import agent_host_chat, host_toml
from tests.providers.fake_server import FakeProviderServer, Reply, chat_sse


async def test_an_edit_is_shown_as_its_diff_before_the_choices_without_its_json(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("old line\nsame line\n")
    edit = {"path": "notes.txt", "old_string": "old line", "new_string": "new line"}
    replies = [Reply(200, chat_sse("Editing.", tool_calls=[("call_1", "edit_file", json.dumps(edit))])), Reply(200, chat_sse("Edited."))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        async with agent_host_chat(tmp_path, project, host_toml(server)) as chat:
            chat.send("fix the notes")
            shown = await chat.expect("Choose [", timeout=30)
            chat.send("1")
            await chat.expect("Edited.", timeout=30)
    dialog = shown[shown.index("? Edit notes.txt?"):].splitlines()
    assert dialog.index("+new line") < dialog.index("  1) Allow once") < dialog.index("  4) Deny") < len(dialog) - 1
    assert dialog[-2] == "  e) edit the input first" and dialog[-1] == "Choose ["  # the choices right above the answer
    assert not [line for line in dialog if "{" in line or "old_string" in line]  # no raw JSON
    assert (project / "notes.txt").read_text() == "new line\nsame line\n"
    [result] = [m for m in server.requests[1].json()["messages"] if m["role"] == "tool"]
    assert "notes.txt" in result["content"]  # the model hears the edit ran


async def test_a_command_cut_short_by_cancelling_the_turn_says_so_and_the_model_learns_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    replies = [Reply(200, chat_sse("Waiting.", tool_calls=[("call_1", "shell", json.dumps({"command": "sleep 600"}))])),
               Reply(200, chat_sse("Understood."))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        async with agent_host_chat(tmp_path, project, host_toml(server, '[tools]\nsandbox = "off"\n')) as chat:
            chat.send("wait a while")
            await chat.expect("Choose [", timeout=30)
            chat.send("1")
            await chat.expect("▶ ", timeout=30)
            chat.ctrl_c()
            shown = await chat.expect("(cancelled)", timeout=30)
            chat.send("what happened?")
            await chat.expect("Understood.", timeout=30)
    assert "⊘ Run Command cancelled with the turn" in shown and "skipped" not in shown
    [result] = [m for m in server.requests[1].json()["messages"] if m["role"] == "tool"]
    assert "did not run to completion" in result["content"]
