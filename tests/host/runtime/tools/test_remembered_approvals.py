""""Always allow" is kept for the project it was given in; clients list remembered choices in the
root config and revoke one by removing it; an earlier version's choices stay host-wide, shown as such.
Everything over a real WebSocket, with the host's real SQLite settings file; the sessions are driven
by a client of AHP 1.0.0, the root config also read and written by 0.2.0 and 0.9.0 clients."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS, AhpClient
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import TOKEN, FrameChecker
from tests.host.runtime.agents.harness import idle, ready_session, serving
from tests.host.runtime.agents.harness import run_chat_turn as run_turn

from ._support import scripted, tools_config, wait_pending

KEY = "rememberedApprovals"


def write(path: str) -> Any:
    return call_tools(("write_file", {"path": path, "content": "x"}))


def confirm(client: AhpClient, chat: str, call: dict[str, Any], option: str) -> None:
    client.dispatch(chat, {"type": "chat/toolCallConfirmed", "turnId": call["turnId"], "toolCallId": call["toolCallId"],
                           "approved": True, "confirmed": "user-action", "selectedOptionId": option})


def listed(client: AhpClient) -> Any:
    return ((client.state("ahp-root://") or {}).get("config") or {}).get("values", {}).get(KEY)


def only_call(turn: dict[str, Any]) -> dict[str, Any]:
    [call] = [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]
    return call


def projects(tmp_path: Path) -> tuple[Path, Path]:
    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    (alpha / ".git").mkdir(parents=True)
    (alpha / "src").mkdir()
    beta.mkdir()
    return alpha, beta


async def test_always_allow_applies_in_its_project_and_not_in_another(tmp_path: Path, frame_checker: FrameChecker) -> None:
    alpha, beta = projects(tmp_path)
    provider = ScriptedProvider([write("one.txt"), reply("a"), write("two.txt"), write("three.txt"), reply("c")])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        first = default_chat_uri(await ready_session(client, working_directory=alpha.as_uri()))
        client.send_message(first, "write")
        asked = await wait_pending(client, first)
        always = next(o for o in asked["options"] if o["id"] == "allow-always")
        assert always["label"] == f"Always allow Write File in {alpha}"  # the option names where it applies
        confirm(client, first, asked, "allow-always")
        await idle(client, first)
        await client.wait_for(lambda m, e: bool(listed(client)))
        [choice] = listed(client)
        assert {k: choice[k] for k in ("rule", "scope", "project")} == {"rule": "write_file", "scope": "project", "project": str(alpha)}

        elsewhere = default_chat_uri(await ready_session(client, working_directory=beta.as_uri()))
        client.send_message(elsewhere, "write")
        asked_again = await wait_pending(client, elsewhere)  # another project: the user is asked
        assert asked_again["toolInput"] and "two.txt" in asked_again["toolInput"]
        client.cancel_turn(elsewhere, asked_again["turnId"])
        await idle(client, elsewhere)
        assert not (beta / "two.txt").exists()

        # A subdirectory of the repository is the same project: no question, and the call says why.
        inside = await ready_session(client, working_directory=(alpha / "src").as_uri())
        call = only_call(await run_turn(client, inside, "write"))
        assert (call["confirmed"], call["success"]) == ("setting", True)
        assert call["_meta"]["rememberedApproval"] == {"rule": "write_file", "scope": "project", "project": str(alpha)}
        assert (alpha / "src" / "three.txt").exists()


@pytest.mark.parametrize("version", ["0.2.0", "0.9.0"])
async def test_clients_list_and_revoke_remembered_choices_through_the_root_config(
    tmp_path: Path, frame_checker: FrameChecker, version: str,
) -> None:
    alpha, _ = projects(tmp_path)
    provider = ScriptedProvider([write("one.txt"), reply("a"), write("two.txt")])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, client):
        # (its frames checked against the schema of the version it negotiated, as every client's)
        other = await AhpClient.connect(running.url.split("?")[0], token=TOKEN)
        try:
            await other.initialize(subscriptions=["ahp-root://"], protocol_versions=(version,))
            assert listed(other) == []
            chat = default_chat_uri(await ready_session(client, working_directory=alpha.as_uri()))
            client.send_message(chat, "write")
            confirm(client, chat, await wait_pending(client, chat), "allow-always")
            await idle(client, chat)
            await other.wait_for(lambda m, e: bool(listed(other)))  # every client sees it appear

            # A malformed value is refused with a message that says what the list holds; nothing is lost.
            bad = other.dispatch("ahp-root://", {"type": "root/configChanged", "config": {KEY: [{"rule": "write_file"}]}})
            outcome = await other.outcome(bad)
            assert outcome.status == "rejected" and "'scope'" in (outcome.reason or "")
            # Replacing the config without the key revokes nothing: the host lists its choices again.
            other.dispatch("ahp-root://", {"type": "root/configChanged", "config": {"telemetryLevel": "off"}, "replace": True})
            await other.wait_for(lambda m, e: listed(other) is not None and len(listed(other)) == 1)
            # An entry the host does not remember cannot be added this way.
            forged = {"rule": "shell", "scope": "host"}
            other.dispatch("ahp-root://", {"type": "root/configChanged", "config": {KEY: [*listed(other), forged]}})
            await other.wait_for(lambda m, e: forged not in (listed(other) or [forged]) and len(listed(other)) == 1)
            assert [(r.rule, r.project) for r in running.host.tools.settings.remembered()] == [("write_file", str(alpha))]

            # Revoking: the list without the entry.
            other.dispatch("ahp-root://", {"type": "root/configChanged", "config": {KEY: []}})
            await client.wait_for(lambda m, e: listed(client) == [])
            assert running.host.tools.settings.remembered() == ()
            client.send_message(chat, "write again")
            asked = await wait_pending(client, chat)  # revoked: the user is asked again
            assert "two.txt" in asked["toolInput"]
            client.cancel_turn(chat, asked["turnId"])
            await idle(client, chat)
        finally:
            await other.close()


def _old_settings(data: Path, *rules: str) -> None:
    data.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(data / "tool_settings.sqlite3")
    db.execute("CREATE TABLE always_allow (rule TEXT PRIMARY KEY, added_at INTEGER NOT NULL)")
    db.execute("CREATE TABLE session_allow (session TEXT NOT NULL, rule TEXT NOT NULL, added_at INTEGER NOT NULL, "
               "PRIMARY KEY (session, rule))")
    db.executemany("INSERT INTO always_allow VALUES (?, ?)", [(rule, 1000 + i) for i, rule in enumerate(rules)])
    db.commit()
    db.close()


async def test_an_earlier_versions_choices_stay_host_wide_and_are_shown_as_such(tmp_path: Path, frame_checker: FrameChecker) -> None:
    _, beta = projects(tmp_path)
    _old_settings(tmp_path / "data", "write_file", "shell(git status:*)")
    provider = ScriptedProvider([write("one.txt"), reply("a"), write("two.txt")])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        assert listed(client) == [
            {"rule": "write_file", "scope": "host", "addedAt": 1000},
            {"rule": "shell(git status:*)", "scope": "host", "addedAt": 1001},
        ]
        session = await ready_session(client, working_directory=beta.as_uri())
        call = only_call(await run_turn(client, session, "write"))
        assert call["confirmed"] == "setting"  # kept as they were: every project
        assert call["_meta"]["rememberedApproval"] == {"rule": "write_file", "scope": "host"}

        # A session that asks for this project's choices only (what `agent-host -p` does) is asked.
        client.dispatch(session, {"type": "session/configChanged", "config": {"useRememberedApprovals": "project"}})
        await client.wait_for(lambda m, e: client.state(session)["config"]["values"].get("useRememberedApprovals") == "project")
        chat = default_chat_uri(session)
        client.send_message(chat, "write again")
        asked = await wait_pending(client, chat)
        assert "two.txt" in asked["toolInput"]
        client.cancel_turn(chat, asked["turnId"])
        await idle(client, chat)
