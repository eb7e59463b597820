"""``agent-host`` with no command (or ``agent-host code``): the chat on the data directory's shared host (``cli.shared_host``) in one
terminal, working in the directory it was started in. Driven in a real pty; the model is a
fake OpenAI-compatible server on 127.0.0.1 that asks to read a file and then answers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.chat._pty import REPO, ChatProcess, chat_env
from tests.providers.fake_server import FakeProviderServer, Reply, chat_sse


def _config(tmp_path: Path, base_url: str) -> Path:
    path = tmp_path / "host.toml"
    path.write_text(
        f'[agents.fake]\nkind = "openai-chat"\nbase_url = "{base_url}"\napi_key = "sk-test"\n'
        'retries = 0\nmodels = [{id = "fake-model", name = "Fake", context_window = 8000}]\n',
        encoding="utf-8",
    )
    return path


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "my project"
    project.mkdir()
    (project / "notes.txt").write_text("the build needs tea\n", encoding="utf-8")
    return project


def _replies() -> list[Reply]:
    return [
        Reply(200, chat_sse(tool_calls=[("call-1", "read_file", json.dumps({"path": "notes.txt"}))])),
        Reply(200, chat_sse("The notes say ", "the build needs tea.")),
    ]


def _tool_output(server: FakeProviderServer) -> str:
    second = server.requests[1].json()
    return "".join(str(m.get("content")) for m in second["messages"] if m.get("role") == "tool")


async def test_one_command_in_a_project_directory_answers_and_works_there(tmp_path: Path) -> None:
    project = _project(tmp_path)
    async with FakeProviderServer(_replies(), base_path="/v1") as server:
        env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"), XDG_STATE_HOME=str(tmp_path / "state"))
        chat = ChatProcess.spawn(["--config", str(_config(tmp_path, server.base_url))], cwd=project, env=env, command=())
        try:
            await chat.expect("/help for commands", timeout=30)
            chat.send("what do the notes say?")
            await chat.expect("agent fake")
            await chat.expect("The notes say the build needs tea.", timeout=30)
            await chat.expect("> ")
            chat.send("/quit")
            assert await chat.wait(30) == 0
        finally:
            chat.close()
    assert "the build needs tea" in _tool_output(server)  # read from the directory it started in
    first = json.dumps(server.requests[0].json())
    assert str(project) in first  # the session's working directory, told to the model
    assert (tmp_path / "data" / "agent-host" / "journal.sqlite3").exists()  # the user's data directory


async def test_one_command_print_mode_answers_on_stdout_for_scripts(tmp_path: Path) -> None:
    project = _project(tmp_path)
    async with FakeProviderServer(_replies(), base_path="/v1") as server:
        # No --config: the user's own, in $XDG_CONFIG_HOME/agent-host/config.toml.
        user_config = tmp_path / "config" / "agent-host"
        user_config.mkdir(parents=True)
        _config(tmp_path, server.base_url).rename(user_config / "config.toml")
        env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "config"))
        process = await _run(["code", "-p", "what do the notes say?"], project, env)
    assert process.returncode == 0, process.stderr
    assert process.stdout == "The notes say the build needs tea.\n"
    assert "read_file" in process.stderr or "Read" in process.stderr
    assert "the build needs tea" in _tool_output(server)


async def test_print_mode_into_a_closed_pipe_exits_quietly(tmp_path: Path) -> None:
    env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
    command = f"{sys.executable} -m cli.main -p hello --agent offline | head -c 3"
    import asyncio

    process = await asyncio.create_subprocess_shell(
        f"set -o pipefail; {command}", cwd=tmp_path, env=env, executable="/bin/bash",
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert out == b"You"
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err.decode()
    assert process.returncode in (0, 141)


async def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    import asyncio

    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cli.main", *args, cwd=cwd, env={**env, "PYTHONPATH": str(REPO)},
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    return subprocess.CompletedProcess(args, process.returncode or 0, out.decode(), err.decode())



async def test_a_shell_tools_output_is_shown_once(tmp_path: Path) -> None:
    project = _project(tmp_path)
    # The pause makes the first line stream while the command still runs (shown live); the
    # finished result must not print it again, nor the rest twice.
    command = "echo first-line; sleep 0.3; echo second-line; echo third-line"
    replies = [
        Reply(200, chat_sse(tool_calls=[("call-1", "shell", json.dumps({"command": command}))])),
        Reply(200, chat_sse("Ran it.")),
    ]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
        chat = ChatProcess.spawn(["--config", str(_config(tmp_path, server.base_url))], cwd=project, env=env, command=())
        try:
            await chat.expect("/help for commands", timeout=30)
            chat.send("run it")
            await chat.expect("Choose [", timeout=30)
            chat.send("1")
            shown = await chat.expect("Ran it.", timeout=30)
            chat.send("/quit")
            assert await chat.wait(30) == 0
        finally:
            chat.close()
    output = [line.strip() for line in shown.splitlines() if line.startswith("    ")]
    assert output.count("first-line") == 1 and output.count("second-line") == 1 and output.count("third-line") == 1, shown
    assert "{\"comm" not in chat.text  # no raw partial JSON on the preparing line


async def test_one_command_print_mode_reads_the_prompt_from_a_pipe_and_prints_json(tmp_path: Path) -> None:
    """``echo q | agent-host -p --output-format json``: stdin is the message, one object comes back."""
    env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
    import asyncio

    process = await asyncio.create_subprocess_shell(
        f"echo 'what is q' | {sys.executable} -m cli.main -p --agent offline --output-format json",
        cwd=tmp_path, env=env, executable="/bin/bash", stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    result = json.loads(out)
    assert result["type"] == "result" and result["is_error"] is False
    assert 'You said: "what is q' in result["result"]
    assert result["session"].startswith("offline:/")  # the model's session URI: <agent>:/<id>


async def test_the_keyless_demo_says_its_answer_is_a_recording_and_how_to_connect_a_model(tmp_path: Path) -> None:
    env = {k: v for k, v in chat_env(XDG_DATA_HOME=str(tmp_path / "data")).items() if not k.endswith("_API_KEY")}
    process = await _run(["-p", "fix the failing test"], tmp_path, env)
    assert process.returncode == 0, process.stderr
    assert "Recorded demo" in process.stderr and "ANTHROPIC_API_KEY or OPENAI_API_KEY" in process.stderr
    assert "recording of claude" in process.stderr or "recording of gpt" in process.stderr
    again = await _run(["-c", "-p", "and again", "--output-format", "json"], tmp_path, env)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["usage"]["model"].startswith("recording of ")
