"""What an MCP server offers besides tools, through one connection to a real server process:
prompts and resources listed and fetched, resources re-listed on ``resources/list_changed``,
roots answered and announced, log messages and stderr kept (bounded), and a tool that requires
MCP tasks not offered, with the reason in the status."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tools.base import ToolContext
from tools.mcp import McpServerConnection
from tools.mcp.connection import TASKS_REQUIRED
from tools.mcp.errors import McpRequestError
from tools.mcp.logs import LOG_LIMIT, TEXT_LIMIT, ServerLog

from .conftest import FAST, context_server


async def started(connection: McpServerConnection) -> McpServerConnection:
    connection.start()
    status = await connection.wait_ready(timeout=30)
    assert status.state == "running", status
    return connection


async def test_prompts_and_resources_are_listed_and_fetched(tmp_path: Path) -> None:
    connection = await started(McpServerConnection(context_server(), policy=FAST))
    try:
        prompts = {p.name: p for p in connection.prompts}
        assert set(prompts) == {"review", "greet", "conversation", "broken"}
        assert [(a.name, a.required) for a in prompts["review"].arguments] == [("code", True), ("focus", False)]
        assert {str(r.uri) for r in connection.resources} == {"notes://readme", "notes://logo", "notes://big"}
        assert [t.uri_template for t in connection.resource_templates] == ["notes://items/{item}"]

        result = await connection.get_prompt("review", {"code": "x = 1", "focus": "style"})
        assert result.messages[0].content.text == "Please review this code, looking for style:\nx = 1"
        readme = await connection.read_resource("notes://readme")
        assert readme.contents[0].text == "README: the context server keeps notes."
        templated = await connection.read_resource("notes://items/apple")
        assert templated.contents[0].text == "item apple"

        with pytest.raises(McpRequestError) as refused:
            await connection.get_prompt("broken")
        assert str(refused.value).startswith("The MCP server 'notes' refused the prompt 'broken':")
        with pytest.raises(McpRequestError) as unknown:
            await connection.read_resource("notes://nothing")
        assert "refused the resource notes://nothing" in str(unknown.value)
        # The connection is still usable after the refusals.
        assert (await connection.get_prompt("greet")).messages[0].content.text == "Hello from the context server prompt."
    finally:
        await connection.stop()


async def test_a_request_to_a_stopped_server_fails_with_a_sentence() -> None:
    connection = await started(McpServerConnection(context_server(), policy=FAST))
    await connection.stop()
    with pytest.raises(McpRequestError, match="The MCP server 'notes' is not running"):
        await connection.read_resource("notes://readme")


async def test_a_changed_resource_list_is_listed_again(tmp_path: Path) -> None:
    changed = asyncio.Event()
    connection = await started(McpServerConnection(context_server(), policy=FAST, on_catalog_changed=lambda c: changed.set()))
    try:
        changed.clear()
        result = await connection.call("add_note", {"name": "late"}, ToolContext(working_directory=tmp_path), "added")
        assert result["success"] is True
        await asyncio.wait_for(changed.wait(), 10)
        assert "notes://extra/late" in {str(r.uri) for r in connection.resources}
    finally:
        await connection.stop()


async def test_roots_are_the_given_folders_and_a_change_is_announced(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two words"
    first.mkdir()
    second.mkdir()
    folders = [first]
    connection = await started(McpServerConnection(context_server(), policy=FAST, roots=lambda: folders))
    ctx = ToolContext(working_directory=tmp_path)
    try:
        listed = await connection.call("roots", {}, ctx, "listed")
        assert listed["content"][0]["text"] == first.as_uri()
        assert (await connection.call("roots_changes", {}, ctx, "counted"))["content"][0]["text"] == "0"
        folders.append(second)
        connection.roots_changed()
        # Notifications and calls go out in order on one connection: the count is seen next.
        changes = await connection.call("roots_changes", {}, ctx, "counted")
        assert changes["content"][0]["text"] == "1"
        listed = await connection.call("roots", {}, ctx, "listed")
        assert listed["content"][0]["text"].splitlines() == [first.as_uri(), second.as_uri()]
    finally:
        await connection.stop()


async def test_without_roots_the_client_announces_none_and_the_servers_question_fails_as_a_result(tmp_path: Path) -> None:
    connection = await started(McpServerConnection(context_server(), policy=FAST))
    try:
        listed = await connection.call("roots", {}, ToolContext(working_directory=tmp_path), "listed")
        assert listed["success"] is False
    finally:
        await connection.stop()


async def test_log_messages_and_stderr_are_kept_and_reported(tmp_path: Path) -> None:
    all_stderr = asyncio.Event()

    def logged(connection: McpServerConnection) -> None:
        if sum(entry.text.startswith("chatter stderr") for entry in connection.log.entries()) == 3:
            all_stderr.set()

    connection = await started(McpServerConnection(context_server(), policy=FAST, on_log=logged))
    try:
        result = await connection.call("chatter", {"count": 3}, ToolContext(working_directory=tmp_path), "chattered")
        assert result["success"] is True
        await asyncio.wait_for(all_stderr.wait(), 10)  # stderr comes on its own pipe, maybe after the result
        lines = [entry.line() for entry in connection.log.entries()]
        assert "[stderr] context-server: starting" in lines
        assert [line for line in lines if line.startswith("[info]")] == [f"[info] chatter: chatter message {i}" for i in (1, 2, 3)]
        assert [line for line in lines if line.startswith("[stderr] chatter")] == [f"[stderr] chatter stderr {i}" for i in (1, 2, 3)]
    finally:
        await connection.stop()


def test_the_log_is_bounded_in_entries_and_text() -> None:
    log = ServerLog()
    for index in range(LOG_LIMIT + 50):
        log.add_stderr(f"line {index}")
    log.add_stderr("y" * (TEXT_LIMIT * 3))
    log.add_stderr("   ")
    entries = log.entries()
    assert len(entries) == LOG_LIMIT
    assert entries[0].text == "line 51"
    assert len(entries[-1].text) == TEXT_LIMIT


async def test_a_tool_that_requires_tasks_is_not_offered_and_the_status_says_why() -> None:
    connection = await started(McpServerConnection(context_server(), policy=FAST))
    try:
        names = {tool.name for tool in connection.tools}
        assert "long_job" not in names and {"roots", "chatter", "add_note"} <= names
        assert connection.status.not_offered == (("long_job", TASKS_REQUIRED),)
        assert "long_job" not in connection.status.tool_names
    finally:
        await connection.stop()
