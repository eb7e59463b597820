"""The user's Claude Code plugins in the root config, over real WebSockets: a client adds a
marketplace (a local bare git repository as the remote), switches a plugin on, which installs it
and puts it in a live session from its next turn, switches it off again, and sees why an
unreachable marketplace could not be added."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ahp.claude_plugins import (
    ENABLED_KEY,
    MARKETPLACES_KEY,
    enabled_plugins,
    marketplaces,
    plugin_rows,
    with_enabled,
    with_marketplace,
    without_marketplace,
)
from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS, AhpClient
from providers import ScriptedProvider
from providers.scripted import reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import config_for, idle, ready_session, serving
from tests.host.runtime.agents.harness import run_chat_turn as run_turn
from tests.host.runtime.customizations.claude_fixtures import bare_remote, claude_home, local_marketplace
from tests.host.runtime.customizations.test_claude_code import agent

ROOT = "ahp-root://"


def config(client: AhpClient) -> dict[str, Any]:
    return (client.state(ROOT) or {}).get("config") or {}


def plugin_ids(client: AhpClient, session: str) -> list[str]:
    return [c["id"].removeprefix("claude-plugin:") for c in (client.state(session) or {}).get("customizations") or ()
            if str(c["id"]).startswith("claude-plugin:")]


async def test_a_client_adds_a_marketplace_and_switches_a_plugin_on_and_off_for_live_sessions(
        tmp_path: Path, frame_checker: FrameChecker, monkeypatch: pytest.MonkeyPatch) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    remote = bare_remote(local_marketplace(tmp_path / "src", name="team", plugins=("linter",), hook_marker=markers / "hook.log"),
                         tmp_path / "team.git")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_home(tmp_path / "claude", settings={"env": {"MARKER_ENV": "on"}})))
    provider = ScriptedProvider([reply("one"), reply("two"), reply("three")])
    async with serving(config_for(tmp_path), frame_checker, agents=[agent(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        session = await ready_session(client, provider="scripted")
        assert marketplaces(config(client)) == [] and plugin_rows(config(client)) == []

        client.dispatch(ROOT, {"type": "root/configChanged",
                               "config": {MARKETPLACES_KEY: with_marketplace(marketplaces(config(client)), f"file://{remote}")}})
        await client.wait_for(lambda m, e: any(item.get("name") == "team" for item in marketplaces(config(client))), timeout=30)
        team = next(item for item in marketplaces(config(client)) if item.get("name") == "team")
        assert (team["plugins"], team["origin"], team["source"]) == (["linter"], "here", f"file://{remote}")

        client.dispatch(ROOT, {"type": "root/configChanged",
                               "config": {ENABLED_KEY: with_enabled(enabled_plugins(config(client)), "linter@team", True)}})
        await client.wait_for(lambda m, e: plugin_ids(client, session) == ["linter@team"], timeout=30)
        row = next(row for row in plugin_rows(config(client)) if row["id"] == "linter@team")
        assert (row["enabled"], row["installed"], row["version"]) == (True, "here", "1.0.0")
        await run_turn(client, session, "lint")  # the live session's next turn runs the plugin's hook
        await idle(client, default_chat_uri(session))
        assert (markers / "hook.log").read_text() == "linter on\n"

        client.dispatch(ROOT, {"type": "root/configChanged",
                               "config": {ENABLED_KEY: with_enabled(enabled_plugins(config(client)), "linter@team", False)}})
        await client.wait_for(lambda m, e: plugin_ids(client, session) == [], timeout=30)
        await run_turn(client, session, "again")
        await idle(client, default_chat_uri(session))
        assert (markers / "hook.log").read_text() == "linter on\n"

        client.dispatch(ROOT, {"type": "root/configChanged",
                               "config": {MARKETPLACES_KEY: without_marketplace(marketplaces(config(client)), "team")}})
        await client.wait_for(lambda m, e: marketplaces(config(client)) == [] and plugin_rows(config(client)) == [], timeout=30)


async def test_an_unreachable_marketplace_is_listed_with_the_reason(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    async with serving(config_for(tmp_path), frame_checker, agents=[agent(ScriptedProvider([]))], versions=PROTOCOL_VERSIONS) as (_, client):
        missing = f"file://{tmp_path}/gone.git"
        client.dispatch(ROOT, {"type": "root/configChanged", "config": {MARKETPLACES_KEY: [{"source": missing}]}})
        await client.wait_for(lambda m, e: any(item.get("error") for item in marketplaces(config(client))), timeout=30)
        failed = marketplaces(config(client))[0]
        assert failed["source"] == missing and f"cannot fetch {missing}" in failed["error"]
        refused = await client.outcome(client.dispatch(ROOT, {"type": "root/configChanged", "config": {ENABLED_KEY: {"nomarket": True}}}))
        assert refused.status != "accepted" and "name@marketplace" in str(refused.reason)
