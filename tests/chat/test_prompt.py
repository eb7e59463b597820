"""The prompt_toolkit terminal's prompts giving way to one another without losing what was typed.

Driven in-process through prompt_toolkit's pipe input (keys as a terminal sends them); the pty
tests in ``test_tty.py`` cover the same terminal end to end. The vi editing mode is tested end to
end here: a real ``agent-host`` on a pty whose model is a scripted provider server receives the
line as vi's keys edited it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput

from chat._prompt import HostCompleter, PromptTerminal
from chat._terminal import Line
from tests.chat._fakehost import host_toml, spawn_agent_host
from tests.providers.fake_server import FakeProviderServer, Reply, chat_sse


@pytest.fixture
def keys() -> Iterator[PipeInput]:
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        yield pipe


async def _until(condition, what: str) -> None:
    for _ in range(400):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"{what} never happened")


async def _running(terminal: PromptTerminal) -> None:
    await _until(lambda: terminal._session is not None and terminal._session.app.is_running, "the prompt starting")


async def test_a_line_typed_while_a_starting_prompt_gives_way_reaches_the_next_one(keys: PipeInput) -> None:
    """A turn ends while its steering prompt is still starting: the idle prompt replaces it, and
    the line typed at that moment is read once, by the prompt now asking. (The pty test
    ``test_tty::test_history_survives_a_restart_of_the_client`` is where the old cancellation lost
    that line; this checks the replacement that took its place.)"""
    terminal = PromptTerminal(history_file=None, color=False)
    terminal.ask("steer › ", history=True)
    await asyncio.sleep(0)  # the steering prompt's task has begun, its application is not running
    terminal.ask("> ", history=True)
    keys.send_text("/quit\r")
    assert await asyncio.wait_for(terminal.inbox.get(), 5) == Line("/quit")
    await asyncio.sleep(0.05)
    assert terminal.inbox.empty()
    terminal.restore()


async def test_text_being_typed_carries_over_to_the_prompt_that_replaces_it(keys: PipeInput) -> None:
    terminal = PromptTerminal(history_file=None, color=False)
    terminal.ask("> ", history=True)
    await _running(terminal)
    keys.send_text("half a thou")
    await _until(lambda: terminal._session.default_buffer.text == "half a thou", "the keys reaching the prompt")
    terminal.ask("steer › ", history=True)
    keys.send_text("ght\r")
    assert await asyncio.wait_for(terminal.inbox.get(), 5) == Line("half a thought")
    terminal.restore()


async def test_a_line_entered_just_before_another_prompt_is_asked_is_delivered(keys: PipeInput) -> None:
    terminal = PromptTerminal(history_file=None, color=False)
    terminal.ask("steer › ", history=True)
    await _running(terminal)
    keys.send_text("steer left\r")
    # Enter is handled: the prompt's result is set, not yet delivered.
    await _until(lambda: terminal._session.app.future is not None and terminal._session.app.future.done(), "Enter being handled")
    terminal.ask("> ", history=True)
    assert await asyncio.wait_for(terminal.inbox.get(), 5) == Line("steer left")
    keys.send_text("next\r")
    assert await asyncio.wait_for(terminal.inbox.get(), 5) == Line("next")
    terminal.restore()



async def test_an_answer_for_text_typed_since_is_not_applied_to_the_line(keys: PipeInput) -> None:
    """The host answers a completion for ``see @no`` after more keys arrived (a paste, a fast typist):
    the line keeps every key, the menu offers what the host says for the line as it is now, and
    choosing it replaces the whole ``@`` word."""
    asked: list[str] = []
    answer = asyncio.Event()

    async def host(text: str, offset: int) -> list[dict]:
        asked.append(text)
        await answer.wait()
        return [{"insertText": "@notes:notes://readme", "rangeStart": text.index("@")}]

    terminal = PromptTerminal(history_file=None, color=False, completer=HostCompleter(host, []))
    terminal.ask("> ", history=True)
    await _running(terminal)
    buffer = terminal._session.default_buffer
    keys.send_text("see @no")
    await _until(lambda: asked == ["see @no"], "the host being asked")
    keys.send_text("tes:notes://rea")
    await _until(lambda: buffer.text == "see @notes:notes://rea", "the later keys reaching the line")
    answer.set()  # the answer for "see @no" arrives, then the one asked again for the line as it is
    await _until(lambda: asked[-1] == "see @notes:notes://rea" and buffer.complete_state is not None
                 and len(buffer.complete_state.completions) == 1, "the menu")
    assert buffer.text == "see @notes:notes://rea"
    assert buffer.complete_state.completions[0].start_position == -len("@notes:notes://rea")
    keys.send_text("\t")  # choose it
    await _until(lambda: buffer.text == "see @notes:notes://readme", "the completion chosen")
    keys.send_text("\r\r")  # the first Enter applies the chosen item, the second sends
    assert await asyncio.wait_for(terminal.inbox.get(), 5) == Line("see @notes:notes://readme")
    terminal.restore()

async def test_vi_mode_edits_the_line_with_vis_keys_and_says_when_it_is_in_normal_mode(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    async with FakeProviderServer([Reply(200, chat_sse("Hello to you."))], base_path="/v1") as server:
        chat = spawn_agent_host(tmp_path, project, host_toml(server), "--editing-mode", "vi", tty=True)
        try:
            await chat.expect("/help for commands", timeout=30)
            await chat.line_editor()
            chat.type("world")
            await chat.expect("world")
            chat.type("\x1b")  # Esc: normal mode
            await chat.expect("-- NORMAL --")
            chat.type("0i")  # to the start of the line, insert
            chat.send("hello ")
            await chat.expect("Hello to you.", timeout=30)
            chat.send("/quit")
            assert await chat.wait(30) == 0
        finally:
            chat.close()
    [request] = server.requests
    assert [m["content"] for m in request.json()["messages"] if m["role"] == "user"][-1] == "hello world"
