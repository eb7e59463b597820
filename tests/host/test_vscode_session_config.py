"""The session config VS Code 1.139.1 sends in ``createSession``, over a real WebSocket as a 0.9.0
client: its ``autoApprove`` levels, ``mode`` and ``isolation`` come from its own settings, not from
our schema; the host accepts them, maps them onto its confirmation policy, and refuses what it
cannot honour saying why."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from host.runtime.tools import auto_approve_of
from host.transport.server import RunningHost
from tests.host.test_vscode import Peer

ROOT = "ahp-root://"


async def vscode(running_host: RunningHost) -> Peer:
    peer = await Peer.open(running_host)
    await peer.initialize(str(uuid.uuid4()), ["0.9.0", "0.7.0"])
    return peer


async def create(peer: Peer, folder: Path, config: dict) -> tuple[str, dict]:
    channel = f"offline:/{uuid.uuid4()}"
    reply = await peer.request("createSession", {"channel": channel, "provider": "offline",
                                                 "workingDirectories": [folder.as_uri()], "config": config,
                                                 "progressToken": str(uuid.uuid4())})
    return channel, reply


@pytest.mark.parametrize("config, asks", [
    ({"isolation": "folder", "autoApprove": "default", "mode": "interactive"}, True),
    ({"isolation": "folder", "autoApprove": "assisted", "mode": "interactive"}, True),
    ({"isolation": "folder", "autoApprove": "autoApprove", "mode": "interactive"}, False),
    ({"isolation": "folder", "autoApprove": "default", "mode": "autopilot"}, False),
    ({"isolation": "folder", "autoApprove": "default", "mode": "plan"}, True),
    ({"autoApprove": True}, False),
])
async def test_vscode_session_config_is_accepted_and_maps_onto_confirmation(
        running_host: RunningHost, tmp_path: Path, config: dict, asks: bool) -> None:
    peer = await vscode(running_host)
    try:
        channel, reply = await create(peer, tmp_path, config)
        assert "error" not in reply, reply
        assert reply["result"] is None
        subscribed = await peer.request("subscribe", {"channel": channel})
        values = subscribed["result"]["snapshot"]["state"]["config"]["values"]
        assert values["autoApprove"] is (config["autoApprove"] in (True, "autoApprove"))  # what the level means here
        for key in ("mode", "isolation"):
            if key in config:
                assert values[key] == config[key]
        assert auto_approve_of(running_host.host.store.state(channel)) is (not asks)
    finally:
        await peer.close()


@pytest.mark.parametrize("config, words", [
    ({"isolation": "worktree"}, ["worktree", "folder"]),
    ({"autoApprove": "always"}, ["always", "true or false", "autoApprove"]),
    ({"mode": "yolo"}, ["yolo", "interactive"]),
])
async def test_what_the_host_cannot_honour_is_refused_saying_why(
        running_host: RunningHost, tmp_path: Path, config: dict, words: list[str]) -> None:
    peer = await vscode(running_host)
    try:
        channel, reply = await create(peer, tmp_path, config)
        assert reply["error"]["code"] == -32602
        for word in words:
            assert word in reply["error"]["message"]
        assert running_host.host.store.state(channel) is None
    finally:
        await peer.close()


async def test_resolve_session_config_lists_vscode_properties_only_when_sent(running_host: RunningHost) -> None:
    peer = await vscode(running_host)
    try:
        plain = (await peer.request("resolveSessionConfig", {"channel": ROOT, "provider": "offline"}))["result"]
        assert "mode" not in plain["schema"]["properties"] and "isolation" not in plain["schema"]["properties"]
        sent = (await peer.request("resolveSessionConfig", {"channel": ROOT, "provider": "offline",
                                                            "config": {"mode": "plan", "isolation": "folder"}}))["result"]
        assert sent["values"]["mode"] == "plan" and sent["values"]["isolation"] == "folder"
        assert sent["schema"]["properties"]["mode"]["enum"] == ["interactive", "plan", "autopilot"]
    finally:
        await peer.close()


async def test_vscode_changes_the_approval_level_later(running_host: RunningHost, tmp_path: Path) -> None:
    peer = await vscode(running_host)
    try:
        channel, reply = await create(peer, tmp_path, {"isolation": "folder", "autoApprove": "default", "mode": "interactive"})
        await peer.request("subscribe", {"channel": channel})
        store = running_host.host.store
        for seq, level in enumerate(["always", "autoApprove", "assisted"], start=1):
            await peer.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {
                "channel": channel, "clientSeq": seq, "action": {"type": "session/configChanged", "config": {"autoApprove": level}}}})
            await peer.request("ping", {"channel": ROOT})
            if level == "always":  # refused: the session still asks
                assert store.state(channel)["config"]["values"]["autoApprove"] is False
                assert auto_approve_of(store.state(channel)) is False
            else:
                assert store.state(channel)["config"]["values"]["autoApprove"] == level
                assert auto_approve_of(store.state(channel)) is (level == "autoApprove")
    finally:
        await peer.close()
