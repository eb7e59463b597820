"""One host per data directory, shared by every ``agent-host`` (``cli.shared_host``): two chats in
two projects at once, ``-p`` while a chat runs, the first chat ending under a second one, and what
a second ``serve`` or a mismatched config is told. Real processes in real ptys against real hosts;
the model is a fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.chat._pty import REPO, ChatProcess, chat_env
from tests.providers.fake_server import FakeProviderServer, Reply, chat_sse


def _config(tmp_path: Path, base_url: str, name: str = "host.toml") -> Path:
    path = tmp_path / name
    path.write_text(
        f'[agents.fake]\nkind = "openai-chat"\nbase_url = "{base_url}"\napi_key = "sk-test"\n'
        'retries = 0\ntitle = "first-words"\nmodels = [{id = "fake-model", name = "Fake", context_window = 8000}]\n',
        encoding="utf-8",
    )
    return path


def _projects(tmp_path: Path, *names: str) -> list[Path]:
    made = []
    for name in names:
        project = tmp_path / name
        project.mkdir()
        made.append(project)
    return made


def _data(tmp_path: Path) -> Path:
    return tmp_path / "data" / "agent-host"


async def _host_stopped(data: Path) -> None:
    """Wait until no host holds the data directory (the terminal host stops once unused)."""
    for _ in range(600):
        with open(data / "host.lock", "a+") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pass
        await asyncio.sleep(0.05)
    raise AssertionError("the shared host is still running")


async def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cli.main", *args, cwd=cwd, env={**env, "PYTHONPATH": str(REPO)},
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    return subprocess.CompletedProcess(args, process.returncode or 0, out.decode(), err.decode())


def _record(data: Path) -> dict | None:
    """``host.json`` now, or None when no host is published (it may stop at any moment)."""
    try:
        return json.loads((data / "host.json").read_text())
    except FileNotFoundError:
        return None


@asynccontextmanager
async def _chat(args: list[str], cwd: Path, env: dict[str, str]) -> AsyncIterator[ChatProcess]:
    """An ``agent-host`` chat in ``cwd``, ready for a message; the block's end quits it, and it
    must exit 0."""
    chat = ChatProcess.spawn(args, cwd=cwd, env=env, command=())
    try:
        await chat.expect("/help for commands", timeout=30)
        yield chat
        chat.send("/quit")
        assert await chat.wait(30) == 0
    finally:
        chat.close()


def _told(text: str) -> list[str]:
    """The lines in which agent-host speaks to the user, but for its notice that it waits for the host
    another client is starting (said once that takes over 2 s, as it may on a busy machine)."""
    return [line for line in text.splitlines()
            if "agent-host:" in line and "agent-host: waiting for the agent-host starting on " not in line]


def _sent_directory(request: object) -> str:
    return json.dumps(request.json())  # type: ignore[attr-defined]  # the fake server's request


async def test_two_chats_in_two_projects_at_once_both_answer(tmp_path: Path) -> None:
    alpha, beta = _projects(tmp_path, "alpha", "beta")
    replies = [Reply(200, chat_sse("Alpha answered.")), Reply(200, chat_sse("Beta answered."))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        config = str(_config(tmp_path, server.base_url))
        env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
        first = ChatProcess.spawn(["--config", config], cwd=alpha, env=env, command=())
        second = ChatProcess.spawn(["--config", config], cwd=beta, env=env, command=())
        try:
            await first.expect("/help for commands", timeout=30)
            await second.expect("/help for commands", timeout=30)
            first.send("hello from alpha")
            await first.expect("Alpha answered.", timeout=30)
            second.send("hello from beta")
            await second.expect("Beta answered.", timeout=30)
            assert _told(first.text) == [] and _told(second.text) == []  # no refusal
            first.send("/quit")
            second.send("/quit")
            assert await first.wait(30) == 0
            assert await second.wait(30) == 0
        finally:
            first.close()
            second.close()
        await _host_stopped(_data(tmp_path))
    # Each session works in its own project, on the one host.
    assert str(alpha) in _sent_directory(server.requests[0]) and str(beta) not in _sent_directory(server.requests[0])
    assert str(beta) in _sent_directory(server.requests[1])
    assert not (_data(tmp_path) / "host.json").exists()  # withdrawn when the host stopped


async def test_print_mode_while_a_chat_runs_in_the_same_directory_answers_and_exits(tmp_path: Path) -> None:
    (project,) = _projects(tmp_path, "project")
    replies = [Reply(200, chat_sse("From the script.")), Reply(200, chat_sse("The chat goes on."))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        config = str(_config(tmp_path, server.base_url))
        env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
        chat = ChatProcess.spawn(["--config", config], cwd=project, env=env, command=())
        try:
            await chat.expect("/help for commands", timeout=30)
            script = await _run(["--config", config, "-p", "summarise"], project, env)
            assert script.returncode == 0, script.stderr
            assert script.stdout == "From the script.\n"
            chat.send("still there?")
            await chat.expect("The chat goes on.", timeout=30)  # the script's exit took nothing down
            chat.send("/quit")
            assert await chat.wait(30) == 0
        finally:
            chat.close()
        await _host_stopped(_data(tmp_path))


async def test_the_first_chat_ending_leaves_the_host_to_the_second(tmp_path: Path) -> None:
    alpha, beta = _projects(tmp_path, "alpha", "beta")
    replies = [Reply(200, chat_sse("Still answering."))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        config = str(_config(tmp_path, server.base_url))
        env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
        first = ChatProcess.spawn(["--config", config], cwd=alpha, env=env, command=())
        second = None
        try:
            await first.expect("/help for commands", timeout=30)  # this one started the host
            second = ChatProcess.spawn(["--config", config], cwd=beta, env=env, command=())
            await second.expect("/help for commands", timeout=30)
            first.send("/quit")
            assert await first.wait(30) == 0
            second.send("are you there?")
            await second.expect("Still answering.", timeout=30)
            second.send("/quit")
            assert await second.wait(30) == 0
        finally:
            first.close()
            if second is not None:
                second.close()
        await _host_stopped(_data(tmp_path))


async def test_the_address_file_is_private_and_a_second_serve_is_told_where_the_host_is(tmp_path: Path) -> None:
    (project,) = _projects(tmp_path, "project")
    env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
    data = _data(tmp_path)
    async with _chat(["--agent", "offline"], project, env) as chat:
        record = data / "host.json"
        assert stat.S_IMODE(record.stat().st_mode) == 0o600
        assert stat.S_IMODE(data.stat().st_mode) == 0o700  # made by agent-host: private as a whole
        published = json.loads(record.read_text())
        assert published["url"].startswith("ws://127.0.0.1:") and "token=" in published["url"]
        assert published["url"] not in chat.text  # the token is in the file only

        refused = await _run(["serve", "--port", "0", "--data-dir", str(data)], project, env)
        assert refused.returncode == 2
        assert f"another agent-host (pid {published['pid']}) already runs on the data directory {data}" in refused.stderr
        assert str(record) in refused.stderr and "--data-dir" in refused.stderr
        assert "Traceback" not in refused.stderr

        # Doing what the message says works: another client with the URL from the file.
        other = await _run(["chat", published["url"], "-p", "ping", "--agent", "offline"], project, env)
        assert other.returncode == 0, other.stderr
        assert 'You said: "ping"' in other.stdout
    await _host_stopped(data)


async def test_a_host_running_with_another_config_is_named_not_silently_used(tmp_path: Path) -> None:
    (project,) = _projects(tmp_path, "project")
    env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
    one = _config(tmp_path, "http://127.0.0.1:9/v1", "one.toml")
    two = _config(tmp_path, "http://127.0.0.1:9/v1", "two.toml")
    async with _chat(["--config", str(one), "--agent", "offline"], project, env):
        refused = await _run(["--config", str(two), "-p", "hi", "--agent", "offline"], project, env)
        assert refused.returncode == 2
        assert f"runs with {one}, not {two}" in refused.stderr
        assert "it is still in use: quit the agent-host chats and scripts using it" in refused.stderr and "--data-dir" in refused.stderr
    await _host_stopped(_data(tmp_path))


async def test_an_address_file_others_can_read_is_refused_not_used(tmp_path: Path) -> None:
    (project,) = _projects(tmp_path, "project")
    env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
    data = _data(tmp_path)
    async with _chat(["--agent", "offline"], project, env):
        os.chmod(data / "host.json", 0o644)
        refused = await _run(["-p", "hi", "--agent", "offline"], project, env)
        assert refused.returncode == 2
        assert "host.json is not private to you" in refused.stderr and "remove it" in refused.stderr
    await _host_stopped(data)


async def test_a_host_that_died_is_replaced_by_the_next_agent_host(tmp_path: Path) -> None:
    (project,) = _projects(tmp_path, "project")
    env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
    data = _data(tmp_path)
    data.mkdir(parents=True)
    # What a killed host leaves: its address file, naming a process that no longer exists.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    fd = os.open(data / "host.json", os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, json.dumps({"url": "ws://127.0.0.1:9/?token=x", "pid": int(dead.stdout), "config": "none", "terminal": True}).encode())
    os.close(fd)
    answered = await _run(["-p", "hi", "--agent", "offline"], project, env)
    assert answered.returncode == 0, answered.stderr
    assert 'You said: "hi"' in answered.stdout
    await _host_stopped(data)


async def test_an_edited_config_is_taken_on_by_the_running_host_at_the_next_agent_host(tmp_path: Path) -> None:
    (project,) = _projects(tmp_path, "project")
    env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
    data = _data(tmp_path)
    config = _config(tmp_path, "http://127.0.0.1:9/v1")
    first = await _run(["--config", str(config), "-p", "one", "--agent", "offline"], project, env)
    assert first.returncode == 0, first.stderr
    # Usually still running (until it sees nobody uses it), with the config as it was.
    before = _record(data)
    config.write_text(config.read_text() + "# edited\n", encoding="utf-8")
    second = await _run(["--config", str(config), "-p", "two", "--agent", "offline"], project, env)
    assert second.returncode == 0, second.stderr
    assert 'You said: "two"' in second.stdout
    after = _record(data)
    if before is not None and after is not None:
        assert after["config"] != before["config"]  # the running host's (reloaded) or a new one's
    await _host_stopped(data)


async def test_editing_the_config_while_a_chat_is_open_locks_nobody_out_the_host_takes_it_on(tmp_path: Path) -> None:
    (project,) = _projects(tmp_path, "project")
    env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
    data = _data(tmp_path)
    replies = [Reply(200, chat_sse("Hello from the second agent."))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        config = _config(tmp_path, "http://127.0.0.1:9/v1")
        async with _chat(["--config", str(config), "--agent", "offline"], project, env) as chat:
            pid = (_record(data) or {}).get("pid")
            # A second agent and a deny rule (taken on at once), and an MCP setting (waits for a restart).
            config.write_text(
                config.read_text()
                + f'[agents.second]\nkind = "openai-chat"\nbase_url = "{server.base_url}"\napi_key = "sk-test"\nretries = 0\n'
                'title = "first-words"\nmodels = [{id = "second-model", name = "Second", context_window = 8000}]\n'
                '[mcp]\nidle_stop = 60\n',
                encoding="utf-8",
            )
            answered = await _run(["--config", str(config), "-p", "hi", "--agent", "second"], project, env)
            assert answered.returncode == 0, answered.stderr
            assert answered.stdout == "Hello from the second agent.\n"
            assert "mcp.idle_stop apply when it next starts" in answered.stderr
            assert (_record(data) or {}).get("pid") == pid  # the same host, which the chat still uses
            config.write_text(config.read_text().replace("retries = 0\n", "retries = 0\nmax_model_calls = 7\n", 1), encoding="utf-8")
            chat.send("/reload")
            await chat.expect("(the host read the config file again: it took on agents; mcp.idle_stop apply when it next starts)")
            config.write_text(config.read_text() + "[tools]\ndeny = [42]\n", encoding="utf-8")
            chat.send("/reload")
            await chat.expect("tools.deny")  # the file's mistake, named, and the host goes on as it was
            chat.send("hello")
            await chat.expect('You said: "hello"')
    await _host_stopped(data)


async def test_each_project_an_agent_host_starts_in_is_one_to_work_in_when_directories_are_restricted(tmp_path: Path) -> None:
    alpha, beta, gamma = _projects(tmp_path, "alpha", "beta", "gamma")
    env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
    config = tmp_path / "host.toml"
    config.write_text(f'[sessions]\nallowed_directories = ["{gamma}"]\n', encoding="utf-8")
    async with _chat(["--config", str(config), "--agent", "offline"], alpha, env) as chat:
        chat.send("from alpha")
        await chat.expect('You said: "from alpha"', timeout=30)  # where the host was started
        script = await _run(["--config", str(config), "-p", "from beta", "--agent", "offline"], beta, env)
        assert script.returncode == 0, script.stderr  # started later, in another project
        assert 'You said: "from beta"' in script.stdout
        # A plain client (not started there by agent-host) is still held to the configured list.
        url = json.loads((_data(tmp_path) / "host.json").read_text())["url"]
        outside = tmp_path / "elsewhere"
        outside.mkdir()
        refused = await _run(["chat", url, "-p", "hi", "--agent", "offline"], outside, env)
        assert refused.returncode != 0
        assert "add it to [sessions] allowed_directories" in refused.stderr
    await _host_stopped(_data(tmp_path))


async def test_two_agent_hosts_started_at_once_share_the_one_host_they_start(tmp_path: Path) -> None:
    alpha, beta = _projects(tmp_path, "alpha", "beta")
    env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
    runs = await asyncio.gather(*(
        _run(["-p", f"from {project.name}", "--agent", "offline"], project, env) for project in (alpha, beta, alpha, beta)
    ))
    for run, name in zip(runs, ("alpha", "beta", "alpha", "beta")):
        assert run.returncode == 0, run.stderr
        assert f'You said: "from {name}"' in run.stdout
    await _host_stopped(_data(tmp_path))


async def test_a_host_that_cannot_start_says_why_in_the_terminal(tmp_path: Path) -> None:
    (project,) = _projects(tmp_path, "project")
    env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
    _data(tmp_path).mkdir(parents=True)
    (_data(tmp_path) / "journal.sqlite3").write_text("not a database, whatever it is\n", encoding="utf-8")
    failed = await _run(["-p", "hi", "--agent", "offline"], project, env)
    assert failed.returncode == 2
    assert failed.stderr.startswith("agent-host: cannot open the journal at ")  # the host's own words
    assert "Traceback" not in failed.stderr


async def test_a_chat_whose_host_was_killed_starts_it_again_and_goes_on_in_its_session(tmp_path: Path) -> None:
    (project,) = _projects(tmp_path, "project")
    env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
    data = _data(tmp_path)
    async with _chat(["--agent", "offline"], project, env) as chat:
        chat.send("before")
        await chat.expect('You said: "before"', timeout=30)
        await chat.expect("> ")
        killed = json.loads((data / "host.json").read_text())["pid"]
        os.kill(killed, 9)
        await chat.expect("connection lost", timeout=30)
        await chat.expect("(reconnected)", timeout=30)
        chat.send("after")
        shown = await chat.expect('You said: "after"', timeout=30)
        assert "new session" not in shown  # the same session, recovered from the journal
        assert json.loads((data / "host.json").read_text())["pid"] != killed
    await _host_stopped(data)


async def test_a_project_with_its_own_cli_package_does_not_run_it_as_the_host(tmp_path: Path) -> None:
    (project,) = _projects(tmp_path, "project")
    marker = tmp_path / "ran-the-projects-code"
    (project / "cli").mkdir()
    (project / "cli" / "__init__.py").write_text("", encoding="utf-8")
    (project / "cli" / "main.py").write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
    env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
    env.pop("PYTHONPATH")  # as a user's shell has it: agent-host from its installation only
    process = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "agent-host"), "-p", "hi", "--agent", "offline", cwd=project, env=env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    assert 'You said: "hi"' in out.decode()
    assert not marker.exists()
    await _host_stopped(_data(tmp_path))


async def test_a_script_with_other_api_keys_than_the_running_host_is_told_so(tmp_path: Path) -> None:
    (project,) = _projects(tmp_path, "project")
    env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
    env.pop("OPENAI_API_KEY", None)
    async with _chat(["--agent", "offline"], project, env):
        refused = await _run(["-p", "hi", "--agent", "offline"], project, {**env, "OPENAI_API_KEY": "sk-other"})
        assert refused.returncode == 2
        assert "runs with no config file but other API key variables in its environment than this shell has" in refused.stderr
        assert "it is still in use" in refused.stderr and "sk-other" not in refused.stderr
        assert "sk-other" not in (_data(tmp_path) / "host.json").read_text()
    await _host_stopped(_data(tmp_path))


async def test_agent_host_uses_a_host_the_user_serves_on_the_data_directory(tmp_path: Path) -> None:
    (project,) = _projects(tmp_path, "project")
    env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
    data = _data(tmp_path)
    served = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cli.main", "serve", "--port", "0", "--data-dir", str(data), cwd=project,
        env={**env, "PYTHONPATH": str(REPO)}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        assert served.stdout is not None
        line = (await asyncio.wait_for(served.stdout.readline(), 60)).decode()
        assert line.startswith("agent-host listening on ws://127.0.0.1:")
        answered = await _run(["-p", "hi", "--agent", "offline"], project, env)
        assert answered.returncode == 0, answered.stderr
        assert 'You said: "hi"' in answered.stdout
        record = json.loads((data / "host.json").read_text())
        assert record["pid"] == served.pid and record["terminal"] is False
        assert record["url"] == line.removeprefix("agent-host listening on ").strip()
        assert served.returncode is None  # a host the user runs stops when the user stops it
    finally:
        served.send_signal(2)
        await asyncio.wait_for(served.wait(), 60)
    assert not (data / "host.json").exists()


async def test_a_host_still_starting_is_waited_for_and_the_wait_is_said(tmp_path: Path) -> None:
    (project,) = _projects(tmp_path, "project")
    env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
    data = _data(tmp_path)
    data.mkdir(parents=True)
    # Another host has the directory and has not published where it listens yet: the client waits
    # and says so; once that host is gone, the client starts one and answers.
    holder = open(data / "host.lock", "a+")
    fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
    client = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cli.main", "-p", "hi", "--agent", "offline", cwd=project,
        env={**env, "PYTHONPATH": str(REPO)}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        assert client.stderr is not None and client.stdout is not None
        said = (await asyncio.wait_for(client.stderr.readline(), 60)).decode()
        assert said == f"agent-host: waiting for the agent-host starting on {data} (its log: {data / 'host.log'})\n"
        holder.close()
        out, err = await asyncio.wait_for(client.communicate(), 60)
        assert client.returncode == 0, err.decode()
        assert 'You said: "hi"' in out.decode()
    finally:
        holder.close()
        if client.returncode is None:
            client.kill()
            await client.wait()
    await _host_stopped(data)


async def test_agent_host_chat_without_a_url_finds_the_shared_host(tmp_path: Path) -> None:
    (project,) = _projects(tmp_path, "project")
    env = chat_env(XDG_DATA_HOME=str(tmp_path / "data"))
    async with _chat(["--agent", "offline"], project, env):
        answered = await _run(["chat", "-p", "hi", "--agent", "offline"], project, env)
        assert answered.returncode == 0, answered.stderr
        assert 'You said: "hi"' in answered.stdout
    await _host_stopped(_data(tmp_path))
