"""What a 1.0.0 client sees of the parts 1.0.0 names, over a real WebSocket: the session list and
its notifications carry each session's chats (``SessionSummary.chats``, ``defaultChat``) with
their read and archived flags, and the root config advertises its list limits
(``ConfigPropertySchema.maxItems``). Every frame the client gets fits the 1.0.0 schemas
(``_schemas.FrameSchema``); the whole scripted session is ``test_every_frame_valid``'s.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from ahp.state import default_chat_uri
from ahp.workspace_trust import MAX_TRUSTED_FOLDERS
from client import PROTOCOL_VERSIONS
from host.runtime.tools.settings import MAX_REMEMBERED
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import serving
from tests.host.runtime.tools._support import tools_config
from tests.host.test_vscode import Peer

from ._clients import Client
from ._schemas import FrameSchema

ROOT = "ahp-root://"
IS_READ, IS_ARCHIVED = 32, 64


def _summaries(peer: Peer, session: str) -> list[dict[str, Any]]:
    """Every ``root/sessionSummaryChanged`` change of ``session`` the peer got, in order."""
    return [f["params"]["changes"] for f in peer.received
            if f.get("method") == "root/sessionSummaryChanged" and f["params"]["session"] == session]


def _chat_entry(chats: list[dict[str, Any]], uri: str) -> dict[str, Any]:
    return next(entry for entry in chats if entry["resource"] == uri)


async def test_a_1_0_0_client_sees_each_sessions_chats_in_the_session_list(tmp_path: Path, frame_checker: FrameChecker) -> None:
    async with serving(tools_config(tmp_path), frame_checker, versions=PROTOCOL_VERSIONS) as (running, _):
        host = running.host
        peer = await Client.open(running)
        try:
            reply = await peer.initialize("client-10", ["1.0.0", "0.9.0"])
            assert reply["result"]["protocolVersion"] == "1.0.0"
            session = f"offline:/{uuid.uuid4()}"
            chat, side = default_chat_uri(session), f"ahp-chat://side/{uuid.uuid4().hex}"
            created = await peer.request("createSession", {"channel": session, "workingDirectories": [tmp_path.as_uri()]})
            assert created.get("error") is None, created
            await peer.until(lambda: (host.store.state(session) or {}).get("lifecycle") == "ready" or None)

            # root/sessionAdded: the catalogue with its default chat.
            added = await peer.until(lambda: next((f["params"]["summary"] for f in peer.received
                                                   if f.get("method") == "root/sessionAdded"), None))
            assert added["defaultChat"] == chat
            assert [entry["resource"] for entry in added["chats"]] == [chat]

            # A second chat: the change carries the new catalogue.
            assert (await peer.request("createChat", {"channel": session, "chat": side})).get("error") is None
            await peer.until(lambda: any(len(c.get("chats") or ()) == 2 for c in _summaries(peer, session)) or None)

            # Read and archived flags travel with each chat's entry.
            for channel, action in ((chat, {"type": "chat/isReadChanged", "isRead": True}),
                                    (side, {"type": "chat/isArchivedChanged", "isArchived": True})):
                await peer.send({"jsonrpc": "2.0", "method": "dispatchAction",
                                 "params": {"channel": channel, "clientSeq": 1, "action": action}})

            def flagged() -> Any:
                for changes in reversed(_summaries(peer, session)):
                    if "chats" in changes:
                        entries = changes["chats"]
                        ok = (_chat_entry(entries, chat).get("status", 0) & IS_READ
                              and _chat_entry(entries, side).get("status", 0) & IS_ARCHIVED)
                        return entries if ok else None
                return None
            await peer.until(flagged)

            # listSessions: the same catalogue, flags included.
            listed = await peer.request("listSessions", {"channel": ROOT})
            [item] = [item for item in listed["result"]["items"] if item["resource"] == session]
            assert item["defaultChat"] == chat
            assert [entry["resource"] for entry in item["chats"]] == [chat, side]
            assert _chat_entry(item["chats"], chat)["status"] & IS_READ
            assert not _chat_entry(item["chats"], chat)["status"] & IS_ARCHIVED
            assert _chat_entry(item["chats"], side)["status"] & IS_ARCHIVED

            # The root config's lists say how long they may grow.
            [root] = reply["result"]["snapshots"]
            properties = root["state"]["config"]["schema"]["properties"]
            assert properties["trustedFolders"]["maxItems"] == MAX_TRUSTED_FOLDERS
            assert properties["rememberedApprovals"]["maxItems"] == MAX_REMEMBERED

            await peer.request("ping", {"channel": ROOT})
            schema = FrameSchema.for_version("1.0.0")

            def kind_of(uri: str) -> str | None:
                return host.store.kind(uri)

            problems = [problem for frame in peer.received
                        for problem in schema.errors(frame, peer.methods.get(frame.get("id")), kind_of)]
            assert problems == [], json.dumps(problems[:8], indent=1)
        finally:
            await peer.close()
