"""Issue 21's acceptance test: the real VS Code 1.139.1 (inside code-server 4.139.1) against our host.

One VS Code, one host and one recording proxy between them are shared by the steps below, which
run in order, each its own test with its own screenshots; a step whose prerequisite failed is
skipped with that failure as the reason. Artifacts (screenshots, code-server, host and driver logs,
``wire.jsonl`` with every frame, the "Inspect Agent Host Subscriptions" reports) are written to
``tests/e2e/artifacts/vscode-<target>/``.

  a. VS Code lists the host's agents and models (those of the root state it was given);
  b. a new session in the project folder (createSession with the folder, answered);
  c. a message streams an answer (the ``replay`` agent: recorded provider traffic);
  d. a tool call asks for confirmation in VS Code's UI and runs once approved;
  e. the edit shows as a change;
  f. cancel stops the answer;
  g. a page reload shows the same conversation (opened from the Sessions list);
  h. a second client on the same session sees the same turns live, and VS Code sees its turns;
  k. the chat view's header shows the session's title (the host's, not the first message);
  m. "Fork conversation from this point" forks the chat: VS Code opens the fork ("Forked:
     <title>" in its header) with the turns before that point, and a message there is answered;
  n. a tool that is not a command (an MCP tool of the project's ``.mcp.json``) asks on VS Code's
     generic card, which offers the host's choices: "in this session" runs it and a second call
     is not asked again; a denied call of another tool does not run and the model is told.

(Steps i and j are the workspace-trust steps of ``test_vscode_trust.py``; step o, VS Code on one
process of a cluster running a turn in a session another process runs, is ``test_vscode_cluster.py``.)

These steps run code-server with ``--disable-workspace-trust`` (VS Code then forwards
``workspaceTrust.enabled: false``, which this host reads as "every folder trusted"); steps i and j,
with VS Code's workspace trust on, are in ``test_vscode_trust.py``.

Steps d to h use a session on an agent of kind ``anthropic`` whose API is ``fake_anthropic``
(scripted answers, tool calls and a slow answer), since the recorded cassettes call no tool that
needs confirmation and write no file.

``AGENT_HOST_E2E_TARGET=reference`` runs the same steps against VS Code's own reference agent
host (shipped in code-server, AHP 0.9.0) with its Claude agent on the same fake API: a check of
the driver against a host VS Code certainly understands (needs ``install.sh --reference``).

``AGENT_HOST_E2E_HOST_CHECKOUT=<dir>`` runs the host from another checkout of this project (for
instance a branch exported with ``git archive``) instead of this one.

VS Code 1.139.1 never paints a confirmation asked for in the first turn of a new session, so step d
sends one plain message first (see tests/e2e/vscode/README.md for this and what each step needs
from the host).

The module skips unless ``scripts/vscode-e2e/install.sh`` has run; select it with ``-m vscode``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import fresh_artifacts
from tests.e2e.fake_anthropic import MODEL_ID, NOTES_CONTENT, FakeAnthropic
from tests.e2e.harness import (
    REPO,
    Driver,
    Install,
    OurHost,
    Process,
    bridge_vscode_to,
    free_port,
    start_code_server,
    start_our_host,
    write_vscode_settings,
)
from tests.e2e.recording import Wire
from tests.e2e.wire_proxy import WireProxy

TARGET = os.environ.get("AGENT_HOST_E2E_TARGET", "host")
INSTALL = Install.default()
_PROBLEM = INSTALL.problem() or (INSTALL.reference_problem() if TARGET == "reference" else None)

pytestmark = [
    pytest.mark.vscode,
    pytest.mark.skipif(_PROBLEM is not None, reason=str(_PROBLEM)),
    pytest.mark.timeout(600),
]


def our_host_only(why: str) -> list[pytest.MarkDecorator]:
    """The marks of a module of VS Code steps that check this project's host (``why``): these
    steps' marks, and skipped against the reference host."""
    return [*pytestmark, pytest.mark.skipif(TARGET != "host", reason=why)]

# The agent (provider id) of step c, and of steps d to h.
CHAT_PROVIDER = {"host": "replay", "reference": "claude"}[TARGET]
TOOL_PROVIDER = {"host": "scripted", "reference": "claude"}[TARGET]
# The scripted agent titles sessions by asking the model, which answers this (fake_anthropic).
SCRIPTED_TITLE = "Scripted title"
FORK_MESSAGE = "Hello from the fork"

