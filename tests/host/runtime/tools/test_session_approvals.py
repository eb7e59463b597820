""""Allow in this session" approvals live as long as their session: across a host restart, and
not beyond ``disposeSession``; other sessions never see them."""

from __future__ import annotations

from pathlib import Path

from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import idle, ready_session, serving
from tests.host.runtime.agents.harness import run_chat_turn as run_turn

from ._support import scripted, tool_results, tools_config, wait_pending


async def test_allow_in_this_session_survives_a_restart_and_ends_with_the_session(tmp_path: Path, frame_checker: FrameChecker) -> None:
    config = tools_config(tmp_path)
    provider = ScriptedProvider([call_tools(("shell", {"command": "echo one"})), reply("a")])
    async with serving(config, frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        session = await ready_session(client)
        chat = default_chat_uri(session)
        client.send_message(chat, "first")
        call = await wait_pending(client, chat)
        client.dispatch(chat, {"type": "chat/toolCallConfirmed", "turnId": call["turnId"], "toolCallId": call["toolCallId"],
                               "approved": True, "confirmed": "user-action", "selectedOptionId": "allow-session"})
        await idle(client, chat)

    provider = ScriptedProvider([call_tools(("shell", {"command": "echo two"})), reply("b"), call_tools(("shell", {"command": "echo three"}))])
    async with serving(config, frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, client):
        await client.subscribe(session)
        await client.subscribe(chat)
        turn = await run_turn(client, chat, "second")
        [again] = [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]
        assert (again["status"], again["confirmed"]) == ("completed", "setting")
        assert "two" in tool_results(provider, 1)[0].text
        other = default_chat_uri(await ready_session(client))
        client.send_message(other, "elsewhere")
        asked = await wait_pending(client, other)  # another session has to ask
        assert asked["toolInput"] and "echo three" in asked["toolInput"]
        client.cancel_turn(other, asked["turnId"])
        await idle(client, other)
        assert running.host.tools.settings.session_allow(session) != ()  # kept for the session until...
        await client.request("disposeSession", {"channel": session})
        assert running.host.tools.settings.session_allow(session) == ()

    async with serving(config, frame_checker, [scripted(ScriptedProvider([]))], versions=PROTOCOL_VERSIONS) as (running, _):
        assert running.host.tools.settings.session_allow(session) == ()
