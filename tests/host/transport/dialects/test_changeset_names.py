"""VS Code 1.139.1 (AHP 0.9.0) names a turn's changeset ``<session URI>/changeset/turn/<turn id>``
whatever ``uriTemplate`` the catalogue gives: over a real WebSocket, such a name is served as the
host's own turn changeset (the file the turn wrote, or empty for a turn that changed nothing),
an operation invoked on it acts on that changeset, and what then changes in it reaches VS Code
under VS Code's name."""

from __future__ import annotations

from pathlib import Path

from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import ready_session, run_turn, serving
from tests.host.runtime.tools._support import scripted, tools_config
from tests.host.test_vscode import Peer


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

            # Undoing the turn through VS Code's name puts the file back (the agent created it), and
            # the changeset's new state reaches VS Code under the name it subscribed with.
            internal_name = f"ahp-changeset:/{ident}/turn/{edited['id']}"
            seen = len(vscode.actions())
            answer = await vscode.request("invokeChangesetOperation", {"channel": name, "operationId": "revert"})
            assert answer.get("error") is None, answer
            assert not (tmp_path / "made.txt").exists()
            changes = await vscode.until(lambda: [a for a in vscode.actions()[seen:] if a["channel"] == name])
            assert changes[0]["action"]["type"].startswith("changeset/")
            assert not [a for a in vscode.actions() if a["channel"] == internal_name]

            # Unsubscribing VS Code's name leaves the changeset with no subscriber.
            assert running.host.store.has_subscribers(internal_name)
            await vscode.send({"jsonrpc": "2.0", "method": "unsubscribe", "params": {"channel": name}})
            await vscode.request("ping", {})
            assert not running.host.store.has_subscribers(internal_name)
        finally:
            await vscode.close()

        # A 0.2.0 client still sees the catalogue's own ahp-changeset: names.
        templates = [c["uriTemplate"] for c in alice.state(session)["summary"]["changesets"]]
        assert all(t.startswith(f"ahp-changeset:/{ident}") for t in templates)


async def test_vscodes_uncommitted_changeset_is_the_sessions_review_list(tmp_path: Path, frame_checker: FrameChecker) -> None:
    """VS Code subscribes ``<session>/changeset/uncommitted`` right after creating a session: it
    is the session changeset (empty until a tool changes a file), and fills as the agent edits."""
    provider = ScriptedProvider([
        call_tools(("write_file", {"path": "later.txt", "content": "new\n"})),
        reply("done"),
    ])
    async with serving(tools_config(tmp_path, auto_approve=True), frame_checker, [scripted(provider)]) as (running, alice):
        session = await ready_session(alice)
        ident = session.split(":/", 1)[1]
        [internal] = [name for name, _ in running.host.store.channels("session") if name.endswith(":/" + ident)]
        vscode = await Peer.open(running)
        try:
            await vscode.initialize("vscode", ["0.9.0"])
            name = f"{internal}/changeset/uncommitted"
            answer = await vscode.request("subscribe", {"channel": name})
            assert answer.get("error") is None, answer
            assert answer["result"]["snapshot"]["resource"] == name
            assert answer["result"]["snapshot"]["state"]["files"] == []

            await run_turn(alice, session, "write a file")
            added = await vscode.until(lambda: [a for a in vscode.actions() if a["channel"] == name
                                                and a["action"]["type"] == "changeset/fileSet"])
            assert Path(added[0]["action"]["file"]["id"]).name == "later.txt"

            # The git branch changeset VS Code also knows has no counterpart here.
            answer = await vscode.request("subscribe", {"channel": f"{internal}/changeset/branch"})
            assert answer["error"]["code"] == -32008
        finally:
            await vscode.close()
