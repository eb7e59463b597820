"""``listSessions`` tells a client enough to list sessions by project: each item's ``_meta`` has
the first message and whether a script (``createSession`` with ``_meta.oneShot``) made it; a
sub-agent is a chat of its session and never listed; for a 0.2.0 client and a 0.9.0 client alike,
against a real host."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import config_for, idle, ready_session, run_turn, serving
from tests.host.runtime.agents.test_faults import fake_agent_toml
from tests.host.test_vscode import Peer, assert_valid
from tests.providers.fake_server import FakeProviderServer, Reply, chat_sse


async def test_items_carry_first_message_and_one_shot_for_both_dialects(tmp_path: Path, frame_checker: FrameChecker) -> None:
    task = {"description": "find usages", "prompt": "Find the callers of total()."}
    replies = [Reply(200, chat_sse(tool_calls=[("call-1", "task", json.dumps(task))])), Reply(200, chat_sse("In cart.py.")),
               Reply(200, chat_sse("Done.")), Reply(200, chat_sse("Fine."))]
    long = "review this " + "x" * 300
    async with FakeProviderServer(replies, base_path="/v1") as server:
        config = config_for(tmp_path, toml=fake_agent_toml(server.base_url), tools={"auto_approve": True})
        async with serving(config, frame_checker) as (running, client):
            parent = await ready_session(client, provider="fake")
            await run_turn(client, parent, "where is total() used?")
            await idle(client, parent)
            script = await client.create_session(provider="fake", meta={"oneShot": True})
            await client.wait_for(lambda m, e: (client.state(script) or {}).get("lifecycle") == "ready")
            await run_turn(client, script, long)
            items = {item["resource"]: item for item in await client.list_sessions()}
            newer = await Peer.open(running)
            try:
                await newer.initialize("newer", ["0.9.0"])
                listed = (await newer.request("listSessions", {"channel": "ahp-root://"}))["result"]
                assert_valid(listed, "ListSessionsResult")
                newer_items = listed["items"]
            finally:
                await newer.close()
    assert set(items) == {parent, script}  # the sub-agent ran in a chat of the parent session
    assert items[parent]["_meta"] == {"firstMessage": "where is total() used?"}
    meta = items[script]["_meta"]
    assert meta["oneShot"] is True and len(meta["firstMessage"]) == 200 and meta["firstMessage"].endswith("…")
    # 0.9.0 names sessions by their internal URIs (``fake:/<id>``); the same facts.
    by_id = {item["resource"].rsplit("/", 1)[-1]: item.get("_meta") for item in newer_items}
    assert len(by_id) == 2
    assert by_id[parent.rsplit("/", 1)[-1]] == {"firstMessage": "where is total() used?"}
    assert by_id[script.rsplit("/", 1)[-1]]["oneShot"] is True
