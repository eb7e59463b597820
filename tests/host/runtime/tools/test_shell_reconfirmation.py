"""A running shell command that would write outside the working directory asks again, end to end:
the call goes back to pending-confirmation (``toolCallReady`` without ``confirmed``) and the
user's answer decides whether it runs; the model sees what happened."""

from __future__ import annotations

from pathlib import Path

from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import idle, ready_session, serving

from ._support import calls, scripted, tool_results, tools_config, wait_pending


def _confirm(client, chat, call, **fields) -> int:
    """Answer ``call`` in ``chat`` (a 0.2.0 session for a 0.2.0 client: ``test_changesets`` uses it too)."""
    kind = "chat/toolCallConfirmed" if client.speaks_model else "session/toolCallConfirmed"
    return client.dispatch(chat, {"type": kind, "turnId": call["turnId"], "toolCallId": call["toolCallId"], **fields})


def _places(tmp_path: Path) -> tuple[Path, Path]:
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    return work, outside


async def _asked_again(client, chat) -> dict:
    """Approve the first confirmation, then return the re-confirmation of the running call."""
    first = await wait_pending(client, chat)
    assert "options" in first and first["options"][0]["id"] == "allow-once"
    _confirm(client, chat, first, approved=True, confirmed="user-action", selectedOptionId="allow-once")
    await client.wait_for(lambda m, e: (c := calls(client, chat)) and c[0].get("status") == "pending-confirmation"
                          and c[0].get("confirmationTitle") != first.get("confirmationTitle"))
    return await wait_pending(client, chat)


async def test_approving_the_re_confirmation_runs_the_command(tmp_path: Path, frame_checker: FrameChecker) -> None:
    work, outside = _places(tmp_path)
    provider = ScriptedProvider([call_tools(("shell", {"command": "echo hi > ../outside/out.txt; echo wrote"})), reply("ok")])
    async with serving(tools_config(work), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        chat = default_chat_uri(await ready_session(client))
        client.send_message(chat, "go")
        again = await _asked_again(client, chat)
        assert f"would write to {(outside / 'out.txt').resolve()} outside the working directory" in again["confirmationTitle"]
        assert [o["id"] for o in again["options"]] == ["continue", "stop"]
        _confirm(client, chat, again, approved=True, confirmed="user-action", selectedOptionId="continue")
        await idle(client, chat)
        [done] = calls(client, chat)
    assert (done["status"], done["success"]) == ("completed", True)
    assert (outside / "out.txt").read_text() == "hi\n"
    assert "wrote" in tool_results(provider, 1)[0].text


async def test_denying_the_re_confirmation_runs_nothing_and_tells_the_model(tmp_path: Path, frame_checker: FrameChecker) -> None:
    work, outside = _places(tmp_path)
    provider = ScriptedProvider([call_tools(("shell", {"command": "touch here.txt && cp here.txt ../outside/"})), reply("ok")])
    async with serving(tools_config(work), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        chat = default_chat_uri(await ready_session(client))
        client.send_message(chat, "go")
        again = await _asked_again(client, chat)
        _confirm(client, chat, again, approved=False, reason="denied", selectedOptionId="stop")
        await idle(client, chat)
        [done] = calls(client, chat)
    assert (done["status"], done["reason"]) == ("cancelled", "denied")
    assert not (work / "here.txt").exists() and list(outside.iterdir()) == []
    told = tool_results(provider, 1)[0].text
    assert "outside the working directory" in told and "not run" in told
