"""The host's running parts seen by a 0.9.0 (or 1.0.0), a 0.7.0 and a 0.2.0 client at once, over
real WebSockets: every frame each receives fits its version's schema (``_clients``, ``_schemas``;
the 0.2.0 client's frames by the ``frame_checker`` every test has), and every action type of
``REACHED`` is sent to the newest client (to the 0.7.0 client too where 0.7.0 has it).

The parts are real: an agent whose sessions take a while to start (so its clients subscribe
before ``session/ready``) and one whose key is missing (``session/creationFailed``), a workspace
``.mcp.json`` starting the kitchen-sink MCP server (a subprocess) with the session, stopped,
started and backgrounded by the client; an Open Plugins folder the client publishes (a
customization added, toggled and removed); a tool whose result the user confirms; a chat longer
than the host keeps in state, paged back; a watched folder changed on disk; a bash terminal with
shell integration (its commands and directory, skipped where bash is absent); and a config
reload that changes the agents. ``test_every_frame_valid`` covers the rest: the two together make
the host send every type ``_emitted`` says it can.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from ahp.dialects import v0_7
from ahp.state import default_chat_uri
from host.runtime.agents import ModelSpec, ProviderAgent, StaticSource, TurnSettings
from host.transport.dialects.ahp02 import v02_session_state
from host.transport.dialects.newer import changeset_alias
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import config_for, serving
from tests.host.transport.dialects.test_three_versions import without_clock
from tests.tools.mcp.conftest import KITCHEN_SINK

from ._clients import ROOT, Client, assert_every_frame_fits, assert_sent
from ._tool_calls import answered_by

REACHED = frozenset({
    "session/ready", "session/creationFailed", "root/agentsChanged",
    "session/customizationUpdated", "session/customizationRemoved",
    "session/customizationToggled", "session/mcpServerStateChanged", "session/mcpServerStartRequested",
    "session/mcpServerStopRequested", "session/mcpServerBackgroundRequested", "session/serverToolsChanged",
    "chat/toolCallResultConfirmed", "chat/turnsLoaded", "resourceWatch/changed",
})
"""The action types this scenario makes the host send (``test_every_frame_valid`` sends the rest)."""

SHELL_INTEGRATION = frozenset({
    "terminal/commandDetectionAvailable", "terminal/commandExecuted", "terminal/commandFinished", "terminal/cwdChanged",
})
"""The types a bash terminal with shell integration adds (where bash is installed)."""

RECENT = 2
"""Completed turns a chat nobody watches keeps in its state (``[sessions] recent_turns``)."""


class SlowToStart(ProviderAgent):
    """A scripted agent whose sessions get ready (or fail, with ``unavailable``: a missing key) only
    once ``started`` is set, so a client can watch a session before it is ready."""

    def __init__(self, provider: str, script: ScriptedProvider, unavailable: str | None = None) -> None:
        super().__init__(provider, StaticSource(script), display_name=provider.title(), models=[ModelSpec("m1")],
                         settings=TurnSettings(title="first-words"), unavailable=unavailable)
        self.started = asyncio.Event()

    async def prepare_session(self, session: str, state: dict[str, Any]) -> None:
        await self.started.wait()
        await super().prepare_session(session, state)


def _plugin(root: Path) -> Path:
    """An Open Plugins folder with one skill."""
    (root / ".plugin").mkdir(parents=True)
    (root / ".plugin" / "plugin.json").write_text(json.dumps({"name": "notes-kit", "version": "1.0.0",
                                                              "description": "Keeps notes tidy."}))
    (root / "skills" / "tidy").mkdir(parents=True)
    (root / "skills" / "tidy" / "SKILL.md").write_text("---\nname: tidy\ndescription: Tidies notes.\n---\nSort the notes.\n")
    return root


def _container(host: Any, session: str, predicate: Any) -> dict[str, Any] | None:
    return next((c for c in (host.store.state(session) or {}).get("customizations") or () if predicate(c)), None)


def _sink(host: Any, session: str) -> dict[str, Any]:
    """The kitchen-sink server's entry in the session's "MCP servers" container."""
    container = _container(host, session, lambda c: c.get("id") == "mcp-servers") or {}
    return next((child for child in container.get("children") or () if child.get("name") == "sink"), {})


@pytest.mark.parametrize("newest", ["0.9.0", "1.0.0"])
async def test_every_frame_of_the_running_parts_fits_its_version(
    tmp_path: Path, frame_checker: FrameChecker, newest: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    bash = shutil.which("bash")
    home = tmp_path / "home"  # the terminal's bash reads an empty ~/.bashrc, not the machine user's
    home.mkdir()
    (home / ".bashrc").write_text("")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SHELL", bash or "/bin/sh")
    monkeypatch.setenv("ENV", "")
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "notes.txt").write_text("one\n")
    (work / ".mcp.json").write_text(json.dumps({"mcpServers": {"sink": {"command": sys.executable,
                                                                        "args": [str(KITCHEN_SINK), "stdio"]}}}))
    plugin = _plugin(tmp_path / "notes-kit")
    script = ScriptedProvider([
        call_tools(("read_file", {"path": "notes.txt"})), reply("It says one."),
        *[reply(f"Answer {index}.") for index in range(RECENT + 2)],
    ])
    agent, broken = SlowToStart("scripted", script), SlowToStart("broken", ScriptedProvider([]), unavailable="Set BROKEN_API_KEY.")
    config = config_for(tmp_path, tools={"enabled": True, "result_confirmation": ["read_file"]},
                        mcp={"start": "session"}, plugins={"workspace": True},
                        sessions={"recent_turns": RECENT, "default_directory": str(work)}, server={"snapshot_every": 5})
    async with serving(config, frame_checker, [agent, broken]) as (running, old):
        host = running.host
        ident = str(uuid.uuid4())
        session, old_name, chat = f"scripted:/{ident}", f"ahp-session:/{ident}", default_chat_uri(f"scripted:/{ident}")
        new, mid = await Client.open(running), await Client.open(running)
        try:
            await new.join("client-new", newest)
            await mid.join("client-07", "0.7.0")

            # A session that gets ready while every client watches it.
            created = await new.request("createSession", {"channel": session, "workingDirectories": [work.as_uri()]})
            assert created.get("error") is None, created
            for client in (new, mid):
                await client.sub(session)
                await client.sub(chat)
            await old.subscribe(old_name)
            agent.started.set()
            await new.until(lambda: host.store.state(session)["lifecycle"] == "ready" or None)

            # One whose agent cannot start (its key is missing).
            failing = f"broken:/{uuid.uuid4()}"
            assert (await new.request("createSession", {"channel": failing})).get("error") is None
            for client in (new, mid):
                await client.sub(failing)
            broken.started.set()
            await new.until(lambda: host.store.state(failing)["lifecycle"] == "failed" or None)

            # The workspace's MCP server runs with the session; the client stops, starts and backgrounds it.
            await new.until(lambda: (_sink(host, session).get("state") or {}).get("kind") == "ready" or None, timeout=30)
            sink = _sink(host, session)["id"]
            await new.accepted(session, {"type": "session/mcpServerStopRequested", "id": sink})
            await new.until(lambda: (_sink(host, session).get("state") or {}).get("kind") == "stopped" or None, timeout=30)
            await new.accepted(session, {"type": "session/mcpServerStartRequested", "id": sink})
            await new.accepted(session, {"type": "session/mcpServerBackgroundRequested", "id": sink})
            await new.until(lambda: (_sink(host, session).get("state") or {}).get("kind") == "ready" or None, timeout=30)

            # A plugin the client publishes: added, toggled off and on, removed with the client.
            published = {"type": "plugin", "id": "notes-kit", "uri": plugin.as_uri(), "name": "notes-kit", "nonce": "1"}
            await new.accepted(session, {"type": "session/activeClientSet", "activeClient": {
                "clientId": "client-new", "displayName": "A client", "tools": [], "customizations": [published]}})
            await new.until(lambda: ((_container(host, session, lambda c: c.get("uri") == plugin.as_uri()) or {})
                                     .get("load") or {}).get("kind") == "loaded" or None, timeout=20)
            mine = _container(host, session, lambda c: c.get("uri") == plugin.as_uri())
            assert mine is not None
            for enabled in (False, True):
                await new.accepted(session, {"type": "session/customizationToggled", "id": mine["id"],
                                             "enablement": [{"kind": "session", "enabled": enabled}]})
            await new.accepted(session, {"type": "session/activeClientRemoved", "clientId": "client-new"})
            await new.until(lambda: _container(host, session, lambda c: c.get("uri") == plugin.as_uri()) is None or None, timeout=20)

            # A tool whose result the user confirms before the model sees it.
            turn = str(uuid.uuid4())
            await new.accepted(chat, {"type": "chat/turnStarted", "turnId": turn, "startedAt": "2026-12-06T10:00:00.000Z",
                                      "message": {"text": "read the notes", "origin": {"kind": "user"}}})

            def waiting_result() -> str | None:
                active = host.store.state(chat).get("activeTurn") or {}
                return next((part["toolCall"]["toolCallId"] for part in active.get("responseParts") or ()
                             if part.get("kind") == "toolCall" and part["toolCall"]["status"] == "pending-result-confirmation"), None)
            call = await new.until(waiting_result, timeout=30)
            await new.accepted(chat, {"type": "chat/toolCallResultConfirmed", "turnId": turn, "toolCallId": call, "approved": True})
            await new.until(lambda: host.store.state(chat).get("activeTurn") is None or None, timeout=30)

            # A chat longer than the host keeps in state: nobody watches it, so it keeps the newest
            # turns; the next subscribers page the older ones back (``chat/turnsLoaded``, to both).
            side = f"ahp-chat://side/{uuid.uuid4().hex}"
            assert (await new.request("createChat", {"channel": session, "chat": side})).get("error") is None
            await new.sub(side)
            for index in range(RECENT + 2):
                done = str(uuid.uuid4())
                await new.accepted(side, {"type": "chat/turnStarted", "turnId": done, "startedAt": "2026-12-06T10:00:00.000Z",
                                          "message": {"text": f"question {index}", "origin": {"kind": "user"}}})
                await new.until(lambda: host.store.state(side).get("activeTurn") is None or None, timeout=30)
            await new.send({"jsonrpc": "2.0", "method": "unsubscribe", "params": {"channel": side}})
            # (More journal rows, until a snapshot (in the background) wrote the chat's turns and the host trimmed them.)
            async with asyncio.timeout(30):
                while "turnsNextCursor" not in host.store.state(side):
                    await new.accepted(session, {"type": "session/titleChanged", "title": f"Title {new._next_id}"})
            snapshot = await new.sub(side)
            await mid.sub(side)
            cursor = snapshot["state"].get("turnsNextCursor")
            assert cursor is not None, snapshot["state"]
            assert (await new.request("fetchTurns", {"channel": side, "cursor": cursor})).get("error") is None
            await mid.until(lambda: "chat/turnsLoaded" in mid.types() or None)

            # A watched folder changed on disk.
            watch = (await new.request("createResourceWatch", {"channel": ROOT, "uri": work.as_uri()}))["result"]["channel"]
            for client in (new, mid):
                await client.sub(watch)
            (work / "more.txt").write_text("more\n")
            for client in (new, mid):
                await client.until(lambda c=client: "resourceWatch/changed" in c.types() or None, timeout=30)

            # A bash terminal with shell integration: a command, its end, a new directory.
            expected = REACHED
            if bash is not None:
                expected |= SHELL_INTEGRATION
                terminal = f"ahp-terminal:/{uuid.uuid4()}"
                made = await new.request("createTerminal", {"channel": terminal, "claim": {"kind": "client", "clientId": "client-new"}})
                assert made.get("error") is None, made
                for client in (new, mid):
                    await client.sub(terminal)
                await new.until(lambda: host.store.state(terminal).get("supportsCommandDetection") or None, timeout=30)
                await new.dispatch(terminal, {"type": "terminal/input", "data": "cd sub; echo moved\n"})
                for client in (new, mid):
                    await client.until(lambda c=client: SHELL_INTEGRATION <= c.types() or None, timeout=30)

            # The config reloaded with other agents.
            host.reload(config_for(tmp_path, sessions={"default_directory": str(work), "default_agent": "offline"},
                                   agents={"keyless": {"kind": "openai", "models": [{"id": "gpt-test"}]}}))
            for client in (new, mid):
                await client.until(lambda c=client: "root/agentsChanged" in c.types() or None, timeout=10)
            assert "keyless" in [agent["provider"] for agent in host.store.state(ROOT)["agents"]]

            for client in (new, mid):
                await client.request("ping", {"channel": ROOT})  # everything sent before the answer has arrived
            await old.ping()

            # Every client's mirror of every channel it watches is what the host holds, in its version's shapes.
            watched = {ROOT: "root", session: "session", chat: "chat", failing: "session", side: "chat", watch: "resourceWatch"}
            if bash is not None:
                watched[terminal] = "terminal"
            for channel, kind in watched.items():
                held = host.store.state(channel)
                assert new.mirror(channel, kind) == held, (newest, channel)
                assert without_clock(mid.mirror(channel, kind)) == without_clock(v0_7.state_down(kind, held)), ("0.7.0", channel)
            # The 0.2.0 client too, down to who confirmed the tool's result (``answeredBy``, which the host
            # records in the call's ``_meta`` after its completion: the 0.2.0 dialect says the turn again).
            shown = without_clock(v02_session_state(host, old_name))
            assert answered_by(shown, call) == {"clientId": "client-new"}
            assert without_clock(old.state(old_name)) == shown, "0.2.0"
            kinds = {uri: host.store.kind(uri) or host.store.kind(changeset_alias(host, uri) or "")
                     for client in (new, mid) for uri in client.snapshots()}
            assert_every_frame_fits((new, mid), kinds.get)
            assert_sent(expected, new, (mid,))
        finally:
            await new.close()
            await mid.close()
