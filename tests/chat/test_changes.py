"""``/diff``, ``/undo`` and ``/rewind`` in a real ``agent-host`` on a pty, whose model is a scripted
provider server calling the host's real file tools: what the user sees (diffs, the turn an undo
takes back, conflicts named), what happens to the files, and what the model receives after the
conversation was rewound (the dropped turns are gone from its request)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.chat._fakehost import host_toml, spawn_agent_host
from tests.providers.fake_server import FakeProviderServer, Reply, chat_sse

AUTO = "[tools]\nauto_approve = true\n"


def _tool(call_id: str, name: str, **args: str) -> Reply:
    return Reply(200, chat_sse(tool_calls=[(call_id, name, json.dumps(args))]))


def _user_texts(body: dict) -> list[str]:
    texts = []
    for message in body["messages"]:
        if message["role"] == "user":
            content = message["content"]
            texts.append(content if isinstance(content, str) else " ".join(p.get("text", "") for p in content))
    return texts


async def test_diff_undo_with_a_conflict_and_rewind_of_files_and_conversation(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    notes, todo = project / "notes.txt", project / "todo.txt"
    replies = [
        _tool("c1", "write_file", path="notes.txt", content="one\n"), Reply(200, chat_sse("Wrote notes.")),
        _tool("c2", "edit_file", path="notes.txt", old_string="one", new_string="two"), Reply(200, chat_sse("Edited notes.")),
        _tool("c3", "write_file", path="todo.txt", content="buy milk\n"), Reply(200, chat_sse("Added a todo.")),
        Reply(200, chat_sse("Starting over from the notes.")),
    ]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        chat = spawn_agent_host(tmp_path, project, host_toml(server, AUTO))
        try:
            await chat.expect("/help for commands", timeout=30)
            chat.send("/undo")
            await chat.expect("no session yet: nothing to undo")
            for message, answer in (("create notes", "Wrote notes."), ("edit notes", "Edited notes."), ("add a todo", "Added a todo.")):
                chat.send(message)
                await chat.expect(answer, timeout=30)
            assert notes.read_text() == "two\n" and todo.read_text() == "buy milk\n"

            # /diff: everything the session changed, as diffs against before the session.
            chat.send("/diff")
            shown = await chat.expect("2 files, +2 -0")
            assert "This session's changes not yet kept or undone" in shown
            assert "notes.txt  +1 -0  created" in shown and "todo.txt  +1 -0  created" in shown
            await chat.expect("+++ b/notes.txt")
            await chat.expect("+two")
            await chat.expect("+buy milk")
            chat.send("/diff 2")
            shown = await chat.expect("1 file, +1 -1")
            assert "Turn 2 changed" in shown and "notes.txt  +1 -1  changed" in shown
            await chat.expect("-one")
            await chat.expect("+two")

            # /undo takes back the last turn that changed files, after asking.
            chat.send("/undo")
            shown = await chat.expect("[y/N]")
            assert "Turn 3 (add a todo) changed:" in shown and "todo.txt  +1 -0  created" in shown
            chat.send("y")
            await chat.expect("(turn 3) Undid the changes to 1 file.")
            assert not todo.exists() and notes.read_text() == "two\n"

            # A file edited outside the agent since is never overwritten: the host says so.
            notes.write_text("my own words\n")
            chat.send("/undo")
            shown = await chat.expect("[y/N]")
            assert "Turn 2 (edit notes) changed:" in shown
            chat.send("y")
            await chat.expect("! turn 2: Left notes.txt alone: its content changed since the agent wrote it")
            assert notes.read_text() == "my own words\n"

            # Put it back, then rewind (picked from the menu) to before turn 2: files and conversation.
            notes.write_text("two\n")
            chat.send("/rewind")
            shown = await chat.expect("Turn [1-3] (Enter cancels):")
            assert "1) create notes" in shown and "2) edit notes" in shown and "3) add a todo" in shown
            chat.send("2")
            shown = await chat.expect("Choose [1-3] (Enter cancels):")
            assert "1) files and conversation" in shown
            chat.send("1")
            await chat.expect("(turn 2) Undid the changes to 1 file.")
            await chat.expect("(the conversation now ends before turn 2; its message was: edit notes)")
            assert notes.read_text() == "one\n"

            chat.send("start over")
            await chat.expect("Starting over from the notes.", timeout=30)
            chat.send("/rewind 9")
            await chat.expect("pick a turn from 1 to 2")
            chat.send("/quit")
            assert await chat.wait(30) == 0
        finally:
            chat.close()
    # The model's view after the rewind: turn 1, then the new message; turns 2 and 3 are gone.
    last = server.requests[-1].json()
    assert _user_texts(last)[0].endswith("create notes") and _user_texts(last)[-1].endswith("start over")
    sent = json.dumps(last)
    assert "edit notes" not in sent and "add a todo" not in sent and "buy milk" not in sent


async def test_in_a_terminal_that_draws_diff_is_highlighted_and_a_rewound_message_waits_in_the_input(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "greet.py").write_text("def greet():\n    return 1\n")
    replies = [
        Reply(200, chat_sse("Greeting first.")),
        _tool("c1", "edit_file", path="greet.py", old_string="return 1", new_string="return 42"), Reply(200, chat_sse("Now 42.")),
        Reply(200, chat_sse("Made it 42 again.")),
    ]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        chat = spawn_agent_host(tmp_path, project, host_toml(server, AUTO), tty=True)
        try:
            await chat.expect("/help for commands", timeout=30)
            await chat.line_editor()
            chat.send("hello")
            await chat.expect("Greeting first.", timeout=30)
            chat.send("make greet return 42")
            await chat.expect("Now 42.", timeout=30)
            chat.send("/diff")
            await chat.printed("+    return 42")
            raw = chat.raw.decode()
            added = raw[raw.rindex("+\x1b[0m"):].split("\n", 1)[0]  # the added line as the terminal got it
            assert len(set(re.findall(r"\x1b\[38;5;(\d+)", added))) >= 2, repr(added)  # highlighted for Python
            chat.send("/rewind 2 both")
            await chat.expect("(turn 2) Undid the changes to 1 file.", timeout=30)
            await chat.expect("(the conversation now ends before turn 2; its message is back in the input line)")
            assert (project / "greet.py").read_text() == "def greet():\n    return 1\n"
            await chat.expect("make greet return 42")  # drawn in the input line, ready to edit
            chat.send("")  # Enter sends it as it is
            await chat.expect("Made it 42 again.", timeout=30)
            chat.send("/quit")
            assert await chat.wait(30) == 0
        finally:
            chat.close()
    again = server.requests[-1].json()
    first, second = _user_texts(again)  # turn 1, then the message sent again: turn 2 is gone
    assert first.endswith("hello") and second == "make greet return 42"
    assert "Now 42." not in json.dumps(again)
