"""VS Code 1.139.1 (AHP 0.9.0) names a turn's changeset ``<session URI>/changeset/turn/<turn id>``
whatever ``uriTemplate`` the catalogue gives: over a real WebSocket, such a name is served as the
host's own turn changeset (the file the turn wrote, or empty for a turn that changed nothing),
and an operation invoked on it acts on that changeset."""

from __future__ import annotations

from pathlib import Path

from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import ready_session, run_turn, serving
from tests.host.test_vscode import Peer
from tests.host.runtime.tools._support import scripted, tools_config


async def test_a_0_9_0_client_subscribes_to_turn_changesets_by_vscodes_names(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([
        call_tools(("write_file", {"path": "made.txt", "content": "agent text\n"})),
        reply("done"),
        reply("nothing to change"),
    ])
    async with serving(tools_config(tmp_path, auto_approve=True), frame_checker, [scripted(provider)]) as (running, alice):
        session = await ready_session(alice)
        edited = await run_turn(alice, session, "write a file")
        quiet = await run_turn(alice, session, "say something")
        await alice.wait_for(lambda m, e: alice.state(session)["summary"].get("changesets"), timeout=30)
        ident = session.split(":/", 1)[1]
        [internal] = [name for name, _ in running.host.store.channels("session") if name.endswith(":/" + ident)]
        assert not internal.startswith("ahp-session:")

        vscode = await Peer.open(running)
        try:
            await vscode.initialize("vscode", ["0.9.0"])
            name = f"{internal}/changeset/turn/{edited['id']}"
            answer = await vscode.request("subscribe", {"channel": name})
            assert answer.get("error") is None, answer
            snapshot = answer["result"]["snapshot"]
            assert snapshot["resource"] == name
            assert [Path(f["id"]).name for f in snapshot["state"]["files"]] == ["made.txt"]
            assert [op["id"] for op in snapshot["state"]["operations"]] == ["accept", "revert"]

            # A turn that changed nothing: its changeset exists, empty (no retry loop in VS Code).
            answer = await vscode.request("subscribe", {"channel": f"{internal}/changeset/turn/{quiet['id']}"})
            assert answer.get("error") is None, answer
            assert answer["result"]["snapshot"]["state"]["files"] == []

            # A turn the session never had is still nothing to subscribe to.
            answer = await vscode.request("subscribe", {"channel": f"{internal}/changeset/turn/no-such-turn"})
            assert answer["error"]["code"] == -32008

            # Undoing the turn through VS Code's name puts the file back (the agent created it).
            answer = await vscode.request("invokeChangesetOperation", {"channel": name, "operationId": "revert"})
            assert answer.get("error") is None, answer
            assert not (tmp_path / "made.txt").exists()
        finally:
            await vscode.close()

        # A 0.2.0 client still sees the catalogue's own ahp-changeset: names.
        templates = [c["uriTemplate"] for c in alice.state(session)["summary"]["changesets"]]
        assert all(t.startswith(f"ahp-changeset:/{ident}") for t in templates)
