"""Issue 22's VS Code steps: the real VS Code 1.139.1 (code-server 4.139.1) with its workspace trust
ON against our host, whose hooks follow the trust VS Code forwards (``root/configChanged`` with
``workspaceTrust``; README "VS Code's own workspace trust").

One code-server (without ``--disable-workspace-trust``), one host of its own and one recording
proxy are shared by the steps (the test_vscode.py steps a-h run first, with workspace trust off,
and are torn down before these start). Two folders bring ``.github/hooks`` whose SessionStart and
UserPromptSubmit hooks write a marker file outside the folder:

  i. VS Code opens ``trusted`` in Restricted Mode; the first message makes VS Code create the session
     and ask "Do you trust the authors of the files in this folder?" (its own dialog, left open
     while the test looks): the host holds the hooks (it asks its own question, which VS Code does
     not show); "Trust Folder & Continue" makes VS Code forward the folder, and the hooks run
     (SessionStart, then UserPromptSubmit for the message VS Code then sends), with no second question;
  j. the same window opens ``untrusted`` and answers VS Code's question with Cancel: VS Code
     forwards a list without it; the session VS Code created there holds the hooks, and a turn in
     it from our 0.2.0 client runs none of them.

Artifacts: ``tests/e2e/artifacts/vscode-host-trust/``. Select with ``-m vscode`` (skips without
``scripts/vscode-e2e/install.sh``, and for ``AGENT_HOST_E2E_TARGET=reference``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import fresh_artifacts
from tests.e2e.fake_anthropic import FakeAnthropic
from tests.e2e.harness import Driver, Process
from tests.e2e.test_vscode import (
    INSTALL,
    TOOL_PROVIDER,
    WARM_UP_MESSAGE,
    Run,
    _scripted_answer,
    _start_our_side,
    _stop_all,
    _wait,
    our_host_only,
)
from tests.e2e.wire_proxy import WireProxy

pytestmark = our_host_only("the workspace trust steps check this project's host (its hooks)")

UNTRUSTED_MESSAGE = "Hello from a folder I do not trust"


HOOK_EVENTS = ("SessionStart", "UserPromptSubmit")


def _hooked_folder(base: Path, name: str, markers: Path) -> Path:
    """A folder whose ``.github/hooks`` log each SessionStart and UserPromptSubmit they run into
    ``markers/<name>.log`` (outside the folder)."""
    folder = base / name
    (folder / ".github" / "hooks").mkdir(parents=True)
    log = markers / f"{name}.log"
    hooks = {"hooks": {event: [{"hooks": [{"type": "command", "command": f"echo {event} >> {log}"}]}] for event in HOOK_EVENTS}}
    (folder / ".github" / "hooks" / "marker.json").write_text(json.dumps(hooks))
    (folder / "README.md").write_text(f"# {name}\n")
    return folder


def _hooks_run(markers: Path, name: str) -> list[str]:
    log = markers / f"{name}.log"
    return log.read_text().split() if log.exists() else []


@pytest.fixture(scope="module")
def trust_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """A second VS Code (code-server) with workspace trust ON, against a host of its own: two folders
    with hooks, ``trusted`` (opened first) and ``untrusted``."""
    artifacts = fresh_artifacts("vscode-host-trust")
    base = tmp_path_factory.mktemp("vscode-e2e-trust")
    markers = base / "markers"
    markers.mkdir()
    trusted = _hooked_folder(base, "trusted", markers)
    untrusted = _hooked_folder(base, "untrusted", markers)
    fake = FakeAnthropic(trusted)
    fake_url = fake.start()
    processes: list[Process] = []
    proxy: WireProxy | None = None
    driver: Driver | None = None
    try:
        host, proxy, code_server, url = _start_our_side(base, artifacts, trusted, fake_url, {"workbench.startupEditor": "none"},
                                                        processes, workspace_trust=True)
        processes.append(code_server)
        driver = Driver(INSTALL, artifacts, profiles=base / "chromium-profiles").start()
        yield Run(artifacts, trusted, driver, proxy, fake, url, host, notes={"untrusted": untrusted, "markers": markers})
    finally:
        _stop_all(driver, processes, proxy, fake)


def _forwarded_trust(run: Run, since: float = 0.0) -> list[dict[str, Any]]:
    """The ``workspaceTrust`` values VS Code dispatched, each with the host's echo (None if none)."""
    found = []
    for params in run.wire.dispatched(since, lambda t: t == "root/configChanged"):
        value = (params["action"].get("config") or {}).get("workspaceTrust")
        if value is not None:
            found.append(value)
    return found


def _trusts(value: dict[str, Any], folder: Path) -> bool:
    from ahp.workspace_trust import uri_folder

    return bool(value.get("enabled")) and any(uri_folder(uri) == str(folder) for uri in value.get("trustedUris") or ())


def _trust_asked(run: Run, session: str) -> bool:
    """Whether the host asked its own trust question in ``session`` (it does so for a folder it does
    not trust that brings hooks): the sign that it decided not to run them."""
    return any(entry["dir"] == "s2c" and session in entry["data"] and '"workspace-trust:' in entry["data"]
               for entry in run.proxy.entries())


def _new_session_in(run: Run, folder: Path, since: float) -> str:
    """The session VS Code created in ``folder`` after ``since`` (it creates one as soon as an agent is picked)."""
    def created() -> str | None:
        for conn, request in reversed(run.wire.requests("createSession", since=since)):
            if request["params"].get("workingDirectories") == [folder.as_uri()] and run.wire.answer(conn, request["id"]):
                return str(request["params"]["channel"])
        return None

    session = _wait(created, 30)
    assert session, f"VS Code created no session in {folder} {run.where()}"
    return session


