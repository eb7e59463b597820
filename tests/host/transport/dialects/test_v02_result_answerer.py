"""Who confirmed a tool's result reaches a 0.2.0 client, over real WebSockets: the host records it in
the call's ``_meta`` (``answeredBy``), which no 0.2.0 tool-call action carries after
``toolCallStart``. A 0.2.0 client watching live is told the turn again (``actions_down``); one that
was away when the result was confirmed and comes back with ``reconnect`` is answered with fresh
snapshots (a replay could not say it). Either way its mirror is the host's 0.2.0 view of the session.

0.2.0 on purpose: the 0.2.0 projection is what is tested; the session is driven by a 1.0.0 client."""

from __future__ import annotations

from pathlib import Path

import pytest

from ahp.state import default_chat_uri
from client import LEGACY_VERSIONS, PROTOCOL_VERSIONS, AhpClient
from host.transport.dialects.ahp02 import v02_session_state
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import TOKEN, FrameChecker
from tests.host.runtime.agents.harness import ready_session, serving
from tests.host.runtime.tools._support import scripted, tools_config, wait_pending
from tests.host.transport.dialects._tool_calls import answered_by
from tests.host.transport.dialects.test_three_versions import without_clock


@pytest.mark.parametrize("away", [False, True], ids=["watching", "away and back"])
async def test_a_0_2_0_mirror_shows_who_confirmed_a_tool_s_result(tmp_path: Path, frame_checker: FrameChecker, away: bool) -> None:
    (tmp_path / "notes.txt").write_text("one\n")
    provider = ScriptedProvider([call_tools(("read_file", {"path": "notes.txt"})), reply("It says one.")])
    config = tools_config(tmp_path, result_confirmation=["read_file"])
    async with serving(config, frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, client):
        session = await ready_session(client, provider="scripted")
        chat = default_chat_uri(session)
        old_name = f"ahp-session:/{session.split(':/', 1)[1]}"
        old = await AhpClient.connect(running.url.split("?")[0], token=TOKEN, client_id="old", frame_hook=frame_checker.client_hook())
        try:
            await old.initialize([old_name], protocol_versions=LEGACY_VERSIONS)
            client.send_message(chat, "read the notes")
            call = await wait_pending(client, chat, "pending-result-confirmation")
            await old.wait_for(lambda m, e: any(p.get("kind") == "toolCall" and p["toolCall"]["status"] == "pending-result-confirmation"
                                                for p in ((old.state(old_name) or {}).get("activeTurn") or {}).get("responseParts") or ()))
            if away:
                await old._conn.close()  # the 0.2.0 client's socket drops before the answer
            outcome = await client.outcome(client.dispatch(chat, {
                "type": "chat/toolCallResultConfirmed", "turnId": call["turnId"], "toolCallId": call["toolCallId"], "approved": True}))
            assert outcome.accepted, outcome.reason
            await client.wait_for(lambda m, e: (client.state(chat) or {}).get("activeTurn") is None and bool(client.state(chat).get("turns")))
            if away:
                resumed = await old.resume()
                assert resumed.kind == "snapshot" and resumed.dropped == []
            await old.ping()
            shown = without_clock(v02_session_state(running.host, old_name))
            assert answered_by(shown, call["toolCallId"]) == {"clientId": client.client_id}
            assert without_clock(old.state(old_name)) == shown
        finally:
            await old.close()
