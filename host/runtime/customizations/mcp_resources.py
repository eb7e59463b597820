"""MCP resources in a session: ``@server:uri`` mentions and the model's two resource tools.

Contract:
- ``mentions(text, servers)`` finds ``@server:uri`` words (Claude Code's form, e.g.
  ``@docs:file:///guide.md``) whose ``server`` is one of ``servers``, in order, each once, at
  most ``MENTION_LIMIT``; trailing punctuation is not part of the URI.
- ``resource_attachments(result, label)`` turns a ``resources/read`` result into message
  attachments the conversation layer already understands (``embeddedResource``: text as UTF-8,
  blobs as they came, images reaching vision models) plus notes for the user. Text is cut at
  ``RESOURCE_TEXT_LIMIT`` characters and a blob over ``RESOURCE_BLOB_LIMIT`` bytes is left out,
  each with a note saying so.
- ``ListMcpResourcesTool`` (``list_mcp_resources``) and ``ReadMcpResourceTool``
  (``read_mcp_resource``) are Claude Code's ``ListMcpResourcesTool`` / ``ReadMcpResourceTool``:
  the first lists the resources and resource templates of the session's servers (optionally of one
  server), the second reads one resource by server and URI. Both are read-only; their output is
  bounded like mentions (a listing at ``LIST_LIMIT`` entries). A server that is unknown, not
  running or refuses gives a failed result saying so, never an exception.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tools.base import Tool, ToolContext, failure_result, success_result
from tools.content import text_content
from tools.mcp.errors import McpRequestError

if TYPE_CHECKING:
    from tools.mcp import McpServerConnection

__all__ = [
    "ListMcpResourcesTool", "ReadMcpResourceTool", "mentions", "resource_attachments",
    "LIST_RESOURCES_TOOL", "READ_RESOURCE_TOOL", "RESOURCE_TEXT_LIMIT", "RESOURCE_BLOB_LIMIT", "MENTION_LIMIT",
]

LIST_RESOURCES_TOOL = "list_mcp_resources"
READ_RESOURCE_TOOL = "read_mcp_resource"
RESOURCE_TEXT_LIMIT = 256 * 1024
"""Characters of one resource's text given to the model at most."""
RESOURCE_BLOB_LIMIT = 5 * 1024 * 1024
"""Bytes of one binary resource (an image) given to the model at most."""
MENTION_LIMIT = 10
LIST_LIMIT = 500

_MENTION = re.compile(r"(?:(?<=\s)|^)@([A-Za-z0-9_.-]+):(\S+)")


def mentions(text: str, servers: set[str] | frozenset[str]) -> list[tuple[str, str]]:
    """``(server, uri)`` for each ``@server:uri`` naming one of ``servers`` (see the contract)."""
    found: list[tuple[str, str]] = []
    if "@" not in text:
        return found
    for match in _MENTION.finditer(text):
        server, uri = match.group(1), match.group(2).rstrip(".,;!?)]}'\"")
        if server in servers and uri and (server, uri) not in found:
            found.append((server, uri))
            if len(found) >= MENTION_LIMIT:
                break
    return found


def _blob_size(data: str) -> int:
    return len(data) * 3 // 4


