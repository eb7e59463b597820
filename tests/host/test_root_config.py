"""The host's root config: what a client may set with root/configChanged, and what survives restarts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from host.root_config import MAX_UNDECLARED_KEYS, MAX_VALUE_CHARS, ROOT_CONFIG_SCHEMA, root_config_state
from host.service import AgentHost
from host.state.journal import Journal
from host.state.store import ROOT, Store
from host.transport.validation import check_client_action
from tests.conftest import host_config


def root(values: dict[str, Any] | None = None, **schema_props: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": {**ROOT_CONFIG_SCHEMA["properties"], **schema_props}}
    return {"agents": [], "config": {"schema": schema, "values": dict(values or {})}}


def change(config: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "root/configChanged", "config": config, **extra}


def test_a_declared_key_with_a_fitting_value_and_undeclared_keys_are_accepted() -> None:
    assert check_client_action("root", root(), change({"telemetryLevel": "all"}), "c") is None
    assert check_client_action("root", root(), change({"http.proxy": "", "sandbox": {"enabled": "off"}}), "c") is None


@pytest.mark.parametrize(("config", "words"), [
    ({"telemetryLevel": "loud"}, ["'telemetryLevel'", "one of", '"off"']),
    ({"telemetryLevel": 3}, ["'telemetryLevel'", "a string"]),
])
def test_a_declared_key_with_a_wrong_value_is_refused_naming_it(config: dict[str, Any], words: list[str]) -> None:
    reason = check_client_action("root", root(), change(config), "c")
    assert reason is not None
    for word in words:
        assert word in reason


def test_a_read_only_key_is_refused() -> None:
    state = root(policy={"type": "boolean", "title": "Policy", "readOnly": True})
    assert "read-only" in check_client_action("root", state, change({"policy": False}), "c")


VSCODE_TRUST = {"workspaceTrust": {"enabled": True, "trustedUris": ["file:///home/me/project"]}}


def test_vscodes_forwarded_workspace_trust_is_declared_read_only_yet_accepted_from_a_client() -> None:
    prop = ROOT_CONFIG_SCHEMA["properties"]["workspaceTrust"]
    # As VS Code's own agent host declares it (a settings UI shows it; the client sets it).
    assert prop["readOnly"] is True and prop["required"] == ["enabled", "trustedUris"]
    assert check_client_action("root", root(), change(VSCODE_TRUST), "c") is None
    assert check_client_action("root", root(), change({"workspaceTrust": {"enabled": False, "trustedUris": []}}), "c") is None


@pytest.mark.parametrize(("value", "words"), [
    ("on", "an object"),
    ({"enabled": True}, "trustedUris"),
    ({"enabled": True, "trustedUris": ["vscode-remote://box/home/me"]}, "file: URIs"),
])
def test_a_malformed_forwarded_workspace_trust_is_refused_saying_why(value: object, words: str) -> None:
    reason = check_client_action("root", root(), change({"workspaceTrust": value}), "c")
    assert reason is not None and "'workspaceTrust'" in reason and words in reason


def test_undeclared_keys_are_bounded() -> None:
    full = {f"k{index}": index for index in range(MAX_UNDECLARED_KEYS)}
    assert check_client_action("root", root(full), change({"k0": "again"}), "c") is None  # replacing one
    reason = check_client_action("root", root(full), change({"one.more": True}), "c")
    assert reason is not None and str(MAX_UNDECLARED_KEYS) in reason
    assert check_client_action("root", root(full), change({"one.more": True}, replace=True), "c") is None
    reason = check_client_action("root", root(), change({"huge": "x" * MAX_VALUE_CHARS}), "c")
    assert reason is not None and "'huge'" in reason


def test_the_root_starts_with_the_schema_and_keeps_previous_values() -> None:
    assert root_config_state() == {"schema": ROOT_CONFIG_SCHEMA, "values": {}}
    assert root_config_state({"schema": {"old": True}, "values": {"http.proxy": "x"}})["values"] == {"http.proxy": "x"}


NO_PLUGINS = {"enabledPlugins": {}, "pluginMarketplaces": [], "claudePlugins": []}


async def test_a_journal_from_before_the_root_config_gets_it_at_start(tmp_path: Path) -> None:
    config = host_config(tmp_path / "data", default_agent="offline")
    config.data_path().mkdir(parents=True, exist_ok=True)
    old = Store({"agents": [], "activeSessions": 0}, clock=lambda: 1, journal=Journal(config.data_path() / "journal.sqlite3"))
    await old.recover()
    old.dispatch(ROOT, {"type": "root/activeSessionsChanged", "activeSessions": 0})
    await old.close()

    host = AgentHost(config)
    await host.start()
    try:
        # The host's own keys (the remembered approvals, the user's Claude Code plugins; none yet) are listed from the start.
        assert host.store.state(ROOT)["config"] == {**root_config_state(), "values": {"rememberedApprovals": [], **NO_PLUGINS}}
        host.store.dispatch(ROOT, change({"telemetryLevel": "crash", **VSCODE_TRUST}))
    finally:
        await host.stop()
    again = AgentHost(config)
    await again.start()
    try:
        # A client's forwarded workspace trust is its live state: not carried into the next run.
        assert again.store.state(ROOT)["config"]["values"] == {"rememberedApprovals": [], **NO_PLUGINS, "telemetryLevel": "crash"}
    finally:
        await again.stop()


async def test_a_key_set_to_null_is_null_for_every_client(running_host: Any) -> None:
    """``root/configChanged`` with ``null`` sets the value to null, as the official reducers do:
    the host, the sender's echo and another client's mirror agree."""
    from ahp.state import reduce
    from tests.host.test_vscode import Peer

    sender, watcher = await Peer.open(running_host), await Peer.open(running_host)
    await sender.initialize("sender", ["0.9.0"])
    [snapshot] = (await watcher.initialize("watcher", ["0.9.0"]))["result"]["snapshots"]
    for seq, value in ((1, "on"), (2, None)):
        await sender.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {
            "channel": ROOT, "clientSeq": seq, "action": {"type": "root/configChanged", "config": {"chat.someSetting": value}}}})
    await watcher.until(lambda: len([a for a in watcher.actions() if a["action"]["type"] == "root/configChanged"]) == 2 or None)
    held = running_host.host.store.state(ROOT)
    assert "chat.someSetting" in held["config"]["values"] and held["config"]["values"]["chat.someSetting"] is None
    mirror = snapshot["state"]
    for envelope in watcher.actions():
        mirror = reduce("root", mirror, envelope["action"], 0)
    assert mirror["config"]["values"] == held["config"]["values"]
    await sender.close()
    await watcher.close()
