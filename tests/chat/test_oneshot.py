"""``agent-host chat -p``: the answer on stdout, activity on stderr, the turn's outcome as status."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

from host.service import AgentHost
from host.transport.server import RunningHost, start_host
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.chat._hostwait import chats, sessions, until_host
from tests.chat._pty import chat_env
from tests.conftest import TOKEN


async def run_p(
    url: str, *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 20.0, stdin: bytes | None = None
) -> tuple[int, str, str]:
    """The client as a script runs it; ``stdin`` is piped in (else it reads from /dev/null)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cli.main", "chat", url, *args,
        cwd=cwd, env=env or chat_env(), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL if stdin is None else asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin), timeout)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_a_completed_turn_prints_only_the_answer_on_stdout_and_exits_0(chat_host: RunningHost, workdir: Path) -> None:
    code, out, err = await run_p(chat_host.url, "-p", "hello", cwd=workdir)
    assert code == 0
    assert out == "Hello from the scenario agent (effort low)\n"
    assert "[3 in · 5 out · scene-1]" in err


async def test_print_mode_gives_scripts_the_markdown_as_written_even_with_a_colour_terminal(chat_host: RunningHost, workdir: Path) -> None:
    env = chat_env(TERM="xterm-256color")
    env.pop("NO_COLOR")
    code, out, _ = await run_p(chat_host.url, "-p", "markdown", cwd=workdir, env=env)
    assert code == 0
    assert out.startswith("# Plan\n\nThis is **important** and `inline`.\n") and "```python\n" in out
    assert "\x1b" not in out


async def test_reasoning_goes_to_stderr(chat_host: RunningHost, workdir: Path) -> None:
    code, out, err = await run_p(chat_host.url, "-p", "think", cwd=workdir)
    assert code == 0
    assert out == "the answer is 42\n"
    assert "thinking: pondering deeply" in err


async def test_a_turn_ending_in_error_exits_1_with_the_message_on_stderr(chat_host: RunningHost, workdir: Path) -> None:
    code, out, err = await run_p(chat_host.url, "-p", "fail", cwd=workdir)
    assert code == 1
    assert out == "trying\n"
    assert "The provider refused: quota exceeded." in err
    assert "Traceback" not in err


async def test_tool_calls_are_denied_without_yes_and_allowed_with_it(chat_host: RunningHost, workdir: Path) -> None:
    code, out, err = await run_p(chat_host.url, "-p", "confirm", cwd=workdir)
    assert code == 3  # completed, but the client refused something for the user
    assert out.startswith("denied (Denied automatically")
    assert "Deny: shell; pass --yes to allow tool calls" in err

    code, out, err = await run_p(chat_host.url, "-p", "confirm", "--yes", cwd=workdir)
    assert code == 0
    assert out == "tool finished via allow-once\n"
    assert "Allow once: shell" in err


async def test_input_requests_are_declined_in_p_mode(chat_host: RunningHost, workdir: Path) -> None:
    code, out, err = await run_p(chat_host.url, "-p", "ask", cwd=workdir)
    assert code == 3
    assert out == "input decline\n"
    assert "declined: -p mode cannot answer" in err


