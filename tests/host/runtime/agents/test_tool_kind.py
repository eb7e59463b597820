"""What a 0.9.0 client (VS Code) sees when a tool call starts: a tool that runs commands carries
``_meta.toolKind: "terminal"`` (VS Code then paints a terminal confirmation, "Allow" / "Skip");
other tools carry no kind. Over a real WebSocket, with the scripted model calling the tools."""

from __future__ import annotations

import uuid
from pathlib import Path

from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import serving
from tests.host.runtime.tools._support import scripted, tools_config
from tests.host.test_vscode import Peer

ROOT = "ahp-root://"


async def test_a_shell_call_starts_as_a_terminal_tool_and_a_read_as_none(tmp_path: Path, frame_checker: FrameChecker) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    provider = ScriptedProvider([call_tools(("read_file", {"path": "a.txt"})), call_tools(("shell", {"command": "echo hi"})),
                                 reply("done")])
    async with serving(tools_config(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, _):
        peer = await Peer.open(running)
        try:
            await peer.initialize(str(uuid.uuid4()), ["0.9.0"])
            session = f"scripted:/{uuid.uuid4()}"
            created = await peer.request("createSession", {
                "channel": session, "provider": "scripted", "workingDirectories": [tmp_path.as_uri()],
                "config": {"isolation": "folder", "autoApprove": "default", "mode": "interactive"}})
            assert created.get("error") is None, created
            chat = default_chat_uri(session)
            await peer.request("subscribe", {"channel": chat})
            await peer.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {"channel": chat, "clientSeq": 1, "action": {
                "type": "chat/turnStarted", "turnId": "request_1", "startedAt": "2026-11-26T00:00:00.000Z",
                "message": {"text": "read, then run", "origin": {"kind": "user"}, "model": {"id": "m1"}}}}})

            def starts() -> list[dict]:
                return [a["action"] for a in peer.actions() if a["action"]["type"] == "chat/toolCallStart"]

            await peer.until(lambda: len(starts()) == 2 or None, timeout=30)
            read, shell = starts()
            assert read["toolName"] == "read_file" and "_meta" not in read
            assert shell["toolName"] == "shell" and shell["_meta"] == {"toolKind": "terminal"}
        finally:
            await peer.close()
