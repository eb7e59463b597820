"""What a client can observe of a session's containers loading.

``open_session`` publishes every container as ``loading`` and then, in the same synchronous step
of ``createSession``, one ``customizationUpdated`` per container with its parsed state (the host's
plugins were parsed once at host start; workspace folders are small). So the ``loading`` ->
``loaded`` pair is in the session's action log in that order, but no subscribe can land between
them: even a ``subscribe`` pipelined right behind ``createSession`` is answered with a snapshot in
which every container already has its final load state. These tests pin both facts.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from client import PROTOCOL_VERSIONS
from providers import ScriptedProvider
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import serving
from tests.host.runtime.customizations.test_mcp_sessions import scripted_agent
from tests.host.runtime.customizations.test_restored_sessions import config


async def test_every_container_is_published_loading_before_its_loaded_state(
        tmp_path: Path, plugin_dir: Path, workspace: Path, hook_log: Path, frame_checker: FrameChecker) -> None:
    seen: list[tuple[str, str]] = []

    def record(channel: str, before: Any, after: Any, envelope: dict[str, Any]) -> None:
        action = envelope.get("action") or {}
        if action.get("type") == "session/customizationsChanged":
            seen.extend((c["id"], c["load"]["kind"]) for c in action["customizations"])
        elif action.get("type") == "session/customizationUpdated":
            seen.append((action["customization"]["id"], action["customization"]["load"]["kind"]))

    async with serving(config(tmp_path, plugin_dir, workspace, {}), frame_checker, [scripted_agent(ScriptedProvider([]))], versions=PROTOCOL_VERSIONS) as (running, client):
        running.host.store.observers.append(record)
        channel = f"scripted:/{uuid.uuid4()}"
        # createSession and a pipelined subscribe, as a client that wants every action would send them.
        await asyncio.gather(client.request("createSession", {"channel": channel}), client.subscribe(channel))
        snapshot = {c["name"]: c["load"]["kind"] for c in client.state(channel)["customizations"]}
    ids = list(dict.fromkeys(container for container, _ in seen))
    assert len(ids) == len(snapshot) >= 4
    for container in ids:
        states = [kind for seen_id, kind in seen if seen_id == container]
        assert states[0] == "loading" and states[-1] in ("loaded", "degraded", "error"), (container, states)
    assert snapshot["sample-toolkit"] == "loaded"
    assert "loading" not in snapshot.values()
