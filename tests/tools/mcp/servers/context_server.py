"""Test MCP server (stdio) with what Claude Code users use besides tools, built with the SDK's
`MCPServer`.

* Prompts: `review(code, focus="bugs")` (one user message), `greet()` (no arguments),
  `conversation(topic)` (a user and an assistant message, an embedded text resource and an
  image), `broken()` (raises: the server answers with an error).
* Resources: `notes://readme` (text), `notes://logo` (a PNG), `notes://big` (300 KiB of text),
  and the template `notes://items/{item}`.
* Tools: `roots()` asks the client for its roots (`roots/list`) and returns their URIs, one a line;
  `roots_changes()` how many `notifications/roots/list_changed` it received;
  `chatter(count)` sends `count` log messages (`notifications/message`, level info, logger
  "chatter") and writes as many lines on stderr; `add_note(name)` adds the resource
  `notes://extra/<name>` and sends `resources/list_changed`; `add_prompt(name)` adds a prompt and
  sends `prompts/list_changed`; `long_job()` is declared with
  `execution.taskSupport: "required"` (a host without MCP tasks must not offer it).
* At start it writes "context-server: starting" on stderr.

Usage: context_server.py  (stdio only)
"""

from __future__ import annotations

import base64
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import AssistantMessage, Prompt, UserMessage
from mcp.server.mcpserver.resources import TextResource
from mcp_types import EmbeddedResource, ImageContent, NotificationParams, TextResourceContents, ToolExecution

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")


class ContextServer(MCPServer):
    async def list_tools(self):  # type: ignore[override]  # unannotated: the SDK's return type is kept
        tools = await super().list_tools()
        for tool in tools:
            if tool.name == "long_job":
                tool.execution = ToolExecution(task_support="required")
        return tools


server = ContextServer("context-server")
ROOTS_CHANGES = [0]


async def _roots_changed(ctx, params) -> None:
    ROOTS_CHANGES[0] += 1


server._lowlevel_server.add_notification_handler("notifications/roots/list_changed", NotificationParams, _roots_changed)


@server.prompt(description="Review a piece of code")
def review(code: str, focus: str = "bugs") -> str:
    return f"Please review this code, looking for {focus}:\n{code}"


@server.prompt(description="Say hello")
def greet() -> str:
    return "Hello from the context server prompt."


@server.prompt(description="A conversation about a topic")
def conversation(topic: str) -> list:
    return [
        UserMessage(f"Let us talk about {topic}."),
        AssistantMessage("Gladly. What would you like to know?"),
        UserMessage(EmbeddedResource(type="resource", resource=TextResourceContents(
            uri="notes://readme", mime_type="text/plain", text="The readme says hi."))),
        UserMessage(ImageContent(type="image", data=base64.b64encode(PNG).decode(), mime_type="image/png")),
    ]


@server.prompt(description="Always fails")
def broken() -> str:
    raise RuntimeError("this prompt is broken on purpose")


@server.resource("notes://readme", name="readme", description="The project readme", mime_type="text/plain")
def readme() -> str:
    return "README: the context server keeps notes."


@server.resource("notes://logo", name="logo", mime_type="image/png")
def logo() -> bytes:
    return PNG


@server.resource("notes://big", name="big", mime_type="text/plain")
def big() -> str:
    return "x" * (300 * 1024)


@server.resource("notes://items/{item}", name="item", description="One item by name")
def item(item: str) -> str:
    return f"item {item}"


@server.tool()
async def roots(ctx: Context) -> str:
    """The client's roots, one URI a line."""
    result = await ctx.session.list_roots()
    return "\n".join(str(root.uri) for root in result.roots) or "(no roots)"


@server.tool()
def roots_changes() -> str:
    """How many notifications/roots/list_changed the client sent."""
    return str(ROOTS_CHANGES[0])


@server.tool()
async def chatter(count: int, ctx: Context) -> str:
    """Log `count` messages and write as many stderr lines."""
    for index in range(1, count + 1):
        await ctx.info(f"chatter message {index}", logger_name="chatter")
        sys.stderr.write(f"chatter stderr {index}\n")
        sys.stderr.flush()
    return f"chattered {count} times"


@server.tool()
async def add_note(name: str, ctx: Context) -> str:
    """Add the resource notes://extra/<name> and announce the new list."""
    server.add_resource(TextResource(uri=f"notes://extra/{name}", name=name, text=f"note {name}"))
    await ctx.session.send_resource_list_changed()
    return f"added {name}"


@server.tool()
async def add_prompt(name: str, ctx: Context) -> str:
    """Add a prompt called `name` and announce the new list."""
    def text() -> str:
        return f"the {name} prompt"

    server.add_prompt(Prompt.from_function(text, name=name, description=f"Added {name}"))
    await ctx.session.send_prompt_list_changed()
    return f"added {name}"


@server.tool()
def long_job() -> str:
    """A job that must run as an MCP task."""
    return "done"


if __name__ == "__main__":
    sys.stderr.write("context-server: starting\n")
    sys.stderr.flush()
    server.run("stdio")
