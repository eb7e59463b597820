"""An MCP tool's definition: name, title, schema and annotations as the policy sees them."""

from __future__ import annotations

import mcp_types as types

from tools.mcp import McpServerSpec, McpTool, annotation_hints
from tools.mcp.connection import McpServerConnection
from tools.policy import PolicyState, decide


def _tool(**fields) -> types.Tool:
    return types.Tool(name="read_issue", inputSchema={"type": "object", "properties": {"n": {"type": "integer"}}}, **fields)


def _connection() -> McpServerConnection:
    return McpServerConnection(McpServerSpec(name="github", transport="stdio", command="gh-mcp"))


def test_all_four_hints_map_and_unset_ones_stay_unset() -> None:
    full = types.ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)
    assert annotation_hints(full) == {"readOnlyHint": True, "destructiveHint": False,
                                      "idempotentHint": True, "openWorldHint": False}
    assert annotation_hints(types.ToolAnnotations(destructiveHint=True)) == {"destructiveHint": True}
    assert annotation_hints(None) == {}


def test_definition_uses_namespaced_name_title_and_server_schema() -> None:
    tool = McpTool(_connection(), _tool(title="Read issue", description="Reads one issue.",
                                        annotations=types.ToolAnnotations(readOnlyHint=True)), "mcp__github__read_issue")
    assert tool.definition() == {
        "name": "mcp__github__read_issue",
        "title": "Read issue",
        "description": "Reads one issue.",
        "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        "annotations": {"title": "Read issue", "readOnlyHint": True},
        "_meta": {"mcpServer": "github", "mcpTool": "read_issue"},
    }
    assert tool.confirmation_title({}) == "Allow the github MCP server to run Read issue?"


def test_title_falls_back_to_annotation_title_then_name() -> None:
    assert McpTool(_connection(), _tool(annotations=types.ToolAnnotations(title="Issue")), "n").title == "Issue"
    assert McpTool(_connection(), _tool(), "n").title == "read_issue"


def test_read_only_tools_are_auto_approved_and_others_ask() -> None:
    reader = McpTool(_connection(), _tool(annotations=types.ToolAnnotations(readOnlyHint=True)), "mcp__github__r")
    writer = McpTool(_connection(), _tool(annotations=types.ToolAnnotations(destructiveHint=True)), "mcp__github__w")
    assert decide(reader, {}, PolicyState()).outcome == "allow"
    assert decide(writer, {}, PolicyState()).outcome == "ask"