FIRST_MESSAGE = "Hello! What can you do?"
WARM_UP_MESSAGE = "Hello, scripted model"
RUN_MESSAGE = "Please run the command"
NOTES_MESSAGE = "Please create the notes file"
SLOW_MESSAGE = "Please answer slowly"
SECOND_CLIENT_MESSAGE = "Hello from the second client"
VSCODE_AGAIN_MESSAGE = "Hello again from VS Code"
STAMP_MESSAGE = "Please stamp first"
STAMP_AGAIN_MESSAGE = "Please stamp second"
ERASE_MESSAGE = "Please erase the stamps"
STAMPS = "stamps.txt"  # what stamp_server.py writes in the project


def _scripted_answer(words: str) -> str:
    return f"Hello from the scripted model. You said: {words}."


@dataclass
class Run:
    """Everything the steps share."""

    artifacts: Path
    project: Path
    driver: Driver
    proxy: WireProxy
    fake: FakeAnthropic
    code_server_url: str
    host: OurHost | None
    outcome: dict[str, str | None] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)

    @property
    def wire(self) -> Wire:
        return Wire(self.proxy.entries())

    def where(self) -> str:
        return f"(artifacts: {self.artifacts})"

    @contextmanager
    def step(self, name: str, needs: tuple[str, ...] = ()) -> Iterator[None]:
        """Runs a step: skipped when a step it needs did not pass; its outcome is kept."""
        for need in needs:
            if need not in self.outcome:
                self.outcome[name] = f"step {need} did not run"
                pytest.skip(f"needs step {need}, which did not run")
            if self.outcome[need] is not None:
                self.outcome[name] = f"needs step {need}"
                pytest.skip(f"needs step {need}, which did not pass: {self.outcome[need]}")
        try:
            yield
        except BaseException as error:
            self.outcome[name] = (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
            raise
        self.outcome[name] = None

    def agent_name(self, provider: str) -> str:
        for agent in self.wire.root_agents():
            if agent.get("provider") == provider:
                return agent.get("displayName") or provider
        raise AssertionError(f"the root state VS Code received has no agent {provider!r} {self.where()}")


def _write_host_config(path: Path, project: Path, fake_url: str) -> None:
    cassettes = REPO / "cassettes"
    replay_models = [
        ("anthropic-thinking", "Claude thinking (recorded)", cassettes / "anthropic" / "messages-stream-thinking-multiturn.yaml"),
        ("openai-reasoning", "GPT-5 reasoning summary (recorded)", cassettes / "openai" / "responses-stream-reasoning-summary-multiturn.yaml"),
    ]
    models = ",\n  ".join(f'{{ id = "{id_}", name = "{name}", cassette = "{cassette}" }}' for id_, name, cassette in replay_models)
    path.write_text(f"""\
[sessions]
default_directory = "{project}"
default_agent = "replay"
offline_agent = false

[agents.replay]
kind = "replay"
display_name = "Recorded replay (offline)"
strict = false
models = [
  {models},
]

[agents.scripted]
kind = "anthropic"
display_name = "Scripted"
description = "Scripted answers from a fake Anthropic API (the end-to-end test's)"
base_url = "{fake_url}"
api_key = "fake-key-for-the-e2e-test"
title = "model"
retries = 0
models = [{{ id = "{MODEL_ID}", name = "Scripted Claude" }}]
""")


def _stop_all(driver: Driver | None, processes: list[Process], proxy: WireProxy | None, fake: FakeAnthropic) -> None:
    """Stop what a run started, the browser first and the fake API last (processes in reverse order
    of start); those that never started are None or absent."""
    if driver is not None:
        driver.stop()
    for process in reversed(processes):
        process.stop()
    if proxy is not None:
        proxy.stop()
    fake.stop()


def _start_our_side(base: Path, artifacts: Path, project: Path, fake_url: str, settings: dict[str, Any],
                    processes: list[Process], *, workspace_trust: bool = False) -> tuple[OurHost, WireProxy, Process, str]:
    """Our host (its process added to ``processes``), the recording proxy in front of it and
    code-server bridged to that proxy, opening ``project``; the caller stops them."""
    config = base / "host.toml"
    _write_host_config(config, project, fake_url)
    checkout = os.environ.get("AGENT_HOST_E2E_HOST_CHECKOUT")
    host = start_our_host(config, base / "host-data", artifacts / "host.log", Path(checkout) if checkout else None)
    processes.append(host.process)
    proxy, code_server, url = bridge_vscode_to(host, INSTALL, base=base, artifacts=artifacts, project=project,
                                               settings=settings, workspace_trust=workspace_trust)
    return host, proxy, code_server, url


@pytest.fixture(scope="module")
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    artifacts = fresh_artifacts(f"vscode-{TARGET}")
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"\nvscode e2e ({TARGET}): artifacts in {artifacts}")

    base = tmp_path_factory.mktemp("vscode-e2e")
    project = base / "project"
    project.mkdir()
    (project / "hello.py").write_text("print('hello')\n")
    # The MCP server of step n (both hosts start a folder's .mcp.json servers; Claude Code only
    # with the project's consent in its settings).
    server = {"command": sys.executable, "args": [str(Path(__file__).with_name("stamp_server.py")), str(project)]}
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"stamps": server}}, indent=2) + "\n")
    if TARGET == "reference":
        (project / ".claude").mkdir()
        (project / ".claude" / "settings.json").write_text(json.dumps({"enableAllProjectMcpServers": True}) + "\n")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(["git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid", "add", "."], cwd=project, check=True)
    subprocess.run(["git", "-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid", "commit", "-qm", "start"], cwd=project, check=True)

    fake = FakeAnthropic(project)
    fake_url = fake.start()
    processes: list[Process] = []
    host: OurHost | None = None
    proxy: WireProxy | None = None
    driver: Driver | None = None
    # VS Code's defaults otherwise (our host's agents need no GitHub sign-in: seen with the edge
    # branch, they are listed enabled and VS Code creates sessions on them signed out).
    settings: dict[str, Any] = {"workbench.startupEditor": "none"}
    try:
        if TARGET == "reference":
            reference_port = free_port()
            proxy = WireProxy(reference_port, artifacts / "wire.jsonl")
            bridge_port = proxy.start()
            # The reference host's Claude agent, signed out, on the fake API key.
            settings["chat.agentHost.claudeAgent.enabled"] = True
            settings["chat.agentHost.allowSignedOutWhenUsable"] = True
            write_vscode_settings(base / "code-server", settings)
            code_server, url = start_code_server(
                INSTALL, folder=project, home=base / "code-server", log_path=artifacts / "code-server.log",
                bridge_port=bridge_port, reference_port=reference_port,
                env={"VSCODE_AGENT_HOST_CLAUDE_SDK_ROOT": str(INSTALL.claude_sdk), "ANTHROPIC_API_KEY": "fake-key-for-the-e2e-test",
                     "ANTHROPIC_BASE_URL": fake_url, "IS_SANDBOX": "1"},
            )
        else:
            host, proxy, code_server, url = _start_our_side(base, artifacts, project, fake_url, settings, processes)
        processes.append(code_server)
        driver = Driver(INSTALL, artifacts, profiles=base / "chromium-profiles").start()
        driver.step("open", url=url, folder=str(project))
        yield Run(artifacts, project, driver, proxy, fake, url, host)
    finally:
        _stop_all(driver, processes, proxy, fake)
        # VS Code's own logs (the agent host's among them) next to ours.
        logs = base / "code-server" / "user-data" / "logs"
        if logs.is_dir():
            shutil.copytree(logs, artifacts / "vscode-logs", dirs_exist_ok=True)