async def test_ctrl_c_cancels_the_turn_and_exits_130(chat_host: RunningHost, workdir: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cli.main", "chat", chat_host.url, "-p", "slow",
        cwd=workdir, env=chat_env(), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    first = await asyncio.wait_for(process.stdout.readuntil(b"working"), 20)
    assert first == b"working"
    process.send_signal(signal.SIGINT)
    out, err = await asyncio.wait_for(process.communicate(), 20)
    assert process.returncode == 130
    assert b"(cancelled)" in err
    await until_host(chat_host, lambda: bool(chats(chat_host)[0][1].get("turns")))
    assert chats(chat_host)[0][1]["turns"][-1]["state"] == "cancelled"


async def test_connection_and_usage_problems_exit_2(chat_host: RunningHost, workdir: Path) -> None:
    code, _, err = await run_p(chat_host.url.replace("token=", "token=x"), "-p", "hi", cwd=workdir)
    assert code == 2 and "token is missing or wrong" in err

    code, _, err = await run_p("ws://127.0.0.1:9/", "-p", "hi", cwd=workdir)
    assert code == 2 and "connection refused" in err

    code, _, err = await run_p("http://127.0.0.1:9/", "-p", "hi", cwd=workdir)
    assert code == 2 and "must start with ws://" in err

    code, _, err = await run_p(chat_host.url, "--session", "ahp-session:/nope", "-p", "hi", cwd=workdir)
    assert code == 2 and "nope" in err
    assert "Traceback" not in err


async def test_the_url_and_token_can_come_from_the_environment(chat_host: RunningHost, workdir: Path) -> None:
    base, token = chat_host.url.split("?token=")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cli.main", "chat", "-p", "hello",
        cwd=workdir, env=chat_env(AGENT_HOST_URL=base, AGENT_HOST_TOKEN=token), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(process.communicate(), 20)
    assert process.returncode == 0
    assert out.decode().startswith("Hello from the scenario agent")


async def test_a_new_session_works_in_the_clients_directory_and_at_paths_resolve_there(chat_host: RunningHost, tmp_path: Path) -> None:
    # The host was started elsewhere (its default directory is the fixture's workdir).
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text("print('hi')\n")
    code, _out, err = await run_p(chat_host.url, "-p", "hello, look at @app.py", cwd=project)
    assert code == 0, err
    (_uri, state), = sessions(chat_host)
    assert state["workingDirectories"][0] == project.resolve().as_uri()
    (_name, chat), = chats(chat_host)
    attachment, = chat["turns"][0]["message"]["attachments"]
    assert attachment["uri"] == (project / "app.py").resolve().as_uri()


async def test_cwd_flag_overrides_the_directory_and_a_missing_one_exits_2(chat_host: RunningHost, workdir: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    code, _out, err = await run_p(chat_host.url, "-p", "hello", "--cwd", str(other), cwd=workdir)
    assert code == 0, err
    (_uri, state), = sessions(chat_host)
    assert state["workingDirectories"][0] == other.resolve().as_uri()
    code, _out, err = await run_p(chat_host.url, "-p", "hello", "--cwd", str(tmp_path / "missing"), cwd=workdir)
    assert code == 2
    assert "no such directory" in err


async def test_an_unknown_agent_or_model_exits_2_saying_what_exists(chat_host: RunningHost, workdir: Path) -> None:
    code, out, err = await run_p(chat_host.url, "--agent", "nope", "-p", "hi", cwd=workdir)
    assert (code, out) == (2, "") and "no agent 'nope' (agents: scenario, offline)" in err and "Traceback" not in err

    code, out, err = await run_p(chat_host.url, "--agent", "scenario", "--model", "nope", "-p", "hi", cwd=workdir)
    assert (code, out) == (2, "") and "agent scenario has no model 'nope' (models: scene-1" in err

    code, out, _ = await run_p(chat_host.url, "--agent", "scenario", "--model", "scene-1", "-p", "hi", cwd=workdir)
    assert (code, out) == (0, "Hello from the scenario agent (effort low)\n")
    assert not sessions(chat_host)[1:]  # the refused runs created no session


async def test_p_without_yes_uses_only_this_projects_remembered_choices_and_says_so(tmp_path: Path) -> None:
    from tests.host.runtime.tools._support import scripted, tools_config

    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    provider = ScriptedProvider([
        call_tools(("write_file", {"path": "host-wide.txt", "content": "x"})), reply("one"),
        call_tools(("write_file", {"path": "project.txt", "content": "x"})), reply("two"),
        call_tools(("write_file", {"path": "resumed.txt", "content": "x"})), reply("three"),
        call_tools(("write_file", {"path": "strict.txt", "content": "x"})), reply("four"),
    ])
    host = AgentHost(tools_config(tmp_path), agents=[scripted(provider)])
    running = await start_host(host, token=TOKEN)
    try:
        tools = host.tools
        # An "always" from an earlier version (host-wide) and one given in another project.
        tools.settings.add(["write_file"], None)
        tools.settings.add(["write_file"], str(elsewhere))
        tools.publish_remembered()

        code, out, err = await run_p(running.url, "-p", "write", cwd=project)
        assert code == 3  # neither applies here: -p asked, and without --yes the answer is no
        assert "Deny: Write File; pass --yes to allow tool calls" in err
        assert not (project / "host-wide.txt").exists()

        tools.settings.add(["write_file"], str(project))
        code, out, err = await run_p(running.url, "-p", "write", cwd=project)
        assert code == 0 and out == "two\n"
        assert (project / "project.txt").exists()
        assert f"(allowed without asking by a choice remembered for {project}: write_file)" in err

        # A session -p resumes gets its own setting back afterwards.
        [session] = [uri for uri, state in host.store.channels("session") if state.get("workingDirectories") == [project.as_uri()]][:1]
        values = lambda: host.store.state(session)["config"]["values"]  # noqa: E731
        assert values()["useRememberedApprovals"] == "project"  # the -p run's own session keeps it
        host.store.dispatch(session, {"type": "session/configChanged", "config": {"useRememberedApprovals": "all"}})
        code, _, err = await run_p(running.url, "-p", "write", "--resume", session.rsplit("/", 1)[-1], cwd=project)
        assert code == 0 and "choice remembered for" in err, err
        assert values()["useRememberedApprovals"] == "all"

        # A session that uses no remembered choices is not loosened to this project's.
        host.store.dispatch(session, {"type": "session/configChanged", "config": {"useRememberedApprovals": "none"}})
        code, _, err = await run_p(running.url, "-p", "write", "--resume", session.rsplit("/", 1)[-1], cwd=project)
        assert code == 3 and "Deny: Write File" in err
        assert values()["useRememberedApprovals"] == "none"
    finally:
        await running.stop()


def _hooked_folder(workdir: Path) -> None:
    """Make the working directory bring a hook: the host asks to trust it."""
    (workdir / ".github" / "hooks").mkdir(parents=True)
    hook = {"type": "command", "command": f"echo started >> {workdir.parent / 'hook.log'}"}
    (workdir / ".github" / "hooks" / "start.json").write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [hook]}]}}))


