"""``agent-host`` (the one-command mode: the chat on the data directory's shared host) on a pty, with an
agent whose model is a scripted fake provider server on 127.0.0.1 (``tests.providers.fake_server``):
what the user sees is the pty's text, what the model received is the server's ``requests``.
``agent_host_chat`` is such a chat ready for a message, quit when the test is done with it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.chat._pty import ChatProcess, chat_env, tty_env
from tests.providers.fake_server import FakeProviderServer


def host_toml(server: FakeProviderServer, extra: str = "", *, vision: bool = False) -> str:
    """One openai-chat agent ``fake`` on ``server`` (its base URL ends in ``/v1``; its model sees
    images with ``vision``), then ``extra``."""
    sees = ", vision = true" if vision else ""
    return (
        f'[agents.fake]\nkind = "openai-chat"\nbase_url = "{server.base_url}"\napi_key = "sk-test"\n'
        f'retries = 0\ntitle = "first-words"\nmodels = [{{id = "fake-model", name = "Fake", context_window = 64000{sees}}}]\n' + extra
    )


def spawn_agent_host(tmp_path: Path, project: Path, toml: str, *args: str, tty: bool = False, **environ: str) -> ChatProcess:
    """``agent-host --config <toml> ARGS`` in ``project``; data and state under ``tmp_path``
    (the same data directory every time, so a second run sees the first one's sessions);
    ``environ`` adds to the client's environment."""
    config = tmp_path / "host.toml"
    config.write_text(toml, encoding="utf-8")
    make_env = tty_env if tty else chat_env
    env = make_env(XDG_DATA_HOME=str(tmp_path / "data"), XDG_STATE_HOME=str(tmp_path / "state"), **environ)
    return ChatProcess.spawn(["--config", str(config), *args], cwd=project, env=env, command=())


@asynccontextmanager
async def agent_host_chat(tmp_path: Path, project: Path, toml: str, *args: str, tty: bool = False, greeted: bool = True,
                          **environ: str) -> AsyncIterator[ChatProcess]:
    """``spawn_agent_host``'s chat, ready for a message: its greeting printed and, on a terminal
    that draws (``tty``), its input line reading keys. ``greeted=False`` hands it over at once
    (to answer what it asks the terminal before it greets). The block's end quits it with /quit,
    and it must exit 0; the process stays readable after (``text``, ``raw``)."""
    chat = spawn_agent_host(tmp_path, project, toml, *args, tty=tty, **environ)
    try:
        if greeted:
            await chat.expect("/help for commands", timeout=30)
            if tty:
                await chat.line_editor()
        yield chat
        chat.send("/quit")
        assert await chat.wait(30) == 0
    finally:
        chat.close()