def _wait(predicate: Callable[[], Any], timeout: float, interval: float = 0.25) -> Any:
    """The predicate's first truthy value within ``timeout`` seconds, else its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9']+", text)


# -- a ---------------------------------------------------------------------------------------------


def test_a_vscode_lists_the_hosts_agents_and_models(run: Run) -> None:
    with run.step("a"):
        exchange = _wait(lambda: (lambda e: e if e and e[1] else None)(run.wire.initialize()), 60)
        assert exchange, f"VS Code's initialize got no answer within 60 s; {run.wire.story()} {run.where()}"
        offered, answer = exchange
        assert "result" in answer, (
            f"the host refused VS Code's initialize (VS Code offered {offered['params'].get('protocolVersions')}): "
            f"{answer.get('error')} {run.where()}")
        assert answer["result"].get("protocolVersion") in offered["params"]["protocolVersions"]
        agents = run.wire.root_agents()
        assert agents, f"the root state VS Code received lists no agents {run.where()}"
        names = [agent.get("displayName") or agent["provider"] for agent in agents]

        shown = run.driver.step("agents", expect=names, timeoutMs=30000)
        listed = {target["name"]: target for target in shown["targets"]}
        missing = [name for name in names if name not in listed]
        assert not missing, f"VS Code's agent picker does not list {missing}; it lists {list(listed)} {run.where()}"
        for provider in {CHAT_PROVIDER, TOOL_PROVIDER}:
            name = run.agent_name(provider)
            assert not listed[name]["disabled"], f"VS Code lists {name} but disabled: {listed[name]['label']} {run.where()}"

        for agent in agents:
            name = agent.get("displayName") or agent["provider"]
            expected = [model.get("name") or model["id"] for model in agent.get("models") or []]
            if not expected or listed[name]["disabled"]:
                continue
            picked = run.driver.step("pickAgent", name=name)
            assert picked["target"] == name, f"picking {name} left the picker on {picked['target']!r} {run.where()}"
            missing = [model for model in expected if model not in picked["models"]]
            assert not missing, f"VS Code's model picker for {name} lacks {missing}; it shows {picked['models']} {run.where()}"

        report = run.driver.step("inspect", name="a-agents")["text"]
        for name in names:
            assert name in report, f"'Inspect Agent Host Subscriptions' does not mention {name}:\n{report[:1500]}"


# -- b ---------------------------------------------------------------------------------------------


def test_b_a_new_session_in_the_project_folder(run: Run) -> None:
    with run.step("b", needs=("a",)):
        name = run.agent_name(CHAT_PROVIDER)
        mark = run.wire.end
        picked = run.driver.step("pickAgent", name=name, newChat=True)
        created = _wait(lambda: [(c, m) for c, m in run.wire.requests("createSession", since=mark)
                                 if m["params"].get("provider") == CHAT_PROVIDER], 20)
        assert created, f"VS Code sent no createSession for {CHAT_PROVIDER} after {name} was picked {run.where()}"
        conn, request = created[-1]
        folder = run.project.as_uri()
        assert request["params"].get("workingDirectories") == [folder], request["params"]
        answer = _wait(lambda: run.wire.answer(conn, request["id"]), 20)
        assert answer is not None, f"the host did not answer createSession {run.where()}"
        assert "error" not in answer, f"the host refused createSession {request['params']}: {answer['error']} {run.where()}"
        session = request["params"]["channel"]
        failed = run.wire.received(mark, lambda t: t == "session/creationFailed")
        assert not [f for f in failed if f["channel"] == session], f"session creation failed: {failed} {run.where()}"
        assert name in picked["placeholder"], f"the chat input reads {picked['placeholder']!r}, not naming {name} {run.where()}"
        assert not picked["errors"], f"VS Code shows errors: {picked['errors']} {run.where()}"
        run.notes["chat_session"] = session


# -- c ---------------------------------------------------------------------------------------------


def test_c_a_message_streams_an_answer(run: Run) -> None:
    with run.step("c", needs=("b",)):
        mark = run.wire.end
        turn = run.driver.step("send", text=FIRST_MESSAGE, name="c-answer", timeoutMs=90000)
        started = run.wire.dispatched(mark, lambda t: t.endswith("/turnStarted"))
        assert started, f"VS Code dispatched no turnStarted for the message {run.where()}"
        turn_id = started[-1]["action"]["turnId"]
        deltas = [p["action"] for p in run.wire.received(mark, lambda t: t.endswith("/delta")) if p["action"].get("turnId") == turn_id]
        assert len(deltas) >= 2, f"the host streamed {len(deltas)} deltas for the turn {run.where()}"
        assert not turn["errors"], f"VS Code shows errors: {turn['errors']} {run.where()}"
        assert not turn["running"], f"the turn still runs in VS Code after the answer {run.where()}"
        shown = turn["response"]["markdown"] if turn["response"] else ""
        # The text parts only (reasoning streams too, but VS Code folds it away).
        markdown_parts = {p["action"]["part"].get("id") for p in run.wire.received(mark, lambda t: t.endswith("/responsePart"))
                          if p["action"].get("turnId") == turn_id and p["action"].get("part", {}).get("kind") == "markdown"}
        streamed = "".join(str(delta.get("content", "")) for delta in deltas if delta.get("partId") in markdown_parts)
        expected = _words(streamed)
        found = set(_words(shown))
        missing = [word for word in expected if word not in found]
        assert expected and len(missing) <= len(expected) // 10, (
            f"VS Code shows {shown[:300]!r} but the host streamed {streamed[:300]!r} {run.where()}")
        # Whether VS Code paints the answer in pieces depends on how fast the host streams (a
        # replayed recording arrives within milliseconds); the samples are kept as evidence.
        run.notes["c_samples"] = turn["samples"]


# -- d ---------------------------------------------------------------------------------------------


def test_d_a_tool_call_asks_for_confirmation_and_runs_once_approved(run: Run) -> None:
    with run.step("d", needs=("b",)):
        name = run.agent_name(TOOL_PROVIDER)
        run.driver.step("pickAgent", name=name, newChat=True)
        # VS Code 1.139.1 does not render a confirmation asked for in the very first turn of a new
        # session (it stays at "Evaluating"; seen with its own reference host): one turn first.
        warm_up = run.driver.step("send", text=WARM_UP_MESSAGE, name="d-warm-up", timeoutMs=60000)
        assert _scripted_answer(WARM_UP_MESSAGE) in (warm_up["response"] or {}).get("markdown", ""), (
            f"the first answer on {name} reads {warm_up['response']} {run.where()}")
        mark = run.wire.end
        turn = run.driver.step("send", text=RUN_MESSAGE, name="d-asks", timeoutMs=60000)
        assert turn["confirmation"], f"no confirmation appeared; VS Code shows {turn['response']} errors {turn['errors']} {run.where()}"
        assert not (run.project / "ran.txt").exists(), "the command ran before it was approved"
        done = run.driver.step("confirm", choice="Allow", timeoutMs=60000)
        confirmed = run.wire.dispatched(mark, lambda t: t.endswith("/toolCallConfirmed"))
        assert confirmed and confirmed[-1]["action"].get("approved") is True, f"VS Code dispatched {confirmed} {run.where()}"
        assert _wait(lambda: (run.project / "ran.txt").exists(), 20), f"the approved command did not run {run.where()}"
        shown = done["response"]["markdown"] if done["response"] else ""
        assert "Done: the tool finished." in shown, f"after the tool VS Code shows {shown!r} {run.where()}"
        run.notes["tool_session"] = run.wire.session_of_last_turn(mark)


# -- e ---------------------------------------------------------------------------------------------


def test_e_the_edit_shows_as_a_change(run: Run) -> None:
    with run.step("e", needs=("d",)):
        turn = run.driver.step("send", text=NOTES_MESSAGE, name="e-edit", timeoutMs=60000)
        if turn["confirmation"]:
            turn = run.driver.step("confirm", choice="Allow", timeoutMs=60000)
        notes = run.project / "notes.txt"
        assert _wait(notes.exists, 20), f"the file was not written {run.where()}"
        assert notes.read_text() == NOTES_CONTENT
        changes = run.driver.step("changes")
        # How many lines a host counts (against the last checkpoint, the branch...) is its own
        # business (the reference host said +1 -0 on one run and +2 -1 on another).
        assert changes["summary"] and re.match(r"[1-9]\d* files? changed, [1-9]\d* lines? added", changes["summary"]), (
            f"the answer's file changes read {changes['summary']!r} {run.where()}")
        assert any("notes.txt" in row for row in changes["files"]), f"the changed files listed are {changes['files']} {run.where()}"


# -- f ---------------------------------------------------------------------------------------------


def test_f_cancel_stops_the_answer(run: Run) -> None:
    with run.step("f", needs=("d",)):
        mark = run.wire.end
        result = run.driver.step("cancel", text=SLOW_MESSAGE, afterChars=20, timeoutMs=60000)
        assert result["couldCancel"], f"no Cancel button while the answer streamed {run.where()}"
        cancelled = run.wire.dispatched(mark, lambda t: t.endswith("/turnCancelled"))
        assert cancelled, f"VS Code dispatched no turnCancelled {run.where()}"
        assert not result["running"], f"the turn still runs after Cancel {run.where()}"
        assert result["after"]["markdown"] == result["atCancel"]["markdown"], "the answer kept growing after Cancel"
        assert len(_words(result["after"]["markdown"])) < 100, "the slow answer was not cut short"


# -- g ---------------------------------------------------------------------------------------------


def _conversation(transcript: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(item["kind"], " ".join(_words(item["markdown"] if item["kind"] == "response" else item["text"]))) for item in transcript]


def test_g_a_page_reload_shows_the_same_conversation(run: Run) -> None:
    with run.step("g", needs=("d",)):
        before = run.driver.step("transcript", name="g-before")["transcript"]
        assert [item["text"] for item in before if item["kind"] == "request"][:2] == [WARM_UP_MESSAGE, RUN_MESSAGE], before
        session = run.notes.get("tool_session")
        title = (session and run.wire.title_of(session)) or WARM_UP_MESSAGE
        run.driver.step("reload")
        after = run.driver.step("openSession", title=title, name="g-after")["transcript"]
        shown, expected = _conversation(after), _conversation(before)
        message = f"after a reload VS Code shows\n{shown}\ninstead of\n{expected} {run.where()}"
        assert [kind for kind, _ in shown] == [kind for kind, _ in expected], message
        for index, ((_, now), (_, then)) in enumerate(zip(shown, expected)):
            if index > 0 and expected[index - 1] == ("request", " ".join(_words(SLOW_MESSAGE))):
                # The cancelled answer: the host may have kept a word or two more than VS Code had
                # painted when Cancel was pressed (deltas already in flight); never fewer.
                assert now.startswith(then), message
            else:
                assert now == then, message
        run.notes["title"] = title


# -- h ---------------------------------------------------------------------------------------------


async def test_h_a_second_client_sees_the_same_turns_live(run: Run) -> None:
    with run.step("h", needs=("g",)):
        session = run.notes["tool_session"]
        if TARGET == "reference":
            _second_vscode_window(run)
            return
        from ahp.dialects.v0_2.uris import v02_session_uri
        from client import ROOT_CHANNEL, AhpClient

        assert run.host is not None
        # Our client speaks AHP 0.2.0, which names VS Code's session <provider>:/<id> ahp-session:/<id>.
        session = v02_session_uri(session)
        client = await AhpClient.connect(run.host.url)
        try:
            await client.initialize(subscriptions=[ROOT_CHANNEL], protocol_versions=("0.2.0",))
            listed = [summary["resource"] for summary in await client.list_sessions()]
            assert session in listed, f"VS Code's session {session} is not among the host's sessions {listed}"
            await client.subscribe(session)
            state = client.state(session) or {}
            texts = [turn["userMessage"]["text"] for turn in state.get("turns", [])]
            assert texts[:4] == [WARM_UP_MESSAGE, RUN_MESSAGE, NOTES_MESSAGE, SLOW_MESSAGE], f"the second client sees turns {texts}"

            # The second client's turn shows in VS Code while it happens.
            client.send_message(session, SECOND_CLIENT_MESSAGE)
            # Driver steps block; they run on a thread so that the client keeps reading its socket.
            shown = await asyncio.to_thread(run.driver.step, "waitForTexts", name="h-second-client-turn", timeoutMs=60000,
                                            texts=[SECOND_CLIENT_MESSAGE, _scripted_answer(SECOND_CLIENT_MESSAGE)])
            text = "\n".join(item["text"] for item in shown["transcript"])
            assert SECOND_CLIENT_MESSAGE in text and _scripted_answer(SECOND_CLIENT_MESSAGE) in text, (
                f"VS Code did not show the second client's turn live {run.where()}")

            # VS Code's turn reaches the second client.
            await client.wait_for(lambda m, e: not (client.state(session) or {}).get("activeTurn"), timeout=30)
            await asyncio.to_thread(run.driver.step, "send", text=VSCODE_AGAIN_MESSAGE, name="h-vscode-turn", timeoutMs=60000)

            def seen() -> bool:
                turns = (client.state(session) or {}).get("turns", [])
                return any(turn["userMessage"]["text"] == VSCODE_AGAIN_MESSAGE and
                           _scripted_answer(VSCODE_AGAIN_MESSAGE) in "".join(part.get("content", "") for part in turn.get("responseParts", []))
                           for turn in turns)

            await client.wait_for(lambda m, e: seen(), timeout=60)
        finally:
            await client.close()


def _second_vscode_window(run: Run) -> None:
    """The reference target: the second client is a second VS Code window (its own profile)."""
    run.driver.step("open", window="second", url=run.code_server_url, folder=str(run.project))
    opened = run.driver.step("openSession", window="second", title=run.notes["title"], name="h-second-window")
    main = run.driver.step("transcript", name="h-main")["transcript"]
    assert _conversation(opened["transcript"]) == _conversation(main)
    run.driver.step("send", window="second", text=SECOND_CLIENT_MESSAGE, name="h-second-window-turn", timeoutMs=60000)
    expected = [SECOND_CLIENT_MESSAGE, _scripted_answer(SECOND_CLIENT_MESSAGE)]
    shown = run.driver.step("waitForTexts", texts=expected, name="h-seen-in-main", timeoutMs=60000)
    text = "\n".join(item["text"] for item in shown["transcript"])
    assert all(part in text for part in expected), f"the first window did not show the second's turn live {run.where()}"


# -- k ---------------------------------------------------------------------------------------------


def test_k_the_chat_header_shows_the_sessions_title(run: Run) -> None:
    with run.step("k", needs=("g",)):
        session = run.notes["tool_session"]
        title = run.wire.title_of(session)
        assert title, f"the host never titled {session} {run.where()}"
        if TARGET == "host":
            assert title == SCRIPTED_TITLE, f"the scripted agent titled the session {title!r} {run.where()}"
        shown = run.driver.step("header", expect=title, name="k-header")["header"]
        assert shown == title, f"the chat view's header reads {shown!r}, the session's title is {title!r} {run.where()}"
        run.notes["tool_title"] = title


# -- m ---------------------------------------------------------------------------------------------


def test_m_fork_conversation_from_this_point(run: Run) -> None:
    with run.step("m", needs=("g",)):
        # From the chat's last request (the newest turn): the fork holds every turn before it.
        mark = run.wire.end
        forked = run.driver.step("fork", name="m-forked", timeoutMs=30000)
        created = run.wire.requests("createChat", since=mark)
        assert created, f"VS Code sent no createChat for the fork; VS Code shows {forked['errors']} {run.where()}"
        conn, request = created[-1]
        source = request["params"].get("source") or {}
        assert source.get("kind") == "fork", request["params"]
        answer = _wait(lambda: run.wire.answer(conn, request["id"]), 20)
        assert answer is not None and "error" not in answer, f"the host answered createChat with {answer} {run.where()}"
        title = run.notes.get("tool_title") or run.wire.title_of(run.notes["tool_session"])
        assert forked["header"] == f"Forked: {title}", f"the forked chat's header reads {forked['header']!r} {run.where()}"
        # The fork holds the source's turns up to the one before the request it was made from.
        turns: list[str] = []
        for action in run.wire.received(0, lambda t: t == "chat/turnStarted"):
            if action["channel"] == source["chat"] and action["action"]["turnId"] not in turns:
                turns.append(action["action"]["turnId"])
        fork = request["params"]["chat"]
        copied = [turn["id"] for turn in (_wait(lambda: run.wire.snapshot_of(fork), 20) or {}).get("turns", [])]
        assert len(turns) >= 2 and source.get("turnId") == turns[-2], f"VS Code forked {turns} from {source.get('turnId')} {run.where()}"
        if TARGET == "host":  # the reference host gives a fork's turns new ids
            assert copied == turns[:-1], f"the fork of {turns} from {source.get('turnId')} holds {copied} {run.where()}"
        assert any(item["kind"] == "response" for item in forked["transcript"]), f"the fork shows {forked['transcript']} {run.where()}"

        # A message in the fork is answered there, and only there.
        mark = run.wire.end
        turn = run.driver.step("send", text=FORK_MESSAGE, name="m-fork-turn", timeoutMs=60000)
        assert _scripted_answer(FORK_MESSAGE) in ((turn["response"] or {}).get("markdown") or ""), turn["response"]
        started = run.wire.dispatched(mark, lambda t: t.endswith("/turnStarted"))
        assert started and started[-1]["channel"] == fork, (
            f"the fork's message went to {started[-1]['channel'] if started else None}, not {fork} {run.where()}")


# -- n ---------------------------------------------------------------------------------------------


def _asked(run: Run, since: float, tool_suffix: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The host's ``toolCallStart`` of the last call of a tool whose name ends with ``tool_suffix``
    since ``since``, and its ``toolCallReady`` (None if none came)."""
    starts = [p["action"] for p in run.wire.received(since, lambda t: t == "chat/toolCallStart")
              if str(p["action"].get("toolName", "")).endswith(tool_suffix)]
    assert starts, f"the host started no call of *{tool_suffix} {run.where()}"
    start = starts[-1]
    readies = [p["action"] for p in run.wire.received(since, lambda t: t == "chat/toolCallReady")
               if p["action"].get("toolCallId") == start["toolCallId"]]
    return start, (readies[-1] if readies else None)