async def test_p_mode_answers_the_trust_question_no_unless_trust_is_passed(chat_host: RunningHost, workdir: Path) -> None:
    _hooked_folder(workdir)
    code, out, err = await run_p(chat_host.url, "-p", "hello", cwd=workdir)
    assert code == 0  # not trusting the folder is not refusing something for the user
    assert "this folder is not trusted" in err and "pass --trust" in err
    [(_, state)] = sessions(chat_host)
    assert _held(state)
    assert not (workdir.parent / "hook.log").exists()

    code, out, err = await run_p(chat_host.url, "-p", "hello", "--trust", "--new", cwd=workdir)
    assert code == 0
    assert "trusted this folder for this session" in err
    await until_host(chat_host, lambda: any(not _held(state) for _, state in sessions(chat_host)))
    config = chat_host.host.store.state("ahp-root://")["config"]["values"]
    assert not config.get("trustedFolders")  # --trust is for that session only: scripts change nothing lasting


def _held(state: dict) -> bool:
    return any("Waiting for trust" in str((item.get("load") or {}).get("message"))
               for item in state.get("customizations") or () if item.get("name") == ".github/hooks")


async def test_p_says_why_a_hook_asked_for_the_call_it_denies(tmp_path: Path) -> None:
    from tests.host.runtime.tools._support import scripted, tools_config

    project = tmp_path / "project"
    (project / ".github" / "hooks").mkdir(parents=True)
    said = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                                   "permissionDecisionReason": "it touches the release notes"}}
    hook = {"type": "command", "command": f"echo '{json.dumps(said)}'"}
    (project / ".github" / "hooks" / "ask.json").write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [hook]}]}}))
    provider = ScriptedProvider([call_tools(("read_file", {"path": "notes.txt"})), reply("done")])
    host = AgentHost(tools_config(tmp_path), agents=[scripted(provider)])
    running = await start_host(host, token=TOKEN)
    try:
        code, _, err = await run_p(running.url, "-p", "read", "--trust", cwd=project)
        assert code == 3, err
        assert "a plugin hook asks: it touches the release notes; pass --yes to allow tool calls" in err
    finally:
        await running.stop()


