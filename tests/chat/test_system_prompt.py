"""The built-in system prompt seen from the terminal: a real ``agent-host`` on a pty whose model is
a scripted provider server. The model receives the tool-use guidance with the first request; the
user denies a destructive command with a reason; the model then receives the denial as the call's
result, under the very same system prompt (a stable, cacheable prefix)."""

from __future__ import annotations

from pathlib import Path

from host.runtime.agents.system_prompt import BUILTIN_SYSTEM_PROMPT
from tests.chat._fakehost import host_toml, spawn_agent_host
from tests.providers.fake_server import FakeProviderServer, Reply, SeenRequest, chat_sse


def _system(request: SeenRequest) -> str:
    return next(m["content"] for m in request.json()["messages"] if m["role"] == "system")


async def test_the_model_is_told_how_to_work_and_a_denial_reaches_it_under_the_same_prompt(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "build").mkdir(parents=True)
    replies = [Reply(200, chat_sse("Cleaning up.", tool_calls=[("call_1", "shell", '{"command": "rm -rf build"}')])),
               Reply(200, chat_sse("Understood: I left build/ alone."))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        chat = spawn_agent_host(tmp_path, project, host_toml(server))
        try:
            await chat.expect("/help for commands", timeout=30)
            chat.send("clean the build folder")
            await chat.expect("$ rm -rf build", timeout=30)
            await chat.expect("5) Deny with a reason")
            await chat.expect("Choose [1-5, e]:")
            chat.send("5")
            await chat.expect("Reason")
            chat.send("keep the build cache")
            await chat.expect("Understood: I left build/ alone.", timeout=30)
            chat.send("/quit")
            assert await chat.wait(30) == 0
        finally:
            chat.close()
    assert (project / "build").is_dir()
    first, second = server.requests
    system = _system(first)
    assert system.startswith(BUILTIN_SYSTEM_PROMPT)
    assert "Read before you edit" in system and "Never run destructive or irreversible commands without asking" in system
    assert "When the user denies a call" in system
    assert f"Working directory: {project}" in system
    assert {"read_file", "edit_file", "shell"} <= {t["function"]["name"] for t in first.json()["tools"]}
    assert _system(second) == system  # the same prefix on the next call: cacheable
    [result] = [m for m in second.json()["messages"] if m["role"] == "tool"]
    assert "denied" in result["content"] and "keep the build cache" in result["content"]


async def test_a_fresh_repository_without_a_commit_is_told_to_the_model_as_a_repository(tmp_path: Path) -> None:
    import subprocess

    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(project)], check=True)
    (project / "app.py").write_text("print('hi')\n")
    async with FakeProviderServer([Reply(200, chat_sse("A fresh repository."))], base_path="/v1") as server:
        chat = spawn_agent_host(tmp_path, project, host_toml(server))
        try:
            await chat.expect("/help for commands", timeout=30)
            chat.send("where am I?")
            await chat.expect("A fresh repository.", timeout=30)
            chat.send("/quit")
            assert await chat.wait(30) == 0
        finally:
            chat.close()
    system = _system(server.requests[0])
    assert "Git branch: main (no commits yet)" in system and "?? app.py" in system
    assert "not a git repository" not in system
