"""MCP servers: specs from config / `.mcp.json` / plugins, one owner task per server,
restarts with backoff, tools under namespaced names, progress, elicitation and
`tools/list_changed` wired to host callbacks; prompts, resources, roots, server logs and
OAuth for remote servers.

Public surface:
* `McpServerSpec`, `merge_specs` (tools.mcp.specs; declarations are parsed by
  `plugins.mcp_servers` and `host.runtime.customizations.mcp_declarations`)
* `McpManager` (tools.mcp.manager): start/stop a set of servers, `tools()`, `statuses()`
* `McpServerConnection`, `ServerStatus`, `ServerState`, `RestartPolicy` (tools.mcp.connection)
* `McpTool`, `annotation_hints` (tools.mcp.tool)
* `namespaced_name`, `allocate_names`, `MAX_TOOL_NAME` (tools.mcp.naming)
* `tool_call_result`, `progress_content` (tools.mcp.results)
* `input_request`, `elicit_result`, `questions_from_schema` (tools.mcp.elicitation)
* `ServerLog`, `LogEntry` (tools.mcp.logs): what a server logged, bounded
* `TokenFile`, `LoopbackCallback`, `oauth_provider` (tools.mcp.oauth): OAuth sign-in
* `McpError`, `McpConfigError`, `McpRequestError` (tools.mcp.errors)
"""

from typing import TYPE_CHECKING

from ahp.lazy import lazy_exports

# The names are loaded on first use (PEP 562): the MCP SDK takes about half a second to import,
# and a host whose sessions use no MCP server should not pay it at start-up.
_WHERE = {
    "McpServerConnection": "connection", "RestartPolicy": "connection", "ServerState": "connection",
    "ServerStatus": "connection",
    "elicit_result": "elicitation", "input_request": "elicitation", "questions_from_schema": "elicitation",
    "McpConfigError": "errors", "McpError": "errors", "McpRequestError": "errors",
    "LogEntry": "logs", "ServerLog": "logs",
    "LoopbackCallback": "oauth", "TokenFile": "oauth", "oauth_provider": "oauth",
    "McpManager": "manager",
    "MAX_TOOL_NAME": "naming", "allocate_names": "naming", "namespaced_name": "naming",
    "progress_content": "results", "tool_call_result": "results",
    "McpServerSpec": "specs", "merge_specs": "specs",
    "McpTool": "tool", "annotation_hints": "tool",
}

if TYPE_CHECKING:
    from .connection import McpServerConnection, RestartPolicy, ServerState, ServerStatus
    from .elicitation import elicit_result, input_request, questions_from_schema
    from .errors import McpConfigError, McpError, McpRequestError
    from .logs import LogEntry, ServerLog
    from .manager import McpManager
    from .naming import MAX_TOOL_NAME, allocate_names, namespaced_name
    from .oauth import LoopbackCallback, TokenFile, oauth_provider
    from .results import progress_content, tool_call_result
    from .specs import McpServerSpec, merge_specs
    from .tool import McpTool, annotation_hints


__getattr__ = lazy_exports(__name__, _WHERE)


__all__ = [
    "McpServerSpec",
    "merge_specs",
    "McpManager",
    "McpServerConnection",
    "ServerStatus",
    "ServerState",
    "RestartPolicy",
    "McpTool",
    "annotation_hints",
    "namespaced_name",
    "allocate_names",
    "MAX_TOOL_NAME",
    "tool_call_result",
    "progress_content",
    "input_request",
    "elicit_result",
    "questions_from_schema",
    "ServerLog",
    "LogEntry",
    "TokenFile",
    "LoopbackCallback",
    "oauth_provider",
    "McpError",
    "McpConfigError",
    "McpRequestError",
]
