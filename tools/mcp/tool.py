"""An MCP server's tool as a `tools.base.Tool`.

Contract: `McpTool(connection, mcp_tool, name)` offers one tool of one server under the
namespaced `name` (see `tools.mcp.naming`). Its `title` is the MCP title (or the
annotations' title, or the MCP name), its `description` and `input_schema` are the
server's, and the MCP annotations map one to one onto the AHP hints (`readOnlyHint`,
`destructiveHint`, `idempotentHint`, `openWorldHint`); hints the server leaves unset
stay unset, so the protocol defaults (destructive, open-world) apply in the policy.
`call` goes through the connection, so it inherits its guarantees: always a
`ToolCallResult`, progress streamed through `ctx`, elicitation through `ctx.ask`. A tool not
marked read-only runs between two snapshots of the working directory
(`tools.file_changes.reporting_changes`): the files it changed come back as `fileEdit` items.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from ..base import Tool, ToolContext
from ..file_changes import reporting_changes
from .connection import McpServerConnection

__all__ = ["McpTool", "annotation_hints"]

_HINTS = (
    ("read_only_hint", "readOnlyHint"),
    ("destructive_hint", "destructiveHint"),
    ("idempotent_hint", "idempotentHint"),
    ("open_world_hint", "openWorldHint"),
)


def annotation_hints(annotations: types.ToolAnnotations | None) -> dict[str, bool]:
    """The AHP `ToolAnnotations` hints for MCP annotations (unset hints omitted)."""
    if annotations is None:
        return {}
    return {wire: value for attr, wire in _HINTS if (value := getattr(annotations, attr)) is not None}


class McpTool(Tool):
    """A tool that runs on an MCP server."""

    def __init__(self, connection: McpServerConnection, mcp_tool: types.Tool, name: str) -> None:
        self.connection = connection
        self.server_name = connection.name
        self.mcp_name = mcp_tool.name
        self.name = name
        annotation_title = mcp_tool.annotations.title if mcp_tool.annotations else None
        self.title = mcp_tool.title or annotation_title or mcp_tool.name
        self.description = mcp_tool.description or f"Tool '{mcp_tool.name}' of the MCP server '{connection.name}'."
        schema = dict(mcp_tool.input_schema or {})
        schema.setdefault("type", "object")
        self.input_schema = schema
        self.output_schema = mcp_tool.output_schema
        self.annotations = annotation_hints(mcp_tool.annotations)
        self.contributor: dict[str, Any] | None = None
        """The ``ToolCallContributor`` the host names for the server's customization, if any."""

    def definition(self) -> dict:
        definition = super().definition()
        if self.output_schema:
            definition["outputSchema"] = self.output_schema
        definition["_meta"] = {"mcpServer": self.server_name, "mcpTool": self.mcp_name}
        return definition

    def describe(self, args: dict) -> str:
        return f"Run {self.title} ({self.server_name} MCP server)"

    def past_tense(self, args: dict) -> str:
        return f"Ran {self.title} ({self.server_name} MCP server)"

    def confirmation_title(self, args: dict) -> str | None:
        return f"Allow the {self.server_name} MCP server to run {self.title}?"

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        arguments: dict[str, Any] = dict(args) if isinstance(args, dict) else {}
        if self.annotations.get("readOnlyHint"):
            return await self.connection.call(self.mcp_name, arguments, ctx, self.past_tense(arguments))
        # A server may write files in the project; what it changed is reported like an edit.
        return await reporting_changes(ctx, lambda: self.connection.call(self.mcp_name, arguments, ctx, self.past_tense(arguments)))

    def __repr__(self) -> str:
        return f"McpTool({self.name!r} -> {self.server_name}/{self.mcp_name})"
