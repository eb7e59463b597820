"""MCP tool results and progress, translated to AHP wire shapes.

Contract:
* `tool_call_result(result, past_tense)` turns an MCP `CallToolResult` into an AHP
  `ToolCallResult` dict: text stays text; images and audio become `embeddedResource`
  (`data` base64, `contentType` the MIME type); an embedded text resource becomes text,
  an embedded blob becomes `embeddedResource`; a resource link becomes a `resource`
  reference. An object `structuredContent` is passed through (a non-object one is wrapped
  as `{"result": value}`, since AHP requires an object). `isError` gives
  `success: false` with `error.message` taken from the text content.
* `progress_content(progress, total, message)` is the one text item shown while a call
  runs (it replaces the previous one, as `toolCallContentChanged` does).
* Output is AHP wire shape: camelCase keys, absent values omitted, never None.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from ..base import failure_result, success_result
from ..content import text_content

__all__ = ["tool_call_result", "content_item", "progress_content"]

_DEFAULT_BINARY = "application/octet-stream"


def content_item(block: Any) -> dict | None:
    """One AHP `ToolResultContent` item for an MCP content block (None if unrepresentable)."""
    if isinstance(block, types.TextContent):
        return text_content(block.text)
    if isinstance(block, (types.ImageContent, types.AudioContent)):
        return {"type": "embeddedResource", "data": block.data, "contentType": block.mime_type or _DEFAULT_BINARY}
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, types.TextResourceContents):
            return text_content(resource.text)
        return {"type": "embeddedResource", "data": resource.blob, "contentType": resource.mime_type or _DEFAULT_BINARY}
    if isinstance(block, types.ResourceLink):
        item: dict[str, Any] = {"type": "resource", "uri": str(block.uri)}
        if block.size is not None:
            item["sizeHint"] = block.size
        if block.mime_type:
            item["contentType"] = block.mime_type
        return item
    return None


def tool_call_result(result: types.CallToolResult, past_tense: str) -> dict:
    """The AHP `ToolCallResult` for an MCP `CallToolResult`."""
    content = [item for item in (content_item(block) for block in result.content) if item is not None]
    structured = result.structured_content
    if structured is not None and not isinstance(structured, dict):
        structured = {"result": structured}
    if result.is_error:
        texts = [item["text"] for item in content if item["type"] == "text" and item["text"].strip()]
        message = "\n".join(texts) or "The MCP tool reported an error without a message."
        return failure_result(past_tense, message, "mcp_tool_error", content=content or None, structured=structured)
    return success_result(past_tense, content, structured)


def progress_content(progress: float, total: float | None, message: str | None) -> list[dict]:
    """The partial content shown for a progress notification."""
    label = message.strip() if message and message.strip() else "Working"
    amount = f"{progress:g}/{total:g}" if total else f"{progress:g}"
    return [text_content(f"{label} ({amount})")]
