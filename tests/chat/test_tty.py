"""The chat in a terminal that can draw (prompt_toolkit input, rich output), in a real pty
against a real host: markdown rendered, a multi-line paste sent as one message, history kept
across restarts, a command edited in place, and the spinner before the first token."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from host.transport.server import RunningHost
from tests.chat._hostwait import chats, until_host
from tests.chat._pty import ChatProcess, tty_env
from tests.providers.fake_server import FakeProviderServer, Reply, chat_sse

UP = "\x1b[A"


def _spawn(host: RunningHost, workdir: Path, state: Path, *args: str) -> ChatProcess:
    return ChatProcess.spawn([host.url, *args], cwd=workdir, env=tty_env(XDG_STATE_HOME=str(state)))


def _texts(host: RunningHost) -> list[str]:
    return [t["message"]["text"] for _, state in chats(host) for t in state.get("turns") or ()]


def _stalled_answer() -> bytes:
    """The start of a streamed answer ("lorem ipsum dolor ..."), without its end: a turn mid-answer."""
    partial = chat_sse("lorem ipsum dolor " * 30).split(b"data: [DONE]")[0]
    return partial[: partial.rindex(b'"finish_reason"')].rsplit(b"data: ", 1)[0]


@asynccontextmanager
async def _chat_on_fake_provider(tmp_path: Path, replies: list[Reply], agent: str = "",
                                 release: tuple[asyncio.Event, ...] = ()) -> AsyncIterator[ChatProcess]:
    """The chat in a pty on a host of its own (``--config``) whose ``fake`` agent (``openai-chat``,
    plus the TOML lines ``agent``) is a fake provider giving ``replies``; once the block ends, the
    ``release`` events are set (stalled replies let go) and the chat closed."""
    project = tmp_path / "project"
    project.mkdir()
    async with FakeProviderServer(replies, base_path="/v1") as server:
        config = tmp_path / "host.toml"
        config.write_text(
            f'[agents.fake]\nkind = "openai-chat"\nbase_url = "{server.base_url}"\napi_key = "sk-test"\n'
            f'retries = 0\n{agent}models = [{{id = "fake-model", name = "Fake", context_window = 8000}}]\n',
            encoding="utf-8",
        )
        env = tty_env(XDG_DATA_HOME=str(tmp_path / "data"), XDG_STATE_HOME=str(tmp_path / "state"))
        chat = ChatProcess.spawn(["--config", str(config)], cwd=project, env=env, command=())
        try:
            yield chat
        finally:
            for event in release:
                event.set()
            chat.close()


async def test_markdown_is_rendered_not_printed_raw(chat_host: RunningHost, workdir: Path, tmp_path: Path) -> None:
    chat = _spawn(chat_host, workdir, tmp_path / "state")
    try:
        await chat.expect("/help for commands")
        await chat.line_editor()
        chat.send("markdown please")
        shown = await chat.expect("All done.", timeout=20)
        assert "Plan" in shown and "important" in shown and "first item" in shown and "return 42" in shown
        for raw in ("**important**", "# Plan", "```", "- first item", "`inline`"):
            assert raw not in shown, raw
        assert "\x1b[1mimportant" in chat.raw.decode()  # bold, as a terminal shows it
        assert " • first item" in shown
        chat.send("/quit")
        assert await chat.wait() == 0
    finally:
        chat.close()


async def test_a_pasted_block_of_lines_is_one_message(chat_host: RunningHost, workdir: Path, tmp_path: Path) -> None:
    chat = _spawn(chat_host, workdir, tmp_path / "state")
    try:
        await chat.expect("/help for commands")
        await chat.line_editor()
        chat.paste("first pasted line\nsecond pasted line\nthird pasted line")
        chat.send("")  # Enter after the paste sends it
        await chat.expect("Hello from the scenario agent", timeout=20)
        await until_host(chat_host, lambda: bool(chats(chat_host)) and not chats(chat_host)[0][1].get("activeTurn") and bool(_texts(chat_host)))
        assert _texts(chat_host) == ["first pasted line\nsecond pasted line\nthird pasted line"]
        [(_, state)] = chats(chat_host)
        assert not state.get("steeringMessage") and not state.get("queuedMessages")
        chat.send("/quit")
        assert await chat.wait() == 0
    finally:
        chat.close()


async def test_alt_enter_adds_a_line_and_enter_sends(chat_host: RunningHost, workdir: Path, tmp_path: Path) -> None:
    chat = _spawn(chat_host, workdir, tmp_path / "state")
    try:
        await chat.expect("/help for commands")
        await chat.line_editor()
        chat.type("line one\x1b\rline two")
        chat.send("")
        await chat.expect("Hello from the scenario agent", timeout=20)
        await until_host(chat_host, lambda: bool(_texts(chat_host)))
        assert _texts(chat_host) == ["line one\nline two"]
        chat.send("/quit")
        assert await chat.wait() == 0
    finally:
        chat.close()


async def test_history_survives_a_restart_of_the_client(chat_host: RunningHost, workdir: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = _spawn(chat_host, workdir, state)
    try:
        await first.expect("/help for commands")
        await first.line_editor()
        first.send("remember this message")
        await first.expect("Hello from the scenario agent", timeout=20)
        await first.expect("(effort low)")
        first.send("/quit")
        assert await first.wait() == 0
    finally:
        first.close()
    assert "remember this message" in (state / "agent-host" / "chat_history").read_text()
    second = _spawn(chat_host, workdir, state)
    try:
        await second.expect("/help for commands")
        await second.line_editor()
        # The previous run's message comes back with Up (the history loads in the background:
        # press Up until the buffer shows it).
        for _ in range(20):
            second.type(UP)
            try:
                await second.expect("remember this message", timeout=1)
                break
            except AssertionError:
                continue
        second.send("")
        await until_host(chat_host, lambda: _texts(chat_host).count("remember this message") == 2, timeout=20)
        second.send("/quit")
        assert await second.wait() == 0
    finally:
        second.close()


async def test_e_edits_the_command_in_place_before_approving(chat_host: RunningHost, workdir: Path, tmp_path: Path) -> None:
    chat = _spawn(chat_host, workdir, tmp_path / "state")
    try:
        await chat.expect("/help for commands")
        await chat.line_editor()
        chat.send("confirm please")
        await chat.expect("e) edit the command first", timeout=20)
        await chat.printed("Choose [1-5, e]:")
        chat.send("e")
        await chat.expect("Edit the command (Enter runs this):")
        await chat.expect("ls -la")  # the buffer holds the command, ready to edit
        chat.type(" /tmp")  # the cursor is at its end: append, no retyping
        chat.send("")
        await chat.expect("now pick an allow option")
        chat.send("1")
        await chat.expect("tool finished via allow-once", timeout=20)
        [(_, state)] = chats(chat_host)
        call = state["turns"][-1]["responseParts"][0]["toolCall"]
        assert json.loads(call["toolInput"]) == {"command": "ls -la /tmp"}
        chat.send("/quit")
        assert await chat.wait() == 0
    finally:
        chat.close()


async def test_a_spinner_with_elapsed_time_shows_until_the_first_token(tmp_path: Path) -> None:
    first_byte = asyncio.Event()
    replies = [Reply(200, chat_sse("The answer ", "arrived."), hold=first_byte)]
    async with _chat_on_fake_provider(tmp_path, replies) as chat:
        await chat.expect("/help for commands", timeout=30)
        chat.send("slow one")
        # The provider has not sent a byte: the status line says so, and keeps counting.
        await chat.expect("Waiting for the model (", timeout=30)
        await chat.expect("s · Ctrl-C to cancel)")
        assert "arrived" not in chat.text
        first_byte.set()
        await chat.expect("The answer arrived.", timeout=30)
        chat.send("/quit")
        assert await chat.wait(30) == 0



async def test_an_edit_is_previewed_as_a_diff_with_the_code_highlighted(chat_host: RunningHost, workdir: Path, tmp_path: Path) -> None:
    chat = _spawn(chat_host, workdir, tmp_path / "state")
    try:
        await chat.expect("/help for commands")
        await chat.line_editor()
        chat.send("patch code")
        await chat.expect("Choose [1-2, e]:", timeout=20)
        await chat.printed("+    return 42")
        preview = chat.text
        assert "--- a/greet.py" in preview and "+++ b/greet.py" in preview
        assert "-    return 1" in preview and "+    return 42" in preview and " def greet():" in preview
        raw = chat.raw.decode()
        added = raw[raw.index("+\x1b[0m") :].split("\n", 1)[0]  # the added line as the terminal got it
        colours = set(re.findall(r"\x1b\[38;5;(\d+)", added))
        assert len(colours) >= 2, repr(added)  # the keyword and the number differ: highlighted, not one colour
        assert "48;5;22" in added  # on the added lines' green tint
        chat.send("y")
        await chat.expect("Ran", timeout=20)
        chat.send("/quit")
        assert await chat.wait() == 0
    finally:
        chat.close()


async def test_ctrl_r_finds_an_earlier_message_to_send_again(chat_host: RunningHost, workdir: Path, tmp_path: Path) -> None:
    chat = _spawn(chat_host, workdir, tmp_path / "state")
    try:
        await chat.expect("/help for commands")
        for text in ("the needle message", "another message"):
            await chat.line_editor()
            chat.send(text)
            await chat.expect("Hello from the scenario agent", timeout=20)
            await chat.expect("(effort low)")
        await chat.line_editor()
        chat.type("\x12")  # Ctrl-R
        await chat.expect("I-search backward:")
        chat.type("needle")
        await chat.expect("the needle message")
        chat.send("")  # Enter keeps the line found...
        chat.send("")  # ...and Enter sends it
        await until_host(chat_host, lambda: _texts(chat_host) == ["the needle message", "another message", "the needle message"], timeout=20)
        await chat.expect("(effort low)", timeout=20)
        await chat.line_editor()
        chat.send("/quit")
        assert await chat.wait() == 0
    finally:
        chat.close()


async def test_at_paths_and_slash_commands_complete_from_the_host(chat_host: RunningHost, workdir: Path, tmp_path: Path) -> None:
    (workdir / "notes_for_completion.md").write_text("# notes\n")
    chat = _spawn(chat_host, workdir, tmp_path / "state")
    try:
        await chat.expect("/help for commands")
        await chat.line_editor()
        chat.send("hello")  # a session (completions are asked of the session)
        await chat.expect("Hello from the scenario agent", timeout=20)
        await chat.expect("(effort low)")
        await chat.line_editor()
        chat.type("read @notes_f")
        await chat.on_screen("@notes_for_completion.md", timeout=20)  # the host's item, in the menu
        chat.type("\t")  # Tab picks it,
        chat.send("")  # Enter takes it into the line,
        chat.send("")  # and Enter sends the message
        await until_host(chat_host, lambda: len(_texts(chat_host)) == 2, timeout=20)
        assert _texts(chat_host)[1].strip() == "read @notes_for_completion.md"
        [(_, state)] = chats(chat_host)
        attached = [a.get("uri") for a in state["turns"][-1]["message"].get("attachments") or ()]
        assert (workdir / "notes_for_completion.md").as_uri() in attached
        await chat.expect("(effort low)", timeout=20)
        await chat.line_editor()
        chat.type("/mc")
        await chat.on_screen("/mcp")
        chat.type("\t")
        chat.send("")
        chat.send("")
        await chat.expect("This session has no MCP servers")
        chat.send("/quit")
        assert await chat.wait() == 0
    finally:
        chat.close()


async def test_no_color_prints_plain_text_in_a_terminal(chat_host: RunningHost, workdir: Path, tmp_path: Path) -> None:
    chat = ChatProcess.spawn([chat_host.url], cwd=workdir, env=tty_env(XDG_STATE_HOME=str(tmp_path / "state"), NO_COLOR="1"))
    try:
        await chat.expect("/help for commands")
        await chat.line_editor()  # still an input line with editing and history...
        chat.send("markdown please")
        shown = await chat.expect("All done.", timeout=20)
        assert "This is **important** and `inline`." in shown  # ...but the answer as the text it is
        assert not re.search(r"\x1b\[[0-9;]*[1-9][0-9;]*m", chat.raw.decode())  # no colour, bold or dim
        chat.send("/quit")
        assert await chat.wait() == 0
    finally:
        chat.close()


async def test_the_status_counts_tokens_while_the_answer_streams(tmp_path: Path) -> None:
    # The provider sends the start of an answer, then nothing more: the turn is mid-answer.
    stalled = asyncio.Event()
    async with _chat_on_fake_provider(tmp_path, [Reply(200, _stalled_answer(), stall=stalled)], release=(stalled,)) as chat:
        await chat.expect("/help for commands", timeout=30)
        await chat.line_editor()
        chat.send("stream a while")
        await chat.expect("Answering (", timeout=30)
        status = await chat.expect(" · Ctrl-C to cancel)")
        assert re.search(r"↓ \d+ tokens?", status.splitlines()[-1]), status
        assert "lorem ipsum" in chat.text  # the unfinished paragraph shows live above it
        chat.ctrl_c()
        await chat.expect("(cancelled)", timeout=30)
        stalled.set()
        chat.send("/quit")
        assert await chat.wait(30) == 0


async def test_ctrl_c_clears_a_line_being_typed_and_twice_on_an_empty_line_exits(chat_host: RunningHost, workdir: Path, tmp_path: Path) -> None:
    chat = _spawn(chat_host, workdir, tmp_path / "state")
    try:
        await chat.expect("/help for commands")
        await chat.line_editor()
        chat.type("half a thought")
        await chat.expect("half a thought")
        chat.ctrl_c()  # clears the line; the chat goes on
        chat.send("hello")
        await chat.expect("Hello from the scenario agent", timeout=20)
        await until_host(chat_host, lambda: _texts(chat_host) == ["hello"])
        await chat.expect("(effort low)")
        await chat.line_editor()
        chat.ctrl_c()  # on an empty line, when idle: says how to exit
        await chat.expect("(press Ctrl-C again to exit)")
        chat.ctrl_c()  # and a second one exits
        assert await chat.wait() == 0
    finally:
        chat.close()


async def test_esc_cancels_a_running_turn_and_esc_esc_at_the_prompt_offers_to_rewind(tmp_path: Path) -> None:
    stalled = asyncio.Event()
    replies = [Reply(200, chat_sse("First answer.")), Reply(200, _stalled_answer(), stall=stalled)]
    async with _chat_on_fake_provider(tmp_path, replies, agent='title = "first-words"\n', release=(stalled,)) as chat:
        await chat.expect("/help for commands", timeout=30)
        await chat.line_editor()
        chat.send("first")
        await chat.expect("First answer.", timeout=30)
        await chat.line_editor()
        chat.send("stream a while")
        await chat.expect("lorem ipsum", timeout=30)
        chat.type("\x1b")  # Esc
        await chat.expect("Esc: cancelling the turn")
        await chat.expect("(cancelled)", timeout=30)
        stalled.set()
        await chat.line_editor()
        chat.type("\x1b\x1b")  # Esc Esc: the turns to go back to
        await chat.expect("first", timeout=15)
        await chat.expect("(Enter cancels)", timeout=15)
        chat.send("")
        chat.send("/quit")
        assert await chat.wait(30) == 0
