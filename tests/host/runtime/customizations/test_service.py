"""Plugins and MCP servers in sessions, end to end: a real host on port 0, a real schema-checked
client, the scripted provider, and the vendored sample plugins."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from host.runtime.agents import ModelSpec, ProviderAgent, StaticSource, TurnSettings
from providers import ScriptedProvider, ToolResultsMessage, UserMessage
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import config_for, idle, ready_session, run_turn, serving
from tests.tools.mcp.conftest import eventually
from tools.base import Tool, ToolContext, success_result


class ShellProbe(Tool):
    """Stands in for a shell tool: records whether it ran."""

    name = "shell"
    title = "Shell"
    description = "Runs a command."
    input_schema = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}

    def __init__(self) -> None:
        self.ran: list[str] = []

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        self.ran.append(args["command"])
        return success_result("Ran it", [{"type": "text", "text": "ok"}])


def scripted_agent(provider: ScriptedProvider, *tools: Tool) -> ProviderAgent:
    return ProviderAgent("scripted", StaticSource(provider), display_name="Scripted", models=[ModelSpec("m1")],
                         settings=TurnSettings(title="first-words", system_prompt="BASE PROMPT"), tools=tools)


def host_config(tmp_path: Path, plugin_dir: Path, workspace: Path) -> Any:
    # Servers start with the session (not its first turn): these tests wait for their tools first.
    return config_for(tmp_path, plugins={"directories": [str(plugin_dir)]}, mcp={"start": "session"},
                      sessions={"default_directory": str(workspace)})


def containers(client: Any, session: str) -> dict[str, dict]:
    return {c["name"]: c for c in (client.state(session) or {}).get("customizations") or []}


async def settled(client: Any, session: str) -> dict[str, dict]:
    """Wait until every container finished loading and the MCP servers settled."""
    def done(m: Any, e: Any) -> bool:
        found = containers(client, session)
        degraded = found.get("sample-degraded", {}).get("load", {})
        return bool(found) and all(c.get("load", {}).get("kind") != "loading" for c in found.values()) \
            and "ghost" in str(degraded.get("message", ""))
    await client.wait_for(done, timeout=20)
    await client.wait_for(lambda m, e: any(t.get("_meta", {}).get("mcpServer") == "tiny"
                                           for t in (client.state(session) or {}).get("serverTools") or []), timeout=20)
    return containers(client, session)


def by_id(client: Any, session: str) -> dict[str, dict]:
    return {c["id"]: c for c in (client.state(session) or {}).get("customizations") or []}


def mcp_name(client: Any, session: str, tool: str) -> str:
    return next(t["name"] for t in client.state(session)["serverTools"] if t.get("_meta", {}).get("mcpTool") == tool)


async def test_sample_plugins_and_workspace_folders_appear_with_their_load_states(
        tmp_path: Path, plugin_dir: Path, workspace: Path, hook_log: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([])
    async with serving(host_config(tmp_path, plugin_dir, workspace), frame_checker, [scripted_agent(provider)]) as (_, client):
        root_plugins = client.state("ahp-root://")["agents"][0]["customizations"]
        assert [p["name"] for p in root_plugins] == ["sample-broken", "sample-degraded", "sample-toolkit"]
        session = await client.create_session()
        found = await settled(client, session)
        await client.wait_for(lambda m, e: hook_log.exists() and "SessionStart" in hook_log.read_text(), timeout=20)
        await client.dispose_session(session)
        # The hook runs in the background after the reply; no frame follows it, so poll the file.
        assert await eventually(lambda: "SessionEnd" in hook_log.read_text(), timeout=20)
    toolkit = found["sample-toolkit"]
    assert toolkit["load"] == {"kind": "loaded"}
    assert len(toolkit["children"]) == 12
    assert toolkit["uri"] == (plugin_dir / "sample-toolkit").resolve().as_uri()
    assert found["sample-broken"]["load"]["kind"] == "error"
    assert "plugin.json" in found["sample-broken"]["load"]["message"]
    assert "children" not in found["sample-broken"]
    degraded = found["sample-degraded"]
    assert degraded["load"]["kind"] == "degraded"
    assert "bare-notes/SKILL.md" in degraded["load"]["message"]
    assert sorted(c["type"] for c in degraded["children"]) == ["mcpServer", "rule", "skill"]
    folders = {c["uri"].removeprefix(workspace.as_uri()): c for c in found.values() if c["type"] == "directory"}
    assert folders["/.github/instructions"]["contents"] == "rule"
    assert [c["name"] for c in folders["/.github/prompts"]["children"]] == ["explain-diff"]
    assert [c["name"] for c in folders["/.github/agents"]["children"]] == ["planner"]
    # The broken plugin's SessionStart hook never ran and its server never started.
    assert not (tmp_path / "tmp" / "sample-broken-hook-ran.log").exists()
    assert "never-started" not in json.dumps(found["sample-broken"])


async def test_a_plugin_mcp_server_runs_in_the_session_with_plugin_root_and_env(
        tmp_path: Path, plugin_dir: Path, workspace: Path, hook_log: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([])
    async with serving(host_config(tmp_path, plugin_dir, workspace), frame_checker, [scripted_agent(provider)]) as (_, client):
        session = await ready_session(client)
        await settled(client, session)
        info, echo = mcp_name(client, session, "plugin_info"), mcp_name(client, session, "echo")
        provider.add(call_tools((info, {}), (echo, {"text": "x"})))
        provider.add(reply("done"))
        turn = await run_turn(client, session, "inspect the plugin")
        await idle(client, session)
    assert {info, echo} <= {tool.name for tool in provider.requests[0].tools}
    results = [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]
    texts = {r["toolName"]: json.dumps(r) for r in results}
    root = str((plugin_dir / "sample-toolkit").resolve())
    assert root in texts[info]
    assert "hello from sample-toolkit: x" in texts[echo]


async def test_a_custom_agent_sets_the_system_prompt_and_restricts_tools_from_the_next_turn(
        tmp_path: Path, plugin_dir: Path, workspace: Path, hook_log: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([reply("one"), reply("two"), reply("three")])
    async with serving(host_config(tmp_path, plugin_dir, workspace), frame_checker, [scripted_agent(provider)]) as (_, client):
        session = await ready_session(client)
        await settled(client, session)
        await run_turn(client, session, "hello")
        reviewer = next(c for c in containers(client, session)["sample-toolkit"]["children"] if c["type"] == "agent")
        client.dispatch(session, {"type": "session/agentChanged", "agent": {"uri": reviewer["uri"]}})
        await run_turn(client, session, "review")
        planner = containers(client, session)[".github/agents"]["children"][0]
        client.dispatch(session, {"type": "session/agentChanged", "agent": {"uri": planner["uri"]}})
        await run_turn(client, session, "plan")
        await idle(client, session)
    first, second, third = provider.requests[:3]
    assert first.system.startswith("BASE PROMPT")
    assert "You review changes to a public HTTP API" not in first.system
    assert "You review changes to a public HTTP API" in second.system
    assert any(t.name.startswith("mcp") or "tiny" in t.name for t in second.tools)
    assert "You plan; you do not implement." in third.system
    # planner declares tools ['read', 'search']: the MCP tools are not offered to it.
    assert not any("tiny" in t.name for t in third.tools)


async def test_rules_always_apply_and_glob_rules_join_when_a_matching_file_is_attached(
        tmp_path: Path, plugin_dir: Path, workspace: Path, hook_log: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([reply("one"), reply("two")])
    async with serving(host_config(tmp_path, plugin_dir, workspace), frame_checker, [scripted_agent(provider)]) as (_, client):
        session = await ready_session(client)
        await settled(client, session)
        await run_turn(client, session, "hello")
        attachment = {"type": "resource", "label": "app.py", "uri": (workspace / "src" / "app.py").as_uri()}
        await run_turn(client, session, "look at this", [attachment])
        await idle(client, session)
    first, second = provider.requests[:2]
    assert "Treat anything that looks like a password" in first.system  # no-secrets: always
    assert "pathlib.Path" not in first.system  # python-style: only with a *.py file in play
    assert "pathlib.Path" in second.system
    assert "commit-messages" in first.system  # on-request rules are listed for the model
    assert "load_rule" in {t.name for t in first.tools}


async def test_the_model_loads_a_skill_and_a_user_runs_a_command_with_arguments(
        tmp_path: Path, plugin_dir: Path, workspace: Path, hook_log: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("load_skill", {"name": "sample-toolkit:release-notes"})), reply("ok"),
                                 reply("triaged")])
    async with serving(host_config(tmp_path, plugin_dir, workspace), frame_checker, [scripted_agent(provider)]) as (_, client):
        session = await ready_session(client)
        await settled(client, session)
        await run_turn(client, session, "write release notes")
        await run_turn(client, session, "/sample-toolkit:triage src/")
        await idle(client, session)
    loader = next(t for t in provider.requests[0].tools if t.name == "load_skill")
    assert "sample-toolkit:release-notes" in loader.description
    assert "db-reset" not in loader.description  # disable-model-invocation
    results = next(m for m in provider.requests[1].messages if isinstance(m, ToolResultsMessage))
    skill_body = (plugin_dir / "sample-toolkit" / "skills" / "release-notes" / "SKILL.md").read_text().split("---")[-1].strip()
    assert skill_body[:60] in results.results[0].text
    sent = [m.text for m in provider.requests[2].messages if isinstance(m, UserMessage)][-1]
    assert "Search the workspace (or only the path given here: src/)" in sent


async def test_a_pre_tool_use_hook_blocks_a_call_and_says_why(
        tmp_path: Path, plugin_dir: Path, workspace: Path, hook_log: Path, frame_checker: FrameChecker) -> None:
    shell = ShellProbe()
    provider = ScriptedProvider([call_tools(("shell", {"command": "echo SAMPLE_TOOLKIT_BLOCK_ME"})), reply("blocked"),
                                 call_tools(("shell", {"command": "echo fine"})), reply("ran")])
    async with serving(host_config(tmp_path, plugin_dir, workspace), frame_checker, [scripted_agent(provider, shell)]) as (_, client):
        session = await ready_session(client)
        await settled(client, session)
        blocked = await run_turn(client, session, "run the bad one")
        allowed = await run_turn(client, session, "run the good one")
        await idle(client, session)
    call = next(p["toolCall"] for p in blocked["responseParts"] if p["kind"] == "toolCall")
    assert call["success"] is False
    assert "sample-toolkit guard" in call["error"]["message"]
    results = next(m for m in provider.requests[1].messages if isinstance(m, ToolResultsMessage))
    assert "sample-toolkit guard" in results.results[0].text
    assert shell.ran == ["echo fine"]
    assert next(p["toolCall"] for p in allowed["responseParts"] if p["kind"] == "toolCall")["success"] is True
    assert "PreToolUse" in hook_log.read_text()
    assert "UserPromptSubmit" in hook_log.read_text()


async def test_toggling_a_plugin_off_removes_its_tools_prompt_and_hooks(
        tmp_path: Path, plugin_dir: Path, workspace: Path, hook_log: Path, frame_checker: FrameChecker) -> None:
    shell = ShellProbe()
    provider = ScriptedProvider([call_tools(("shell", {"command": "echo SAMPLE_TOOLKIT_BLOCK_ME"})), reply("ran")])
    async with serving(host_config(tmp_path, plugin_dir, workspace), frame_checker, [scripted_agent(provider, shell)]) as (_, client):
        session = await ready_session(client)
        toolkit = (await settled(client, session))["sample-toolkit"]
        client.dispatch(session, {"type": "session/customizationToggled", "id": toolkit["id"], "enabled": False})
        await client.wait_for(lambda m, e: not any(t.get("_meta", {}).get("mcpServer") == "tiny"
                                                   for t in client.state(session).get("serverTools") or []), timeout=20)
        await run_turn(client, session, "run it")
        await idle(client, session)
        items = (await client.request("completions", {"channel": session, "kind": "userMessage",
                                                      "text": "/sample-toolkit:", "offset": 16}))["items"]
    request = provider.requests[0]
    assert "Treat anything that looks like a password" not in request.system
    assert not any("tiny" in t.name for t in request.tools)
    loader = next(t for t in request.tools if t.name == "load_skill")  # sample-degraded still has a skill
    assert "sample-toolkit:" not in loader.description
    assert shell.ran == ["echo SAMPLE_TOOLKIT_BLOCK_ME"]  # the guard hook is off with its plugin
    assert items == []


async def test_completions_offer_slash_entries_and_files_with_utf16_ranges(
        tmp_path: Path, plugin_dir: Path, workspace: Path, hook_log: Path, frame_checker: FrameChecker) -> None:
    async with serving(host_config(tmp_path, plugin_dir, workspace), frame_checker, [scripted_agent(ScriptedProvider([]))]) as (_, client):
        session = await ready_session(client)
        await settled(client, session)

        async def complete(text: str, offset: int | None = None) -> list[dict]:
            offset = len(text.encode("utf-16-le")) // 2 if offset is None else offset
            result = await client.request("completions", {"channel": session, "kind": "userMessage", "text": text, "offset": offset})
            return result["items"]

        slash = await complete("/sample-toolkit:tr")
        files = await complete("😀 look at @src/a")
        prompts = await complete("/explain")
        git = await complete("@.git")
        nothing = await complete("plain words")
    assert [i["insertText"] for i in slash] == ["/sample-toolkit:triage "]
    assert (slash[0]["rangeStart"], slash[0]["rangeEnd"]) == (0, 18)
    assert slash[0]["attachment"]["type"] == "simple"
    assert [i["insertText"] for i in files] == ["@src/app.py "]
    # The emoji counts two UTF-16 units: "😀 look at " is 11 units, the word "@src/a" 6 more.
    assert (files[0]["rangeStart"], files[0]["rangeEnd"]) == (11, 17)
    assert files[0]["attachment"] == {"type": "resource", "label": "src/app.py", "uri": (workspace / "src" / "app.py").as_uri(),
                                      "displayKind": "document", "sizeHint": 12}
    assert [i["insertText"] for i in prompts] == ["/explain-diff "]
    assert all(".git/" not in i["insertText"] or i["insertText"].startswith("@.github") for i in git)
    assert not any(i["insertText"].startswith("@.git/") or i["insertText"] == "@.git/" for i in git)
    assert nothing == []


async def test_client_published_plugins_are_resolved_from_file_uris_and_unservable_virtual_ones_say_why(
        tmp_path: Path, plugin_dir: Path, workspace: Path, hook_log: Path, frame_checker: FrameChecker) -> None:
    config = config_for(tmp_path, sessions={"default_directory": str(workspace)})
    async with serving(config, frame_checker, [scripted_agent(ScriptedProvider([]))]) as (_, client):
        session = await ready_session(client)
        published = [
            {"type": "plugin", "id": "mine", "uri": (plugin_dir / "sample-degraded").as_uri(), "name": "mine",
             "enabled": True, "nonce": "1"},
            {"type": "plugin", "id": "far", "uri": "virtual://editor/plugins/far", "name": "far", "enabled": True},
        ]
        client.dispatch(session, {"type": "session/activeClientChanged", "activeClient": {
            "clientId": client.client_id, "tools": [], "customizations": published}})
        # "far" is fetched from the client, which serves no resource* requests: it ends in error.
        await client.wait_for(lambda m, e: {"mine", "far"} <= set(by_id(client, session))
                              and by_id(client, session)["far"]["load"]["kind"] != "loading", timeout=20)
        found = by_id(client, session)
        client.dispatch(session, {"type": "session/activeClientChanged", "activeClient": None})
        await client.wait_for(lambda m, e: not ({"mine", "far"} & set(by_id(client, session))), timeout=20)
    assert found["mine"]["clientId"] == client.client_id
    assert found["mine"]["load"]["kind"] == "degraded"
    assert sorted(c["type"] for c in found["mine"]["children"]) == ["mcpServer", "rule", "skill"]
    assert found["far"]["load"]["kind"] == "error"
    assert "virtual://" in found["far"]["load"]["message"]