def resource_attachments(result: Any, label: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Attachments and user notes for a ``ReadResourceResult`` (see the module contract)."""
    attachments: list[dict[str, Any]] = []
    notes: list[str] = []
    for contents in result.contents:
        name = label if len(result.contents) == 1 else f"{label} ({contents.uri})"
        mime = getattr(contents, "mime_type", None)
        text = getattr(contents, "text", None)
        if text is not None:
            if len(text) > RESOURCE_TEXT_LIMIT:
                text = text[:RESOURCE_TEXT_LIMIT]
                notes.append(f"Only the first {RESOURCE_TEXT_LIMIT // 1024} KiB of {name} were sent to the model.")
            attachments.append({"type": "embeddedResource", "label": name, "contentType": mime or "text/plain",
                                "data": base64.b64encode(text.encode("utf-8")).decode("ascii"), "displayKind": "document"})
            continue
        blob = str(getattr(contents, "blob", "") or "")
        if _blob_size(blob) > RESOURCE_BLOB_LIMIT:
            notes.append(f"{name} was not sent to the model: it is larger than {RESOURCE_BLOB_LIMIT // (1024 * 1024)} MiB.")
            continue
        attachments.append({"type": "embeddedResource", "label": name, "contentType": mime or "application/octet-stream",
                            "data": blob, **({"displayKind": "image"} if (mime or "").startswith("image/") else {})})
    if not result.contents:
        notes.append(f"{label} is empty.")
    return attachments, notes


Servers = Callable[[], "dict[str, McpServerConnection]"]
"""The session's running servers that have resources or resource templates, by name."""


class ListMcpResourcesTool(Tool):
    """Lists the resources of the session's MCP servers."""

    name = LIST_RESOURCES_TOOL
    title = "List MCP resources"
    description = (
        "List the resources (and resource templates) that the session's MCP servers offer: each with its server, URI, "
        f"name, description and MIME type. Read one with {READ_RESOURCE_TOOL}. Pass `server` to list only that server's.")
    input_schema = {"type": "object", "properties": {"server": {"type": "string", "description": "Only this MCP server's resources."}},
                    "additionalProperties": False}
    annotations = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": True}

    def __init__(self, servers: Servers) -> None:
        self._servers = servers

    def describe(self, args: dict) -> str:
        server = args.get("server") if isinstance(args, dict) else None
        return f"List the resources of the MCP server {server}" if server else "List the MCP servers' resources"

    def past_tense(self, args: dict) -> str:
        server = args.get("server") if isinstance(args, dict) else None
        return f"Listed the resources of the MCP server {server}" if server else "Listed the MCP servers' resources"

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        servers = self._servers()
        wanted = args.get("server") if isinstance(args, dict) else None
        if wanted is not None and wanted not in servers:
            return failure_result(self.past_tense(args), _unknown(wanted, servers), "mcp_unknown_server")
        listing: list[dict[str, Any]] = []
        for name, connection in servers.items():
            if wanted is not None and name != wanted:
                continue
            for resource in connection.resources:
                listing.append({"server": name, "uri": str(resource.uri), "name": resource.name,
                                **_optional(title=resource.title, description=resource.description, mimeType=resource.mime_type)})
            for template in connection.resource_templates:
                listing.append({"server": name, "uriTemplate": template.uri_template, "name": template.name,
                                **_optional(title=template.title, description=template.description, mimeType=template.mime_type)})
        cut = len(listing) > LIST_LIMIT
        text = json.dumps(listing[:LIST_LIMIT], ensure_ascii=False, indent=1)
        if cut:
            text += f"\n(only the first {LIST_LIMIT} of {len(listing)} are listed; pass `server` to narrow it)"
        if not listing:
            text = "No MCP server of this session offers resources right now."
        return success_result(self.past_tense(args), [text_content(text)])


class ReadMcpResourceTool(Tool):
    """Reads one resource of one of the session's MCP servers."""

    name = READ_RESOURCE_TOOL
    title = "Read MCP resource"
    description = (f"Read a resource of one of the session's MCP servers by its server name and URI (see {LIST_RESOURCES_TOOL}; "
                   "a URI may also fill in one of a server's resource templates).")
    input_schema = {"type": "object", "properties": {
        "server": {"type": "string", "description": "The MCP server's name."},
        "uri": {"type": "string", "description": "The resource URI."}}, "required": ["server", "uri"], "additionalProperties": False}
    annotations = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": True}

    def __init__(self, servers: Servers) -> None:
        self._servers = servers

    def describe(self, args: dict) -> str:
        return f"Read {args.get('uri')} from the MCP server {args.get('server')}"

    def past_tense(self, args: dict) -> str:
        return f"Read {args.get('uri')} from the MCP server {args.get('server')}"

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        servers = self._servers()
        server, uri = str(args.get("server")), str(args.get("uri"))
        connection = servers.get(server)
        if connection is None:
            return failure_result(self.past_tense(args), _unknown(server, servers), "mcp_unknown_server")
        try:
            result = await connection.read_resource(uri)
        except McpRequestError as error:
            return failure_result(self.past_tense(args), str(error), "mcp_error")
        content: list[dict[str, Any]] = []
        attachments, notes = resource_attachments(result, f"{server}:{uri}")
        for attachment in attachments:
            if attachment["contentType"].startswith("image/") or not attachment.get("displayKind") == "document":
                content.append({"type": "embeddedResource", "data": attachment["data"], "contentType": attachment["contentType"]})
                continue
            try:
                text = base64.b64decode(attachment["data"]).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                continue
            content.append(text_content(text if len(attachments) == 1 else f"[{attachment['label']}]\n{text}"))
        content.extend(text_content(f"[{note}]") for note in notes)
        return success_result(self.past_tense(args), content)


def _optional(**values: Any) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value}


def _unknown(server: str, servers: dict[str, Any]) -> str:
    known = ", ".join(sorted(servers)) or "none"
    return f"No running MCP server {server!r} of this session has resources (servers with resources: {known})."
