"""``agent-host`` (the one-command mode: the chat on the data directory's shared host) on a pty, with an
agent whose model is a scripted fake provider server on 127.0.0.1 (``tests.providers.fake_server``):
what the user sees is the pty's text, what the model received is the server's ``requests``."""

from __future__ import annotations

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
