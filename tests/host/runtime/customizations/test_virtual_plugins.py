"""A client's ``virtual://`` plugin loads like a ``file://`` one: the host reads the tree from the
publishing client with host→client resourceList / resourceRead over the same WebSocket, a second
client sees the same loaded container, a new nonce fetches again, and a client that cannot serve
its tree gets an ``error`` load state saying why."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

from client import AhpClient
from client.errors import AhpError
from providers import ScriptedProvider
from tests.conftest import TOKEN, FrameChecker
from tests.host.runtime.agents.harness import config_for, ready_session, serving
from tests.host.runtime.customizations.test_service import by_id, scripted_agent

BASE = "virtual://editor/plugins/remote-kit"


def tree(skill_description: str) -> dict[str, str]:
    return {
        ".plugin/plugin.json": json.dumps({"name": "remote-kit", "version": "1.0.0", "description": "Served by the editor."}),
        "skills/summarize/SKILL.md": f"---\nname: summarize\ndescription: {skill_description}\n---\n\nSummarize the file.\n",
        "rules/tidy.mdc": "---\ndescription: Keep it tidy.\nalwaysApply: true\n---\n\nTidy up.\n",
    }


def serve(client: AhpClient, files: dict[str, str], reads: list[str]) -> None:
    """Answer the host's resource requests for ``BASE`` from ``files`` (an editor's file provider)."""

    def relative(uri: str) -> str:
        if not uri.startswith(BASE):
            raise AhpError(-32008, f"{uri} is not published by this client.")
        return uri[len(BASE):].strip("/")

    async def resource_list(params: dict[str, Any]) -> dict[str, Any]:
        prefix = relative(params["uri"])
        prefix = prefix + "/" if prefix else ""
        entries: dict[str, str] = {}
        for path in files:
            if path.startswith(prefix):
                head, _, rest = path[len(prefix):].partition("/")
                entries[head] = "directory" if rest else "file"
        if not entries:
            raise AhpError(-32008, f"{params['uri']} does not exist.")
        return {"entries": [{"name": name, "type": kind} for name, kind in sorted(entries.items())]}

    async def resource_read(params: dict[str, Any]) -> dict[str, Any]:
        path = relative(params["uri"])
        reads.append(path)
        if path not in files:
            raise AhpError(-32008, f"{params['uri']} does not exist.")
        return {"data": base64.b64encode(files[path].encode()).decode(), "encoding": "base64"}

    client.on_request("resourceList", resource_list)
    client.on_request("resourceRead", resource_read)


def publish(client: AhpClient, session: str, nonce: str, uri: str = BASE) -> None:
    client.dispatch(session, {"type": "session/activeClientChanged", "activeClient": {
        "clientId": client.client_id, "tools": [],
        "customizations": [{"type": "plugin", "id": "remote", "uri": uri, "name": "remote-kit", "enabled": True, "nonce": nonce}]}})


def loaded(client: AhpClient, session: str, kind: str = "loaded") -> bool:
    container = by_id(client, session).get("remote")
    return container is not None and container["load"]["kind"] == kind


async def test_a_virtual_plugin_is_fetched_from_its_client_and_loads(tmp_path: Path, frame_checker: FrameChecker) -> None:
    files = tree("Summarizes a file in three lines.")
    reads: list[str] = []
    config = config_for(tmp_path)
    async with serving(config, frame_checker, [scripted_agent(ScriptedProvider([]))]) as (running, editor):
        serve(editor, files, reads)
        session = await ready_session(editor)
        watcher = await AhpClient.connect(running.url.split("?")[0], token=TOKEN, frame_hook=frame_checker.client_hook())
        watched = running.host.session_uri(session)  # the watcher speaks 1.0.0, the editor 0.2.0
        try:
            await watcher.initialize(subscriptions=[watched])
            publish(editor, session, "1")
            await editor.wait_for(lambda m, e: loaded(editor, session), timeout=30)
            await watcher.wait_for(lambda m, e: loaded(watcher, watched), timeout=30)
            container = by_id(watcher, watched)["remote"]
            assert container["clientId"] == editor.client_id
            assert container["uri"] == BASE
            children = {child["type"]: child for child in container["children"]}
            assert set(children) == {"skill", "rule"}
            assert children["skill"]["uri"] == f"{BASE}/skills/summarize/SKILL.md"
            assert children["skill"]["description"] == "Summarizes a file in three lines."
            assert children["rule"]["alwaysApply"] is True
            assert sorted(reads) == sorted(files)

            # The skill is usable like a local one: it completes as a slash command.
            items = (await editor.request("completions", {"channel": session, "kind": "userMessage",
                                                          "text": "/remote-kit:summ", "offset": 16}))["items"]
            assert [item["insertText"] for item in items] == ["/remote-kit:summarize "]

            # Same nonce: nothing is fetched again. A new nonce: the new content is read.
            files["skills/summarize/SKILL.md"] = tree("Summarizes in one line.")["skills/summarize/SKILL.md"]
            reads.clear()
            publish(editor, session, "2")
            await watcher.wait_for(lambda m, e: loaded(watcher, watched) and any(
                c.get("description") == "Summarizes in one line." for c in by_id(watcher, watched)["remote"]["children"]), timeout=30)
            assert "skills/summarize/SKILL.md" in reads
        finally:
            await watcher.close()


async def test_a_tree_the_client_cannot_serve_is_an_error_naming_the_reason(tmp_path: Path, frame_checker: FrameChecker) -> None:
    config = config_for(tmp_path)
    async with serving(config, frame_checker, [scripted_agent(ScriptedProvider([]))]) as (_, editor):
        serve(editor, tree("x"), [])
        session = await ready_session(editor)
        publish(editor, session, "1", uri="virtual://editor/plugins/gone")
        await editor.wait_for(lambda m, e: loaded(editor, session, "error"), timeout=30)
        message = by_id(editor, session)["remote"]["load"]["message"]
        assert "virtual://editor/plugins/gone" in message
        assert "-32008" in message and "not published by this client" in message


async def test_hostile_entry_names_never_write_outside_the_mirror(tmp_path: Path, frame_checker: FrameChecker) -> None:
    config = config_for(tmp_path)
    async with serving(config, frame_checker, [scripted_agent(ScriptedProvider([]))]) as (_, editor):
        async def resource_list(params: dict[str, Any]) -> dict[str, Any]:
            return {"entries": [{"name": "../../escaped.txt", "type": "file"}]}

        editor.on_request("resourceList", resource_list)
        session = await ready_session(editor)
        publish(editor, session, "1")
        await editor.wait_for(lambda m, e: loaded(editor, session, "error"), timeout=30)
        assert "plain file names" in by_id(editor, session)["remote"]["load"]["message"]
    assert not list(tmp_path.rglob("escaped.txt"))


async def test_scripts_in_a_virtual_plugin_stay_runnable_in_the_hosts_copy(tmp_path: Path, frame_checker: FrameChecker) -> None:
    files = {**tree("Summarizes."), "hooks/start.sh": "#!/bin/sh\necho started\n", "notes/readme.txt": "plain text\n"}
    async with serving(config_for(tmp_path), frame_checker, [scripted_agent(ScriptedProvider([]))]) as (_, editor):
        serve(editor, files, [])
        session = await ready_session(editor)
        publish(editor, session, "1")
        await editor.wait_for(lambda m, e: loaded(editor, session), timeout=30)
    [script] = [p for p in tmp_path.rglob("start.sh") if "client-plugins" in p.parts]
    [text] = [p for p in tmp_path.rglob("readme.txt") if "client-plugins" in p.parts]
    assert os.access(script, os.X_OK)  # resourceList has no modes: a #! script is made executable
    assert not os.access(text, os.X_OK)
