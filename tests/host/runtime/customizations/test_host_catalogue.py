"""The host's own plugins as every client sees them in the root state (``AgentInfo.customizations``,
``host.runtime.customizations.host_catalogue``): a plugin from a ``[plugins] directories`` folder
that declares MCP servers in its ``.mcp.json`` (the shape of a user's plugin wrapping
``mcp-server-time`` from PyPI and ``@modelcontextprotocol/server-everything`` from npm, which are
only declared here: nothing starts at host level) is listed with each server, in a shape each
negotiated version's schema accepts (the autouse frame checker; a bare WebSocket for 0.7.0, which
the client library does not speak): an MCP server customization always carries its state, which at
host level is ``stopped``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from client import AhpClient
from host.service import AgentHost
from host.transport.server import start_host
from tests.conftest import TOKEN
from tests.host.runtime.agents.harness import config_for
from tests.host.test_vscode import Peer, assert_valid

ROOT = "ahp-root://"


def registry_plugin(root: Path) -> Path:
    """A plugin folder as a user writes one around servers from package registries."""
    plugin = root / "clock"
    (plugin / ".plugin").mkdir(parents=True)
    (plugin / ".plugin" / "plugin.json").write_text(json.dumps({"name": "clock", "version": "0.1.0", "description": "time"}))
    (plugin / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},
        "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]},
    }}))
    return root


@pytest.mark.parametrize("version", ["1.0.0", "0.9.0", "0.7.0", "0.2.0"])
async def test_a_host_plugins_mcp_servers_are_listed_for_its_agents_in_each_versions_shape(tmp_path: Path, version: str) -> None:
    config = config_for(tmp_path, plugins={"directories": [str(registry_plugin(tmp_path / "plugins"))]})
    running = await start_host(AgentHost(config), token=TOKEN)
    try:
        if version == "0.7.0":
            peer = await Peer.open(running)
            reply = await peer.initialize("seven", [version])
            await peer.close()
            [snapshot] = reply["result"]["snapshots"]
            root = snapshot["state"]
            assert_valid(root, "RootState")  # the exact 0.7.0 schema
        else:
            client = await AhpClient.connect(running.url.split("?")[0], token=TOKEN)
            await client.initialize(subscriptions=[ROOT], protocol_versions=(version,))
            root = client.state(ROOT) or {}
            await client.close()
    finally:
        await running.stop()
    agents = root.get("agents") or []
    assert agents
    for agent in agents:
        [plugin] = agent["customizations"]
        assert (plugin["name"], plugin["load"]) == ("clock", {"kind": "loaded"})
        servers = {child["name"]: child for child in plugin["children"]}
        assert sorted(servers) == ["everything", "time"]
        if version != "0.2.0":
            assert {name: child.get("state") for name, child in servers.items()} == {
                "everything": {"kind": "stopped"}, "time": {"kind": "stopped"}}