def _confirmed(run: Run, since: float, tool_call_id: str) -> dict[str, Any]:
    """VS Code's ``toolCallConfirmed`` of a call, once the host has taken it (echoed it with the
    same answer: what every client of the session then holds)."""
    def of_call(actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [p["action"] for p in actions if p["action"].get("toolCallId") == tool_call_id]

    sent = of_call(run.wire.dispatched(since, lambda t: t.endswith("/toolCallConfirmed")))
    assert sent, f"VS Code dispatched no toolCallConfirmed for {tool_call_id} {run.where()}"
    echoed = of_call(run.wire.received(since, lambda t: t.endswith("/toolCallConfirmed")))
    assert echoed, f"the host did not take VS Code's answer about {tool_call_id} {run.where()}"
    for key in ("approved", "selectedOptionId"):
        assert echoed[-1].get(key) == sent[-1].get(key), f"VS Code sent {sent[-1]}, the host kept {echoed[-1]}"
    return sent[-1]


def _stamps(run: Run) -> list[str]:
    path = run.project / STAMPS
    return path.read_text().splitlines() if path.exists() else []


def test_n_a_tools_confirmation_choices_on_the_generic_card(run: Run) -> None:
    with run.step("n", needs=("d",)):
        # An MCP tool: neither a command (terminal card) nor a file edit (file card).
        mark = run.wire.end
        turn = run.driver.step("send", text=STAMP_MESSAGE, name="n-asks", timeoutMs=60000)
        start, ready = _asked(run, mark, "__stamp")
        assert (start.get("_meta") or {}).get("toolKind") != "terminal", start
        assert ready is not None and not ready.get("confirmed"), f"the host did not ask about {start['toolName']}: {ready} {run.where()}"
        assert turn["confirmation"], f"no confirmation appeared; VS Code shows {turn['response']} {run.where()}"
        assert _stamps(run) == [], "the tool ran before it was approved"

        # The card shows the host's options: the first approve and the first deny option as
        # buttons, the others of each kind in that button's dropdown.
        options = ready.get("options") or []
        approve = [option["label"] for option in options if option.get("kind") == "approve"]
        deny = [option["label"] for option in options if option.get("kind") == "deny"]
        session = next((option for option in options if option["id"] == "allow-session"), None)
        assert session is not None, f"the host offers no choice for this session: {options} {run.where()}"
        shown = {button["label"]: button["more"] for button in run.driver.step("choices")["buttons"]}
        expected = {approve[0]: approve[1:], deny[0]: deny[1:]}
        assert shown == expected, f"VS Code's card shows {shown}; the host offered {options} {run.where()}"

        # "In this session": the call runs, and the answer after it shows.
        if session["label"] == approve[0]:
            done = run.driver.step("confirm", choice=approve[0], timeoutMs=60000)
        else:
            done = run.driver.step("confirm", choice=approve[0], more=session["label"], timeoutMs=60000)
        answer = _confirmed(run, mark, start["toolCallId"])
        assert answer.get("approved") is True and answer.get("selectedOptionId") == "allow-session", answer
        assert _wait(lambda: _stamps(run) == ["first"], 20), f"{STAMPS} holds {_stamps(run)} {run.where()}"
        assert "Done: the tool finished." in ((done["response"] or {}).get("markdown") or ""), done["response"]

        # The same tool again in this session: VS Code shows no card; the host says why it ran.
        # (VS Code paints a reference host's MCP call in a box of the same class as a card, whose
        # only button is the call's name: a card asks with the host's buttons.)
        mark = run.wire.end
        again = run.driver.step("send", text=STAMP_AGAIN_MESSAGE, name="n-not-asked-again", stopAtConfirmation=False, timeoutMs=40000)
        assert approve[0] not in ((again["confirmation"] or {}).get("buttons") or []), (
            f"VS Code asked again: {again['confirmation']} {run.where()}")
        start, ready = _asked(run, mark, "__stamp")
        assert ready is not None and ready.get("confirmed") in ("setting", "not-needed"), f"the second call's toolCallReady: {ready}"
        if TARGET == "host":
            assert ready["confirmed"] == "setting", ready
        assert not run.wire.dispatched(mark, lambda t: t.endswith("/toolCallConfirmed"))
        assert _wait(lambda: _stamps(run) == ["first", "second"], 20), f"{STAMPS} holds {_stamps(run)} {run.where()}"
        assert "Done: the tool finished." in ((again["response"] or {}).get("markdown") or ""), again["response"]

        # Another tool of the server is asked about; the deny button: it does not run, and the
        # model, told so, says it.
        mark = run.wire.end
        asked = run.driver.step("send", text=ERASE_MESSAGE, name="n-erase-asks", timeoutMs=60000)
        assert asked["confirmation"], f"no confirmation for the other tool; VS Code shows {asked['response']} {run.where()}"
        start, ready = _asked(run, mark, "__erase")
        deny = [option for option in (ready or {}).get("options") or [] if option.get("kind") == "deny"]
        denied = run.driver.step("confirm", choice=deny[0]["label"], timeoutMs=60000)
        answer = _confirmed(run, mark, start["toolCallId"])
        assert answer.get("approved") is False and answer.get("selectedOptionId") == deny[0]["id"], answer
        assert _stamps(run) == ["first", "second"], f"the denied call ran: {STAMPS} holds {_stamps(run)}"
        said = (denied["response"] or {}).get("markdown") or ""
        assert "The tool did not run:" in said, f"after the denial VS Code shows {said!r} {run.where()}"
        if TARGET == "host":
            assert "The tool did not run: The user denied this tool call." in said, said
