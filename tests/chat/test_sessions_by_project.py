"""Sessions by project in a real ``agent-host`` on a pty, with a scripted model: ``--resume``
without an id lists this directory's sessions first (age, first message), hides sub-agent children
and ``-p`` runs unless ``/resume --all`` asks, replays the picked session's history rendered as a
live answer is (markdown, not raw), and the model then continues that conversation."""

from __future__ import annotations

import json
from pathlib import Path

from tests.chat._fakehost import host_toml, spawn_agent_host
from tests.chat._pty import ChatProcess
from tests.providers.fake_server import FakeProviderServer, Reply, chat_sse

ANSWER = "# Cart\n\nThe **total** is summed in `cart.py`.\n\n- taxes last\n- rounding per line\n"
AUTO = "[tools]\nauto_approve = true\n"


async def _run(chat: ChatProcess, *steps: tuple[str, str]) -> None:
    try:
        await chat.expect("/help for commands", timeout=30)
        for message, answer in steps:
            chat.send(message)
            await chat.expect(answer, timeout=30)
        chat.send("/quit")
        assert await chat.wait(30) == 0
    finally:
        chat.close()


async def test_resume_lists_this_directorys_sessions_first_and_replays_markdown_rendered(tmp_path: Path) -> None:
    shop, blog = tmp_path / "shop", tmp_path / "blog"
    shop.mkdir()
    blog.mkdir()
    task = json.dumps({"description": "find the cart code", "prompt": "Where is the cart total computed?"})
    replies = [
        Reply(200, chat_sse(tool_calls=[("t1", "task", task)])),   # the shop session hands a job to a sub-agent
        Reply(200, chat_sse("In cart.py.")),                        # the sub-agent's answer
        Reply(200, chat_sse(ANSWER)),                               # the shop session's answer
        Reply(200, chat_sse("Looks fine.")),                        # agent-host -p in the shop
        Reply(200, chat_sse("Hello, blog.")),                       # a session in another project
        Reply(200, chat_sse("Add a test for rounding.")),           # the resumed shop session
    ]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        toml = host_toml(server, AUTO)
        await _run(spawn_agent_host(tmp_path, shop, toml), ("explain the cart module", "rounding per line"))
        script = spawn_agent_host(tmp_path, shop, toml, "-p", "review this")
        try:
            await script.expect("Looks fine.", timeout=30)
            assert await script.wait(30) == 0
        finally:
            script.close()
        await _run(spawn_agent_host(tmp_path, blog, toml), ("hello from the blog", "Hello, blog."))

        chat = spawn_agent_host(tmp_path, shop, toml, "--resume", tty=True)
        try:
            await chat.expect("Resume which? [1-2] (Enter cancels):", timeout=30)
            await chat.printed("--all lists them)")  # printed above the prompt, which may be drawn first
            listing = chat.text.replace("Resume which? [1-2] (Enter cancels):", "\n")  # wherever it was drawn
            lines = [line.strip() for line in listing.splitlines()]
            assert f"In {shop}:" in lines and "In other directories:" in lines
            here = lines.index(f"In {shop}:")
            assert lines[here + 1].startswith("1) explain the cart module · just now")
            assert lines[here + 2] == "In other directories:"
            assert lines[here + 3].startswith("2) hello from the blog · just now") and str(blog) in lines[here + 3]
            assert "(1 -p sessions hidden: --all lists them)" in lines
            assert "review this" not in listing and "Sub-agent" not in listing  # a sub-agent is a chat, never listed
            chat.send("1")
            history = await chat.expect("rounding per line", timeout=30)
            assert "#1 you: explain the cart module" in history
            # Rendered as a live answer is: the heading, bold and list drawn, no markdown syntax left.
            assert "Cart" in history and "total" in history and " • taxes last" in history
            for raw in ("# Cart", "**total**", "- taxes last", "`cart.py`"):
                assert raw not in history, raw
            assert "\x1b[1mtotal" in chat.raw.decode()  # bold, as a terminal shows it
            await chat.line_editor()
            chat.send("and the tests?")
            await chat.expect("Add a test for rounding.", timeout=30)
            chat.send("/resume --all")
            await chat.expect("Resume which? [1-3] (Enter cancels):", timeout=30)
            await chat.printed("[-p run]")
            everything = chat.text[chat.text.index("/resume --all"):]
            assert "Sub-agent" not in everything
            assert "[-p run]" in everything and "review this" in everything
            chat.send("")
            await chat.expect("(nothing resumed)")
            chat.send("/quit")
            assert await chat.wait(30) == 0
        finally:
            chat.close()
    # The model continued the resumed conversation, not a new one.
    last = json.dumps(server.requests[-1].json())
    assert "explain the cart module" in last and "rounding per line" in last and "and the tests?" in last
    assert "hello from the blog" not in last
