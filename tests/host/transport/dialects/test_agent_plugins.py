"""The host's plugins as every client sees them in ``RootState.agents[].customizations``, over real
WebSockets: a plugin that declares MCP servers is listed in the internal model's shape (each
server with a ``state``, which 1.0.0 and 0.9.0 require), as 0.7.0's ``enabled`` flags to a 0.7.0
client, and as 0.2.0's to a 0.2.0 client (checked by the ``frame_checker``); every frame each
client gets fits its version's schema, also after a reload sends ``root/agentsChanged``."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from client import LEGACY_VERSIONS
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import config_for, serving

from ._clients import ROOT, Client, assert_every_frame_fits

SAMPLES = Path(__file__).resolve().parents[3] / "plugins" / "samples"


def _servers(root: dict[str, Any]) -> list[dict[str, Any]]:
    """The MCP server entries of the agents' plugins in a root state."""
    return [child for agent in root["agents"] for plugin in agent.get("customizations") or ()
            for child in plugin.get("children") or () if child.get("type") == "mcpServer"]


async def test_the_host_s_plugins_with_mcp_servers_fit_every_version_s_agent_info(tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugins = tmp_path / "plugins"
    for name in ("sample-toolkit", "sample-degraded"):
        shutil.copytree(SAMPLES / name, plugins / name)
    config = config_for(tmp_path, plugins={"directories": [str(plugins)]})
    async with serving(config, frame_checker, versions=LEGACY_VERSIONS) as (running, legacy):
        clients = {version: await Client.open(running) for version in ("1.0.0", "0.9.0", "0.7.0")}
        try:
            for version, client in clients.items():
                await client.join(f"client-{version}", version)
            roots = {version: client.snapshots()[ROOT]["state"] for version, client in clients.items()}
            assert _servers(roots["1.0.0"]) and all(server["state"] == {"kind": "stopped"} for server in _servers(roots["1.0.0"]))
            assert roots["0.9.0"] == roots["1.0.0"] == running.host.store.state(ROOT)
            assert all(server["enabled"] is True and "enablement" not in server for server in _servers(roots["0.7.0"]))
            assert _servers(legacy.state(ROOT))  # the 0.2.0 client's, checked by the frame checker

            # A reload that changes the agents sends them again, as root/agentsChanged.
            running.host.reload(config_for(tmp_path, plugins={"directories": [str(plugins)]},
                                           agents={"keyless": {"kind": "openai", "models": [{"id": "gpt-test"}]}}))
            for client in clients.values():
                await client.until(lambda c=client: "root/agentsChanged" in c.types() or None, timeout=10)
            await legacy.ping()
            assert_every_frame_fits(clients.values(), running.host.store.kind)
        finally:
            for client in clients.values():
                await client.close()
