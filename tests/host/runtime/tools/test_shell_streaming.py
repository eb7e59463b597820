"""A running shell command streams its output to every client as ``toolCallContentChanged``
before the call completes, and the model gets the whole output."""

from __future__ import annotations

from pathlib import Path

from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import Recorder, idle, ready_session, serving

from ._support import calls, scripted, tool_results, tools_config


async def test_shell_output_streams_to_the_client_while_the_command_runs(tmp_path: Path, frame_checker: FrameChecker) -> None:
    # The second line waits for a file the test creates once the first line has reached the client,
    # so the partial content is certainly seen while the command is still running.
    command = "echo first line; while [ ! -e go ]; do sleep 0.05; done; echo second line"
    provider = ScriptedProvider([call_tools(("shell", {"command": command})), reply("done")])
    async with serving(tools_config(tmp_path, auto_approve=True), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        chat = default_chat_uri(await ready_session(client))
        recorder = Recorder(client, chat)
        client.send_message(chat, "run it")
        await client.wait_for(lambda m, e: e is not None and e.action is not None
                              and e.action["type"] == "chat/toolCallContentChanged"
                              and "first line" in str(e.action["content"]), timeout=20)
        [running] = calls(client, chat)
        assert running["status"] == "running"
        assert "second line" not in str([c for c in running.get("content") or [] if c["type"] == "text"])
        (tmp_path / "go").touch()
        await idle(client, chat)
        [done] = calls(client, chat)
    types = [a["type"] for a in recorder.drain()]
    assert types.index("chat/toolCallContentChanged") < types.index("chat/toolCallComplete")
    assert done["status"] == "completed" and done["success"] is True
    output = tool_results(provider, 1)[0].text
    assert "first line" in output and "second line" in output