async def test_p_commit_in_a_folder_trusted_for_the_run_gets_gits_output_under_its_allowed_tools(tmp_path: Path) -> None:
    import subprocess

    from tests.host.runtime.agents.harness import config_for
    from tests.host.runtime.customizations.test_claude_code_commands import COMMIT, _plugin
    from tests.host.runtime.tools._support import scripted

    plugins = tmp_path / "plugins"
    _plugin(plugins, "commit-commands", {"commands/commit.md": COMMIT})
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True)
    (project / "notes.txt").write_text("ship it\n")
    provider = ScriptedProvider([call_tools(("shell", {"command": "git status --short"})), reply("Staged nothing yet.")])
    config = config_for(tmp_path, tools={"enabled": True}, plugins={"directories": [str(plugins)]}, trust={"folders": []})
    host = AgentHost(config, agents=[scripted(provider)])
    running = await start_host(host, token=TOKEN)
    try:
        code, out, err = await run_p(running.url, "-p", "/commit", "--trust", cwd=project)
        assert code == 0, err
        assert "denied" not in err and "Deny" not in err
        assert out == "Staged nothing yet.\n"
    finally:
        await running.stop()
    sent = repr(provider.requests[0].messages)
    assert "On branch main" in sent and "?? notes.txt" in sent


async def test_session_end_hooks_run_when_a_p_run_ends_and_not_when_the_host_stops(tmp_path: Path) -> None:
    from client import AhpClient
    from tests.host.runtime.agents.harness import ready_session
    from tests.host.runtime.customizations.claude_fixtures import claude_home
    from tests.host.runtime.tools._support import scripted, tools_config

    log = tmp_path / "ended.log"
    hook = {"type": "command", "command": f"cat >> {log}; echo >> {log}"}
    home = claude_home(tmp_path / "claude", settings={"hooks": {"SessionEnd": [{"hooks": [hook]}]}})
    project = tmp_path / "project"
    project.mkdir()
    provider = ScriptedProvider([reply("one"), reply("two")])
    host = AgentHost(tools_config(tmp_path), agents=[scripted(provider)], claude_config_dir=home)
    running = await start_host(host, token=TOKEN)
    try:
        code, out, err = await run_p(running.url, "-p", "hello", cwd=project)
        assert (code, out) == (0, "one\n"), err
        for _ in range(400):  # the hook runs in the background once the client has gone: no frame says so
            if log.exists() and log.read_text().count("SessionEnd") == 1:
                break
            await asyncio.sleep(0.05)
        ended = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
        assert [(e["hook_event_name"], e["reason"]) for e in ended] == [("SessionEnd", "other")]
        # An interactive session left open when the host stops goes on after the restart: no SessionEnd.
        client = await AhpClient.connect(running.url.split("?")[0], token=TOKEN)
        await client.initialize(subscriptions=["ahp-root://"])
        await ready_session(client, provider="scripted", working_directory=project.as_uri())
        await client.close()
    finally:
        await running.stop()
    assert log.read_text().count("SessionEnd") == 1
