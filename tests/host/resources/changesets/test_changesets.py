"""Changesets end to end over real WebSockets: the files a session's tools change appear in the
session's and each turn's changeset for every subscribed client; keeping, undoing a file, undoing
a turn (checkpoint), conflicts with edits made outside the agent, and a restart keeping it all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from client import AhpClient, AhpError
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import TOKEN, FrameChecker
from tests.host.runtime.agents.harness import idle, ready_session, run_turn, serving
from tests.host.runtime.tools._support import scripted, tools_config
from tests.host.runtime.tools.test_shell_reconfirmation import _asked_again, _confirm

WAIT = 30


def files(client: AhpClient, changeset: str) -> dict[str, dict[str, Any]]:
    return {Path(f["id"].removeprefix("file://")).name: f for f in (client.state(changeset) or {}).get("files") or []}


def changesets_of(client: AhpClient, session: str) -> list[dict[str, Any]]:
    return client.state(session)["summary"].get("changesets") or []


def turn_uri(client: AhpClient, session: str, turn_id: str) -> str:
    [per_turn] = [c for c in changesets_of(client, session) if "{turnId}" in c["uriTemplate"]]
    return per_turn["uriTemplate"].replace("{turnId}", turn_id)


async def second_client(running: Any, checker: FrameChecker) -> AhpClient:
    client = await AhpClient.connect(running.url.split("?")[0], token=TOKEN, frame_hook=checker.hook)
    # 0.2.0, as ``serving``'s client is: the two clients' states are compared with each other.
    await client.initialize(subscriptions=["ahp-root://"], protocol_versions=("0.2.0",))
    return client


async def test_review_list_keep_undo_and_conflicts_converge_on_two_clients(tmp_path: Path, frame_checker: FrameChecker) -> None:
    (tmp_path / "notes.txt").write_text("old line\n")
    provider = ScriptedProvider([
        call_tools(("write_file", {"path": "new.txt", "content": "created\n"}),
                   ("edit_file", {"path": "notes.txt", "old_string": "old line", "new_string": "new line"})),
        reply("done"),
        call_tools(("write_file", {"path": "other.txt", "content": "agent text\n"})),
        reply("done"),
    ])
    async with serving(tools_config(tmp_path, auto_approve=True), frame_checker, [scripted(provider)]) as (running, alice):
        bob = await second_client(running, frame_checker)
        try:
            session = await ready_session(alice)
            await bob.subscribe(session)
            first = await run_turn(alice, session, "change things")
            await alice.wait_for(lambda m, e: changesets_of(alice, session), timeout=WAIT)
            [review, _] = changesets_of(alice, session)
            changeset = review["uriTemplate"]
            await alice.subscribe(changeset)
            await bob.subscribe(changeset)
            await run_turn(alice, session, "one more")
            await bob.wait_for(lambda m, e: len(files(bob, changeset)) == 3, timeout=WAIT)
            await alice.wait_for(lambda m, e: len(files(alice, changeset)) == 3, timeout=WAIT)
            assert files(alice, changeset) == files(bob, changeset)
            listed = files(alice, changeset)
            assert "before" not in listed["new.txt"]["edit"] and listed["new.txt"]["edit"]["diff"] == {"added": 1, "removed": 0}
            assert listed["notes.txt"]["edit"]["diff"] == {"added": 1, "removed": 1}
            before = await alice.request("resourceRead", {"channel": "ahp-root://", "uri": listed["notes.txt"]["edit"]["before"]["content"]["uri"]})
            assert before["data"] == "old line\n"
            await bob.wait_for(lambda m, e: (changesets_of(bob, session) or [{}])[0].get("files") == 3, timeout=WAIT)
            assert changesets_of(bob, session)[0]["additions"] == 3
            [summary] = [item for item in await bob.list_sessions() if item["resource"] == session]
            assert summary["changesets"] == changesets_of(bob, session)

            # The first turn's checkpoint holds only what that turn changed.
            first_turn = turn_uri(alice, session, first["id"])
            await bob.subscribe(first_turn)
            assert set(files(bob, first_turn)) == {"new.txt", "notes.txt"}

            # Someone edits other.txt outside the agent: undoing it is refused, never overwritten.
            (tmp_path / "other.txt").write_text("my own edit\n")
            with pytest.raises(AhpError) as error:
                await alice.request("invokeChangesetOperation", {
                    "channel": changeset, "operationId": "reject",
                    "target": {"kind": "resource", "resource": listed["other.txt"]["id"]}})
            assert error.value.code == -32011 and "other.txt" in error.value.message
            assert error.value.data == {"conflicts": [listed["other.txt"]["id"]]}
            assert (tmp_path / "other.txt").read_text() == "my own edit\n"
            await bob.wait_for(lambda m, e: "conflict" in (files(bob, changeset)["other.txt"].get("_meta") or {}), timeout=WAIT)

            # Undo one file: the agent created it, so it goes; both clients drop it from the list.
            result = await alice.request("invokeChangesetOperation", {
                "channel": changeset, "operationId": "reject",
                "target": {"kind": "resource", "resource": listed["new.txt"]["id"]}})
            assert "Undid" in result["message"]
            assert not (tmp_path / "new.txt").exists()
            await bob.wait_for(lambda m, e: "new.txt" not in files(bob, changeset), timeout=WAIT)
            await bob.wait_for(lambda m, e: "new.txt" not in files(bob, first_turn), timeout=WAIT)

            # Keep one file: it leaves the list and stays as the agent wrote it.
            await bob.request("invokeChangesetOperation", {
                "channel": changeset, "operationId": "accept",
                "target": {"kind": "resource", "resource": listed["notes.txt"]["id"]}})
            await alice.wait_for(lambda m, e: set(files(alice, changeset)) == {"other.txt"}, timeout=WAIT)
            assert (tmp_path / "notes.txt").read_text() == "new line\n"
            await alice.wait_for(lambda m, e: changesets_of(alice, session)[0].get("files") == 1, timeout=WAIT)

            # Bad requests get a clear error and the connection stays usable.
            with pytest.raises(AhpError) as error:
                await alice.request("invokeChangesetOperation", {"channel": changeset, "operationId": "explode"})
            assert error.value.code == -32602 and "accept, reject" in error.value.message
            with pytest.raises(AhpError) as error:
                await alice.request("invokeChangesetOperation", {"channel": "ahp-changeset:/nothing", "operationId": "accept"})
            assert error.value.code == -32008
            assert await alice.ping() is None
        finally:
            await bob.close()


async def test_undoing_turns_restores_their_checkpoints_and_survives_a_restart(tmp_path: Path, frame_checker: FrameChecker) -> None:
    def agent() -> Any:
        return scripted(ScriptedProvider([
            call_tools(("write_file", {"path": "c.txt", "content": "v1\n"})),
            reply("done"),
            call_tools(("edit_file", {"path": "c.txt", "old_string": "v1", "new_string": "v2"})),
            reply("done"),
        ]))

    target = tmp_path / "c.txt"
    config = tools_config(tmp_path, auto_approve=True)
    async with serving(config, frame_checker, [agent()]) as (running, alice):
        session = await ready_session(alice)
        first = await run_turn(alice, session, "create")
        second = await run_turn(alice, session, "edit")
        await alice.wait_for(lambda m, e: (changesets_of(alice, session) or [{}])[0].get("files") == 1, timeout=WAIT)
        assert target.read_text() == "v2\n"
        first_turn, second_turn = turn_uri(alice, session, first["id"]), turn_uri(alice, session, second["id"])
        review = changesets_of(alice, session)[0]["uriTemplate"]

    # A restart keeps the changesets (and their content) exactly.
    async with serving(config, frame_checker, [scripted(ScriptedProvider([reply("nothing to change")]))]) as (running, alice):
        await alice.subscribe(session)
        await alice.subscribe(first_turn)
        await alice.subscribe(second_turn)
        await alice.subscribe(review)
        assert set(files(alice, review)) == {"c.txt"} and set(files(alice, second_turn)) == {"c.txt"}

        # Undoing the first turn while the second turn's edit is on top is a conflict.
        with pytest.raises(AhpError) as error:
            await alice.request("invokeChangesetOperation", {"channel": first_turn, "operationId": "revert"})
        assert error.value.code == -32011
        assert target.read_text() == "v2\n"

        # Undo the second turn: back to the first turn's content; the review list now ends there.
        await alice.request("invokeChangesetOperation", {"channel": second_turn, "operationId": "revert"})
        assert target.read_text() == "v1\n"
        await alice.wait_for(lambda m, e: "c.txt" not in files(alice, second_turn), timeout=WAIT)
        pending = files(alice, review)["c.txt"]["edit"]
        assert "before" not in pending
        after = await alice.request("resourceRead", {"channel": "ahp-root://", "uri": pending["after"]["content"]["uri"]})
        assert after["data"] == "v1\n"

        # Then the first: the file the agent created is gone and nothing is left to review.
        await alice.request("invokeChangesetOperation", {"channel": first_turn, "operationId": "revert"})
        assert not target.exists()
        await alice.wait_for(lambda m, e: files(alice, review) == {} and files(alice, first_turn) == {}, timeout=WAIT)
        await alice.wait_for(lambda m, e: changesets_of(alice, session)[0].get("files") == 0, timeout=WAIT)

        # A turn that changed nothing has an empty checkpoint; disposing the session clears all.
        quiet = await run_turn(alice, session, "nothing to do")
        assert (await alice.subscribe(turn_uri(alice, session, quiet["id"])))["files"] == []
        await alice.dispose_session(session)
        await alice.wait_for(lambda m, e: alice.state(review) is None or (alice.state(review) or {}).get("files") == [], timeout=WAIT)
        with pytest.raises(AhpError):
            await alice.subscribe(review)


async def test_files_a_shell_command_changes_join_the_changeset_and_can_be_undone(tmp_path: Path, frame_checker: FrameChecker) -> None:
    (tmp_path / "config.ini").write_text("debug = false\n")
    command = "sed -i 's/false/true/' config.ini && echo generated > out.txt"
    provider = ScriptedProvider([call_tools(("shell", {"command": command})), reply("done")])
    async with serving(tools_config(tmp_path, auto_approve=True), frame_checker, [scripted(provider)]) as (running, alice):
        session = await ready_session(alice)
        turn = await run_turn(alice, session, "configure")
        [call] = [p["toolCall"] for p in turn["responseParts"] if p.get("kind") == "toolCall"]
        assert sorted(Path(c["after"]["uri"]).name for c in call["content"] if c["type"] == "fileEdit") == ["config.ini", "out.txt"]
        await alice.wait_for(lambda m, e: changesets_of(alice, session), timeout=WAIT)
        checkpoint = turn_uri(alice, session, turn["id"])
        await alice.subscribe(checkpoint)
        assert set(files(alice, checkpoint)) == {"config.ini", "out.txt"}
        await alice.request("invokeChangesetOperation", {"channel": checkpoint, "operationId": "revert"})
        assert (tmp_path / "config.ini").read_text() == "debug = false\n"
        assert not (tmp_path / "out.txt").exists()


async def test_an_edit_made_outside_the_agent_between_its_changes_is_never_undone(tmp_path: Path, frame_checker: FrameChecker) -> None:
    target = tmp_path / "x.txt"
    provider = ScriptedProvider([
        call_tools(("write_file", {"path": "x.txt", "content": "agent v1\nmine?\n"})),
        reply("done"),
        call_tools(("edit_file", {"path": "x.txt", "old_string": "agent v1", "new_string": "agent v2"})),
        reply("done"),
    ])
    async with serving(tools_config(tmp_path, auto_approve=True), frame_checker, [scripted(provider)]) as (running, alice):
        session = await ready_session(alice)
        await run_turn(alice, session, "write")
        target.write_text("agent v1\nmy own line\n")  # the user edits between the agent's turns
        second = await run_turn(alice, session, "edit")
        assert target.read_text() == "agent v2\nmy own line\n"
        await alice.wait_for(lambda m, e: changesets_of(alice, session), timeout=WAIT)
        review = changesets_of(alice, session)[0]["uriTemplate"]
        await alice.subscribe(review)
        assert files(alice, review)["x.txt"]["_meta"]["outsideEdits"] is True
        # Undoing the session's change as a whole would delete the user's line: refused.
        with pytest.raises(AhpError) as error:
            await alice.request("invokeChangesetOperation", {"channel": review, "operationId": "reject"})
        assert error.value.code == -32011 and "outside the agent" in error.value.message
        assert target.read_text() == "agent v2\nmy own line\n"
        # Undoing the second turn alone goes back to the user's version.
        await alice.request("invokeChangesetOperation", {"channel": turn_uri(alice, session, second["id"]), "operationId": "revert"})
        assert target.read_text() == "agent v1\nmy own line\n"


async def test_files_an_mcp_servers_tool_writes_join_the_changeset_and_can_be_undone(tmp_path: Path, frame_checker: FrameChecker) -> None:
    from tests.host.runtime.customizations.test_mcp_sessions import mcp_config, sink_server, wait_tools

    workspace = tmp_path / "work"
    workspace.mkdir()
    (workspace / "notes.md").write_text("mine\n")
    provider = ScriptedProvider([])
    config = mcp_config(tmp_path, {"sink": sink_server()}, sessions={"default_directory": str(workspace)},
                        tools={"enabled": True, "auto_approve": True})
    async with serving(config, frame_checker, [scripted(provider)]) as (_, client):
        session = await ready_session(client)
        sink = await wait_tools(client, session, "sink", "write_text")
        provider.add(call_tools((sink["write_text"], {"path": str(workspace / "notes.md"), "text": "server's\n"})))
        provider.add(reply("done"))
        await run_turn(client, session, "let the server write")
        await client.wait_for(lambda m, e: changesets_of(client, session), timeout=WAIT)
        [review, _] = changesets_of(client, session)
        await client.subscribe(review["uriTemplate"])
        entry = files(client, review["uriTemplate"])["notes.md"]
        assert entry["edit"]["diff"] == {"added": 1, "removed": 1}
        await client.request("invokeChangesetOperation", {"channel": review["uriTemplate"], "operationId": "reject"})
    assert (workspace / "notes.md").read_text() == "mine\n"


async def test_approved_shell_writes_outside_the_working_directory_are_recorded_when_inside_the_roots(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, frame_checker: FrameChecker,
) -> None:
    # The working directory is a folder of the host's default directory (a root every client may
    # read); the extra root is elsewhere; a third folder is outside every root.
    work = tmp_path / "project"
    work.mkdir()
    (tmp_path / "notes.txt").write_text("old notes\n")
    extra = tmp_path_factory.mktemp("extra")
    (extra / "data.txt").write_text("old data\n")
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    command = f"echo more >> ../notes.txt; echo new > {extra}/data.txt; echo y > {elsewhere}/out.txt; echo z > local.txt"
    provider = ScriptedProvider([call_tools(("shell", {"command": command})), reply("done")])
    async with serving(tools_config(tmp_path, extra_roots=[str(extra)]), frame_checker, [scripted(provider)]) as (running, alice):
        bob = await second_client(running, frame_checker)
        try:
            session = await ready_session(alice, working_directory=work.as_uri())
            alice.send_message(session, "write around")
            # Allowed once, then allowed again when asked about the writes outside the working directory.
            again = await _asked_again(alice, session)
            assert str(elsewhere / "out.txt") in again["confirmationTitle"]
            _confirm(alice, session, again, approved=True, confirmed="user-action", selectedOptionId="continue")
            await idle(alice, session)
            assert (tmp_path / "notes.txt").read_text() == "old notes\nmore\n" and (elsewhere / "out.txt").read_text() == "y\n"

            await alice.wait_for(lambda m, e: changesets_of(alice, session), timeout=WAIT)
            review = changesets_of(alice, session)[0]["uriTemplate"]
            await bob.subscribe(session)
            await bob.subscribe(review)
            ids = {f["id"] for f in bob.state(review)["files"]}
            # Recorded: the file in the default directory, the one in the extra root, the local one;
            # not the one outside every root (the host could not put it back).
            assert ids == {(tmp_path / "notes.txt").resolve().as_uri(), (extra / "data.txt").resolve().as_uri(),
                           (work / "local.txt").resolve().as_uri()}
            await alice.request("invokeChangesetOperation", {"channel": review, "operationId": "reject"})
            await bob.wait_for(lambda m, e: not bob.state(review)["files"], timeout=WAIT)
            assert (tmp_path / "notes.txt").read_text() == "old notes\n"
            assert (extra / "data.txt").read_text() == "old data\n"
            assert not (work / "local.txt").exists()
            assert (elsewhere / "out.txt").read_text() == "y\n"
        finally:
            await bob.close()


async def test_blocks_of_lines_are_kept_and_undone_by_line_range_for_every_client(tmp_path: Path, frame_checker: FrameChecker) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("one\ntwo\nthree\nfour\nfive\n")
    provider = ScriptedProvider([
        call_tools(("write_file", {"path": "notes.txt", "content": "ONE\ntwo\nthree\nfour\nfive\nsix\n"})),
        reply("done"),
        call_tools(("write_file", {"path": "notes.txt", "content": "one\nTWO\nthree\nFOUR\nfive\nsix\n"})),
        reply("done"),
    ])

    def lines(first: int, last: int, side: str = "after") -> dict[str, Any]:
        return {"kind": "range", "resource": notes.resolve().as_uri(), "side": side,
                "range": {"start": {"line": first, "character": 0}, "end": {"line": last, "character": 0}}}

    async with serving(tools_config(tmp_path, auto_approve=True), frame_checker, [scripted(provider)]) as (running, alice):
        bob = await second_client(running, frame_checker)
        try:
            session = await ready_session(alice)
            first = await run_turn(alice, session, "change it")
            await alice.wait_for(lambda m, e: changesets_of(alice, session), timeout=WAIT)
            review = changesets_of(alice, session)[0]["uriTemplate"]
            checkpoint = turn_uri(alice, session, first["id"])
            await bob.subscribe(review)
            await bob.subscribe(checkpoint)
            assert "range" in [op for op in bob.state(review)["operations"] if op["id"] == "reject"][0]["scopes"]

            # Undo the first block only (line 1 of the new content): "ONE" goes back, "six" stays.
            answer = await alice.request("invokeChangesetOperation", {"channel": review, "operationId": "reject", "target": lines(0, 0)})
            assert answer["message"] == "Undid 1 block of lines in notes.txt."
            assert notes.read_text() == "one\ntwo\nthree\nfour\nfive\nsix\n"
            await bob.wait_for(lambda m, e: files(bob, review)["notes.txt"]["edit"]["diff"] == {"added": 1, "removed": 0}, timeout=WAIT)

            # The turn's checkpoint still holds the turn's own content: undoing a block there now
            # conflicts (the file is no longer what the turn wrote) and writes nothing.
            with pytest.raises(AhpError) as error:
                await alice.request("invokeChangesetOperation", {"channel": checkpoint, "operationId": "revert", "target": lines(5, 5)})
            assert error.value.code == -32011 and "changed since the agent wrote it" in error.value.message
            assert notes.read_text() == "one\ntwo\nthree\nfour\nfive\nsix\n"
            await bob.wait_for(lambda m, e: "conflict" in files(bob, checkpoint)["notes.txt"].get("_meta", {}), timeout=WAIT)

            # A range no change meets says where the changes are; keeping the last block empties the list.
            with pytest.raises(AhpError) as error:
                await alice.request("invokeChangesetOperation", {"channel": review, "operationId": "accept", "target": lines(1, 3)})
            assert error.value.code == -32008 and "changed lines there: 6" in error.value.message
            await alice.request("invokeChangesetOperation", {"channel": review, "operationId": "accept", "target": lines(5, 5)})
            await bob.wait_for(lambda m, e: files(bob, review) == {}, timeout=WAIT)
            assert notes.read_text() == "one\ntwo\nthree\nfour\nfive\nsix\n"

            # A second turn changes two lines; undoing one block of that turn moves the review list along.
            second = await run_turn(alice, session, "change it again")
            checkpoint = turn_uri(alice, session, second["id"])
            await bob.subscribe(checkpoint)
            await bob.wait_for(lambda m, e: "notes.txt" in files(bob, review), timeout=WAIT)
            await alice.request("invokeChangesetOperation", {"channel": checkpoint, "operationId": "revert", "target": lines(3, 3, "before")})
            assert notes.read_text() == "one\nTWO\nthree\nfour\nfive\nsix\n"
            await bob.wait_for(lambda m, e: files(bob, review)["notes.txt"]["edit"]["diff"] == {"added": 1, "removed": 1}
                               and files(bob, checkpoint)["notes.txt"]["edit"]["diff"] == {"added": 1, "removed": 1}, timeout=WAIT)
        finally:
            await bob.close()


async def test_undoing_a_turn_removes_the_folders_it_made_for_the_files_it_created(tmp_path: Path, frame_checker: FrameChecker) -> None:
    project = tmp_path / "project"
    (project / "kept").mkdir(parents=True)
    (project / "kept" / "old.txt").write_text("mine\n")
    agent = scripted(ScriptedProvider([
        call_tools(("write_file", {"path": "new/deep/c.txt", "content": "v1\n"}), ("write_file", {"path": "kept/d.txt", "content": "v1\n"})),
        reply("done"),
    ]))
    async with serving(tools_config(tmp_path, auto_approve=True), frame_checker, [agent]) as (_, alice):
        session = await ready_session(alice, working_directory=project.as_uri())
        turn = await run_turn(alice, session, "create")
        assert (project / "new" / "deep" / "c.txt").exists()
        await alice.subscribe(turn_uri(alice, session, turn["id"]))
        await alice.request("invokeChangesetOperation", {"channel": turn_uri(alice, session, turn["id"]), "operationId": "revert"})
    assert not (project / "new").exists()  # the turn made new/ and new/deep/ for its file: gone with it
    assert sorted(p.name for p in (project / "kept").iterdir()) == ["old.txt"]  # a folder holding more stays
    assert project.is_dir()  # and the working directory itself, even left empty, always stays