def test_i_a_folder_trusted_in_vscode_runs_its_hooks_only_once_trusted(trust_run: Run) -> None:
    run = trust_run
    markers: Path = run.notes["markers"]
    with run.step("i"):
        opened = run.driver.step("open", url=run.code_server_url, folder=str(run.project), restrictedWithinMs=30000)
        assert opened["restricted"], f"VS Code did not open the new folder in Restricted Mode {run.where()}"
        forwarded = _wait(lambda: _forwarded_trust(run), 30)
        assert forwarded and forwarded[-1]["enabled"] is True and not _trusts(forwarded[-1], run.project), (
            f"VS Code forwarded {forwarded} for a folder it does not trust yet {run.where()}")

        # The first message: VS Code creates the session in the folder, then asks its own question
        # (left open for now). The host holds the folder's hooks: it asks its own question too.
        mark = run.wire.end
        run.driver.step("pickAgent", name=run.agent_name(TOOL_PROVIDER))
        asked = run.driver.step("send", text=WARM_UP_MESSAGE, name="i-vscode-asks", trustDialog="leave")
        assert asked["trustDialog"]["shown"] and "Do you trust the authors" in asked["trustDialog"]["message"], (
            f"VS Code asked {asked['trustDialog']} {run.where()}")
        session = _new_session_in(run, run.project, mark)
        assert _wait(lambda: _trust_asked(run, session), 30), f"the host did not hold {run.project}'s hooks {run.where()}"
        assert _hooks_run(markers, "trusted") == [], f"the folder's hooks ran before VS Code trusted it {run.where()}"

        # "Trust Folder & Continue": VS Code trusts the folder and forwards it; the host runs the
        # folder's hooks without asking again, and VS Code sends the message.
        mark = run.wire.end
        turn = run.driver.step("trustDialog", choice="trust", name="i-trusted", timeoutMs=60000)
        assert not turn["restricted"], f"VS Code is still in Restricted Mode {run.where()}"
        forwarded = _wait(lambda: [v for v in _forwarded_trust(run, mark) if _trusts(v, run.project)], 30)
        assert forwarded, f"VS Code did not forward its trust in {run.project}: it sent {_forwarded_trust(run, mark)} {run.where()}"
        refused = [p for p in run.wire.received(kind=lambda t: t == "root/configChanged") if "rejectionReason" in p]
        assert not refused, f"the host refused VS Code's config: {refused} {run.where()}"
        assert _scripted_answer(WARM_UP_MESSAGE) in (turn["response"] or {}).get("markdown", ""), (
            f"the answer in the trusted folder reads {turn['response']} {run.where()}")
        ran = _wait(lambda: (lambda events: events if {"SessionStart", "UserPromptSubmit"} <= set(events) else None)(
            _hooks_run(markers, "trusted")), 30)
        assert ran, f"the trusted folder's hooks ran {_hooks_run(markers, 'trusted')}, not SessionStart and UserPromptSubmit {run.where()}"


async def test_j_a_folder_not_trusted_in_vscode_runs_none_of_its_hooks(trust_run: Run) -> None:
    run = trust_run
    markers: Path = run.notes["markers"]
    with run.step("j", needs=("i",)):
        untrusted: Path = run.notes["untrusted"]
        mark = run.wire.end
        # The same window (the same VS Code state, which trusts the first folder) opens the other one.
        opened = await asyncio.to_thread(run.driver.step, "open", url=run.code_server_url, folder=str(untrusted),
                                         restrictedWithinMs=30000)
        assert opened["restricted"], f"VS Code did not open {untrusted} in Restricted Mode {run.where()}"
        forwarded = _wait(lambda: _forwarded_trust(run, mark), 30)
        assert forwarded and _trusts(forwarded[-1], run.project) and not _trusts(forwarded[-1], untrusted), (
            f"VS Code forwarded {forwarded} {run.where()}")

        await asyncio.to_thread(run.driver.step, "pickAgent", name=run.agent_name(TOOL_PROVIDER))
        # The user does not trust it in VS Code ("Cancel"): VS Code sends nothing.
        turn = await asyncio.to_thread(run.driver.step, "send", text=UNTRUSTED_MESSAGE, name="j-untrusted", trustDialog="cancel")
        assert turn["trustDialog"]["shown"] and turn["restricted"], f"VS Code showed {turn} {run.where()}"
        session = _new_session_in(run, untrusted, mark)
        assert _wait(lambda: _trust_asked(run, session), 30), f"the host did not hold {untrusted}'s hooks {run.where()}"

        # A turn in that session from another client still runs none of the folder's hooks.
        from ahp.dialects.v0_2.uris import v02_session_uri
        from client import ROOT_CHANNEL, AhpClient

        assert run.host is not None
        client = await AhpClient.connect(run.host.url)
        try:
            await client.initialize(subscriptions=[ROOT_CHANNEL], protocol_versions=("0.2.0",))
            name = v02_session_uri(session)
            await client.subscribe(name)
            turn_id = client.send_message(name, UNTRUSTED_MESSAGE)
            await client.wait_for(lambda m, e: any(t["id"] == turn_id for t in (client.state(name) or {}).get("turns") or ()), timeout=60)
            [done] = [t for t in client.state(name)["turns"] if t["id"] == turn_id]
            text = "".join(part.get("content", "") for part in done.get("responseParts", []))
            assert _scripted_answer(UNTRUSTED_MESSAGE) in text, f"the turn in the untrusted folder answered {done} {run.where()}"
        finally:
            await client.close()
        assert _hooks_run(markers, "untrusted") == [], f"the untrusted folder's hooks ran {run.where()}"
        assert "UserPromptSubmit" in _hooks_run(markers, "trusted")  # (the other folder's did, in step i)
