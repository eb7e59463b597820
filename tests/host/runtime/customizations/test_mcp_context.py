"""MCP as a Claude Code user uses it, end to end with a real host, a real client and a real MCP
server process: prompts as ``/mcp__server__prompt`` slash commands (completed, fetched, sent as the
user's turn), resources through ``@server:uri`` mentions and the two resource tools, roots set to
the session's folders, the server's log in its ``mcpServer`` entry, and a task-only tool not
offered."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from chat.render import Style
from chat.views import render_mcp
from client import AhpClient
from host.runtime.agents import ModelSpec, ProviderAgent, StaticSource, TurnSettings
from providers import ImageContent, ScriptedProvider, UserMessage
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import idle, ready_session, run_turn, serving
from tests.host.runtime.customizations.test_mcp_sessions import mcp_config, tool_calls, wait_tools
from tests.tools.mcp.conftest import CONTEXT_SERVER, oauth_server  # noqa: F401 (a fixture)

NOTES = {"command": sys.executable, "args": [str(CONTEXT_SERVER)]}


def vision_agent(provider: ScriptedProvider) -> ProviderAgent:
    return ProviderAgent("scripted", StaticSource(provider), display_name="Scripted", models=[ModelSpec("m1", vision=True)],
                         settings=TurnSettings(title="first-words"))


def user_message(provider: ScriptedProvider, index: int = -1) -> UserMessage:
    return [m for m in provider.requests[index].messages if isinstance(m, UserMessage)][-1]


def notes_entry(client: AhpClient, session: str) -> dict[str, Any]:
    container = next(c for c in client.state(session)["customizations"] if c["id"] == "mcp-servers")
    return next(child for child in container["children"] if child["name"] == "notes")


async def completions(client: AhpClient, session: str, text: str) -> list[dict[str, Any]]:
    result = await client.request("completions", {"channel": session, "kind": "userMessage", "text": text, "offset": len(text)})
    return result["items"]


async def notes_ready(client: AhpClient, session: str) -> dict[str, str]:
    names = await wait_tools(client, session, "notes", "roots", "chatter")
    # The catalogue (prompts, resources) is published with the server's entry once it runs.
    await client.wait_for(lambda m, e: "prompts" in (notes_entry(client, session).get("_meta") or {}), timeout=20)
    return names


async def test_a_servers_prompts_are_completed_as_slash_commands_and_run_as_the_users_turn(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([reply("reviewed"), reply("talked")])
    async with serving(mcp_config(tmp_path, {"notes": NOTES}), frame_checker, [vision_agent(provider)]) as (_, client):
        session = await ready_session(client)
        await notes_ready(client, session)
        items = await completions(client, session, "/mcp__notes__")
        review = await run_turn(client, session, '/mcp__notes__review "x = 1" focus=style')
        talk = await run_turn(client, session, "/mcp__notes__conversation the weather")
    labels = {item["attachment"]["label"]: item for item in items}
    assert set(labels) == {"/mcp__notes__review", "/mcp__notes__greet", "/mcp__notes__conversation", "/mcp__notes__broken"}
    assert labels["/mcp__notes__review"]["insertText"] == "/mcp__notes__review "
    assert "Review a piece of code" in labels["/mcp__notes__review"]["attachment"]["modelRepresentation"]
    assert review["state"] == "complete" and talk["state"] == "complete"
    # The turn shows what the user typed; the model gets the server's prompt.
    assert review["userMessage"]["text"] == '/mcp__notes__review "x = 1" focus=style'
    assert user_message(provider, 0).text == "Please review this code, looking for style:\nx = 1"
    sent = user_message(provider, 1)
    text = sent.content[0].text
    assert text.startswith("Let us talk about the weather.")
    assert "[The prompt's assistant message]\nGladly. What would you like to know?" in text
    assert "[Resource notes://readme]\nThe readme says hi." in text
    assert [type(part) for part in sent.content[1:]] == [ImageContent]


async def test_a_prompt_with_missing_arguments_or_a_failing_server_ends_the_turn_with_a_clear_error(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([reply("fine")])
    async with serving(mcp_config(tmp_path, {"notes": NOTES}), frame_checker, [vision_agent(provider)]) as (_, client):
        session = await ready_session(client)
        await notes_ready(client, session)
        missing = await run_turn(client, session, "/mcp__notes__review")
        await idle(client, session)
        broken = await run_turn(client, session, "/mcp__notes__broken")
        await idle(client, session)
        after = await run_turn(client, session, "/mcp__notes__greet")
    assert missing["state"] == "error"
    assert missing["error"]["message"] == "/mcp__notes__review needs 'code'. Usage: /mcp__notes__review <code> [focus]"
    assert broken["state"] == "error"
    assert broken["error"]["message"].startswith("/mcp__notes__broken could not be run: The MCP server 'notes' refused the prompt 'broken'")
    assert after["state"] == "complete"
    # Neither failed turn reached the model; the one after them did, with the server's prompt.
    assert len(provider.requests) == 1 and user_message(provider).text.endswith("Hello from the context server prompt.")


async def test_resource_mentions_are_completed_and_attached_for_the_model(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([reply("read them"), reply("again")])
    async with serving(mcp_config(tmp_path, {"notes": NOTES}), frame_checker, [vision_agent(provider)]) as (_, client):
        session = await ready_session(client)
        await notes_ready(client, session)
        items = await completions(client, session, "compare @notes:no")
        turn = await run_turn(client, session, "compare @notes:notes://readme, @notes:notes://items/pear and @notes:notes://missing")
        await idle(client, session)
        readme = next(item for item in items if item["insertText"] == "@notes:notes://readme ")
        # Accepting the completion: the client sends the item's attachment with the message.
        await run_turn(client, session, "see @notes:notes://readme and the logo", attachments=[
            readme["attachment"], next(item for item in items if item["insertText"] == "@notes:notes://logo ")["attachment"]])
    assert [item["insertText"] for item in items][:3] == ["@notes:notes://readme ", "@notes:notes://logo ", "@notes:notes://big "]
    assert readme["attachment"]["_meta"] == {"mcpServer": "notes"}
    text = user_message(provider, 0).content[0].text
    assert "README: the context server keeps notes." in text
    assert "item pear" in text
    assert "@notes:notes://missing was not attached: The MCP server 'notes' refused the resource notes://missing" in text
    notes = [p["content"] for p in turn["responseParts"] if p["kind"] == "systemNotification"]
    assert any("@notes:notes://missing was not attached" in note for note in notes)
    sent = user_message(provider, 1)
    assert sent.content[0].text.count("README: the context server keeps notes.") == 1  # once, though attached and mentioned
    assert [type(part) for part in sent.content[1:]] == [ImageContent]
    assert "was not read" not in sent.content[0].text


async def test_the_model_lists_and_reads_resources_with_bounded_output(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([])
    config = mcp_config(tmp_path, {"notes": NOTES}, tools={"enabled": True})
    async with serving(config, frame_checker, [vision_agent(provider)]) as (_, client):
        session = await ready_session(client)
        await notes_ready(client, session)
        provider.add(call_tools(("list_mcp_resources", {}), ("read_mcp_resource", {"server": "notes", "uri": "notes://big"}),
                                ("read_mcp_resource", {"server": "elsewhere", "uri": "x://y"})))
        provider.add(reply("done"))
        await run_turn(client, session, "what resources are there?")
        await idle(client, session)
        calls = tool_calls(client.state(session)["turns"][-1])
    offered = {tool.name for tool in provider.requests[0].tools}
    assert {"list_mcp_resources", "read_mcp_resource"} <= offered
    listing, big, unknown = calls
    assert listing["success"] is True and listing["confirmed"] == "not-needed"
    listed = json.loads(listing["content"][0]["text"])
    assert {"server": "notes", "uri": "notes://readme", "name": "readme", "description": "The project readme",
            "mimeType": "text/plain"} in listed
    template = next(entry for entry in listed if "uriTemplate" in entry)
    assert (template["server"], template["uriTemplate"], template["name"]) == ("notes", "notes://items/{item}", "item")
    assert big["success"] is True
    assert len(big["content"][0]["text"]) == 256 * 1024
    assert big["content"][-1]["text"] == "[Only the first 256 KiB of notes:notes://big were sent to the model.]"
    assert unknown["success"] is False
    assert unknown["error"]["message"] == ("No running MCP server 'elsewhere' of this session has resources "
                                           "(servers with resources: notes).")


async def test_the_resource_tools_are_not_offered_without_a_server_that_has_resources(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    from tests.host.runtime.customizations.test_mcp_sessions import sink_server

    provider = ScriptedProvider([reply("ok")])
    async with serving(mcp_config(tmp_path, {"sink": sink_server()}), frame_checker, [vision_agent(provider)]) as (_, client):
        session = await ready_session(client)
        await wait_tools(client, session, "sink", "echo")
        await run_turn(client, session, "hello")
    offered = {tool.name for tool in provider.requests[0].tools}
    assert "list_mcp_resources" not in offered and "read_mcp_resource" not in offered


async def test_roots_are_the_sessions_folders_and_the_server_hears_when_they_change(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([])
    config = mcp_config(tmp_path, {"notes": NOTES}, tools={"enabled": True, "auto_approve": True})
    workdir, added = tmp_path / "project", tmp_path / "library"
    workdir.mkdir()
    added.mkdir()
    async with serving(config, frame_checker, [vision_agent(provider)]) as (running, client):
        session = await ready_session(client, working_directory=workdir.as_uri())
        names = await notes_ready(client, session)
        provider.add(call_tools((names["roots"], {}), (names["roots_changes"], {})))
        provider.add(reply("listed"))
        await run_turn(client, session, "which roots?")
        await idle(client, session)
        before = tool_calls(client.state(session)["turns"][-1])
        # A folder joins the session (what a 0.7.0+ client's session/workingDirectorySet does; the
        # 0.2.0 test client has no such action, so the host's store takes it directly).
        internal = "scripted:/" + session.split(":/", 1)[1]
        running.host.store.dispatch(internal, {"type": "session/workingDirectorySet", "directory": added.resolve().as_uri()})
        provider.add(call_tools((names["roots_changes"], {}), (names["roots"], {})))
        provider.add(reply("listed again"))
        await run_turn(client, session, "and now?")
        await idle(client, session)
        after = tool_calls(client.state(session)["turns"][-1])
    assert [call["content"][0]["text"] for call in before] == [workdir.resolve().as_uri(), "0"]
    assert after[0]["content"][0]["text"] == "1"
    assert after[1]["content"][0]["text"].splitlines() == [workdir.resolve().as_uri(), added.resolve().as_uri()]


async def test_the_servers_log_and_its_task_only_tool_show_in_the_mcp_view(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([])
    config = mcp_config(tmp_path, {"notes": NOTES}, tools={"enabled": True, "auto_approve": True})
    async with serving(config, frame_checker, [vision_agent(provider)]) as (_, client):
        session = await ready_session(client)
        names = await notes_ready(client, session)
        provider.add(call_tools((names["chatter"], {"count": 2})))
        provider.add(reply("chattered"))
        await run_turn(client, session, "chatter")

        def logged() -> list[str]:
            return [entry["text"] for entry in (notes_entry(client, session).get("_meta") or {}).get("log") or []]

        await client.wait_for(lambda m, e: "chatter stderr 2" in logged() and "chatter message 2" in logged(), timeout=20)
        entry = notes_entry(client, session)
        shown = render_mcp(client.state(session), Style(color=False))
    meta = entry["_meta"]
    assert entry["state"] == {"kind": "ready"}  # re-publishing the entry for its log kept its state
    assert {"level": "info", "logger": "chatter", "text": "chatter message 1"} in meta["log"]
    assert {"level": "stderr", "text": "context-server: starting"} in meta["log"]
    assert meta["notOffered"] == [{"tool": "long_job", "reason": meta["notOffered"][0]["reason"]}]
    assert "MCP task" in meta["notOffered"][0]["reason"]
    assert "long_job" not in {t.name.rsplit("__", 1)[-1] for t in provider.requests[0].tools}
    assert meta["resources"] == 3 and meta["resourceTemplates"] == 1
    assert "notes" in shown and "[info] chatter: chatter message 2" in shown
    assert "long_job not offered:" in shown
    assert "prompts: /mcp__notes__review" in shown


async def test_a_remote_server_that_asks_for_oauth_is_signed_in_through_the_sessions_input_request(
        tmp_path: Path, frame_checker: FrameChecker, oauth_server: str) -> None:
    from tests.host.runtime.customizations.test_mcp_sessions import open_request
    from tests.tools.mcp.conftest import play_browser

    provider = ScriptedProvider([reply("hello")])
    config = mcp_config(tmp_path, {"remote": {"type": "http", "url": oauth_server}})
    async with serving(config, frame_checker, [vision_agent(provider)]) as (_, client):
        session = await ready_session(client)
        request = await open_request(client, session)
        container = next(c for c in client.state(session)["customizations"] if c["id"] == "mcp-servers")
        shown = render_mcp(client.state(session), Style(color=False))
        assert await play_browser(request["url"]) == 200
        await wait_tools(client, session, "remote", "whoami")
        await client.wait_for(lambda m, e: not (client.state(session) or {}).get("inputRequests"), timeout=20)
        healed = next(c for c in client.state(session)["customizations"] if c["id"] == "mcp-servers")
        data = config.data_path()
    assert request["url"].startswith(oauth_server.removesuffix("/mcp") + "/authorize?")
    assert "needs you to sign in" in request["message"]
    assert f"MCP server 'remote' needs you to sign in: open {request['url']}" in container["load"]["message"]
    assert "needs you to sign in" in shown
    assert healed["load"]["kind"] == "loaded"
    [token_file] = (data / "mcp-oauth").iterdir()
    assert oct(token_file.stat().st_mode & 0o777) == "0o600"


async def test_a_prompt_the_server_adds_later_becomes_a_slash_command(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([])
    config = mcp_config(tmp_path, {"notes": NOTES}, tools={"enabled": True, "auto_approve": True})
    async with serving(config, frame_checker, [vision_agent(provider)]) as (_, client):
        session = await ready_session(client)
        names = await notes_ready(client, session)
        assert not await completions(client, session, "/mcp__notes__lat")
        provider.add(call_tools((names["add_prompt"], {"name": "later"})))
        provider.add(reply("added"))
        await run_turn(client, session, "add a prompt")
        await idle(client, session)
        await client.wait_for(lambda m, e: "mcp__notes__later" in (notes_entry(client, session)["_meta"].get("prompts") or []),
                              timeout=20)
        items = await completions(client, session, "/mcp__notes__lat")
        provider.add(reply("used it"))
        turn = await run_turn(client, session, "/mcp__notes__later")
    assert [item["insertText"] for item in items] == ["/mcp__notes__later "]
    assert turn["state"] == "complete"
    assert user_message(provider).text.endswith("the later prompt")


async def test_a_turn_that_does_not_wait_for_a_sign_in_keeps_the_link_shown_and_tells_the_model(
        tmp_path: Path, frame_checker: FrameChecker, oauth_server: str) -> None:
    from tests.host.runtime.customizations.test_mcp_sessions import open_request

    provider = ScriptedProvider([reply("without it")])
    config = mcp_config(tmp_path, {"remote": {"type": "http", "url": oauth_server}})
    config.mcp.start_wait = 0.5
    async with serving(config, frame_checker, [vision_agent(provider)]) as (_, client):
        session = await ready_session(client)
        request = await open_request(client, session)
        turn = await run_turn(client, session, "hello")
        await idle(client, session)
        container = next(c for c in client.state(session)["customizations"] if c["id"] == "mcp-servers")
        still_asked = [r["id"] for r in client.state(session).get("inputRequests") or []]
    assert turn["state"] == "complete"
    assert "MCP server 'remote' is still starting (waiting for the user to sign in)." in (provider.requests[0].system or "")
    # The turn that gave up waiting did not hide the link behind "still starting", nor withdraw the question.
    assert f"needs you to sign in: open {request['url']}" in container["load"]["message"]
    assert still_asked == [request["id"]]
