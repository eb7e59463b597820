"""A malformed action a 1.0.0, 0.9.0 or 0.7.0 client dispatches, over a real WebSocket: refused with
a rejection that names the field (its version's vendored actions schema,
``ahp.dialects.params``), sent to the dispatcher alone, applied to nothing, and the connection
goes on working (a well-formed action after it is applied and echoed)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import serving
from tests.host.runtime.tools._support import tools_config

from ._clients import Client

ROOT = "ahp-root://"

MALFORMED = [
    ({"type": "chat/turnStarted", "turnId": 7, "startedAt": "2026-12-06T10:00:00.000Z",
      "message": {"text": "hi", "origin": {"kind": "user"}}}, "turnId must be a string"),
    ({"type": "chat/turnStarted", "turnId": "t1", "message": {"text": "hi", "origin": {"kind": "user"}}},
     "startedAt is required"),
    ({"type": "chat/turnStarted", "turnId": "t2", "startedAt": "2026-12-06T10:00:00.000Z", "message": {"text": ["hi"], "origin": {"kind": "user"}}},
     "message.text must be a string"),
    ({"type": "chat/turnCancelled", "turnId": "t3"}, "duration is required"),
]


def _envelopes(client: Client, channel: str) -> list[dict[str, Any]]:
    return [a for a in client.actions() if a["channel"] == channel]


@pytest.mark.parametrize("version", ["1.0.0", "0.9.0", "0.7.0"])
async def test_a_malformed_dispatch_is_refused_naming_the_field_and_the_connection_stays_usable(
        tmp_path: Path, frame_checker: FrameChecker, version: str) -> None:
    async with serving(tools_config(tmp_path), frame_checker, versions=PROTOCOL_VERSIONS) as (running, _):
        host = running.host
        sender, watcher = await Client.open(running), await Client.open(running)
        try:
            await sender.join("sender", version)
            session = f"offline:/{uuid.uuid4()}"
            chat = default_chat_uri(session)
            created = await sender.request("createSession", {"channel": session, "workingDirectories": [tmp_path.as_uri()]})
            assert created.get("error") is None, created
            await sender.sub(chat)
            await watcher.join("watcher", version, (ROOT, chat))
            for action, named in MALFORMED:
                await sender.dispatch(chat, action)
                envelope = await sender.until(lambda: next((a for a in _envelopes(sender, chat)
                                                            if a.get("origin", {}).get("clientSeq") == sender._next_id), None))
                reason = envelope.get("rejectionReason") or ""
                assert named in reason and f"AHP {version}" in reason, (action, envelope)
                assert envelope["action"] == action  # the action as the client sent it
            assert host.store.state(chat)["turns"] == [] and host.store.state(chat).get("activeTurn") is None

            # Still usable: a well-formed action is applied and echoed to both; ping answers.
            await sender.dispatch(ROOT, {"type": "root/configChanged", "config": {"chat.example": "shown"}})
            for client in (sender, watcher):
                await client.until(lambda c=client: next((a for a in _envelopes(c, ROOT)
                                                          if a["action"]["type"] == "root/configChanged"), None))
            assert (await sender.request("ping", {"channel": ROOT})).get("error") is None
            assert not any("rejectionReason" in a for a in watcher.actions())  # refusals go to the dispatcher alone
            assert [a for a in _envelopes(watcher, chat) if a["action"]["type"] in ("chat/turnStarted", "chat/turnCancelled")] == []
        finally:
            await sender.close()
            await watcher.close()
