""""Allow in this session" approvals live as long as their session: across a host restart, and
not beyond ``disposeSession``; other sessions never see them."""

from __future__ import annotations

from pathlib import Path

from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import idle, ready_session, run_turn, serving

from ._support import scripted, tool_results, tools_config, wait_pending


async def test_allow_in_this_session_survives_a_restart_and_ends_with_the_session(tmp_path: Path, frame_checker: FrameChecker) -> None:
    config = tools_config(tmp_path)
    provider = ScriptedProvider([call_tools(("shell", {"command": "echo one"})), reply("a")])
    async with serving(config, frame_checker, [scripted(provider)]) as (_, client):
        session = await ready_session(client)
        client.send_message(session, "first")
        call = await wait_pending(client, session)
        client.dispatch(session, {"type": "session/toolCallConfirmed", "turnId": call["turnId"], "toolCallId": call["toolCallId"],
                                  "approved": True, "confirmed": "user-action", "selectedOptionId": "allow-session"})
        await idle(client, session)

    provider = ScriptedProvider([call_tools(("shell", {"command": "echo two"})), reply("b"), call_tools(("shell", {"command": "echo three"}))])
    async with serving(config, frame_checker, [scripted(provider)]) as (running, client):
        await client.subscribe(session)
        turn = await run_turn(client, session, "second")
        [again] = [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]
        assert (again["status"], again["confirmed"]) == ("completed", "setting")
        assert "two" in tool_results(provider, 1)[0].text
        other = await ready_session(client)
        client.send_message(other, "elsewhere")
        asked = await wait_pending(client, other)  # another session has to ask
        assert asked["toolInput"] and "echo three" in asked["toolInput"]
        client.cancel_turn(other, asked["turnId"])
        await idle(client, other)
        await client.request("disposeSession", {"channel": session})
        assert running.host.tools.settings.session_allow(session) == ()

    async with serving(config, frame_checker, [scripted(ScriptedProvider([]))]) as (running, _):
        assert running.host.tools.settings.session_allow(session) == ()
