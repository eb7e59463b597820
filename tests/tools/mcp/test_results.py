"""MCP CallToolResult → AHP ToolCallResult, and progress as partial content."""

from __future__ import annotations

import mcp_types as types

from tools.mcp import progress_content, tool_call_result


def _result(*content, structured=None, is_error=False) -> types.CallToolResult:
    return types.CallToolResult(content=list(content), structuredContent=structured, isError=is_error)


def test_text_image_audio_blob_text_resource_and_link_map_to_ahp_content() -> None:
    result = tool_call_result(_result(
        types.TextContent(type="text", text="caption"),
        types.ImageContent(type="image", data="aW1n", mimeType="image/png"),
        types.AudioContent(type="audio", data="YXU=", mimeType="audio/wav"),
        types.EmbeddedResource(type="resource", resource=types.BlobResourceContents(uri="mem://b", blob="YmxvYg==")),
        types.EmbeddedResource(type="resource", resource=types.TextResourceContents(uri="mem://t", text="inline")),
        types.ResourceLink(type="resource_link", name="r", uri="file:///r.md", mimeType="text/markdown", size=12),
    ), "Ran it")
    assert result == {
        "success": True,
        "pastTenseMessage": "Ran it",
        "content": [
            {"type": "text", "text": "caption"},
            {"type": "embeddedResource", "data": "aW1n", "contentType": "image/png"},
            {"type": "embeddedResource", "data": "YXU=", "contentType": "audio/wav"},
            {"type": "embeddedResource", "data": "YmxvYg==", "contentType": "application/octet-stream"},
            {"type": "text", "text": "inline"},
            {"type": "resource", "uri": "file:///r.md", "sizeHint": 12, "contentType": "text/markdown"},
        ],
    }


def test_structured_content_passes_through_and_non_objects_are_wrapped() -> None:
    assert tool_call_result(_result(structured={"n": 1}), "x")["structuredContent"] == {"n": 1}
    assert tool_call_result(_result(structured=[1, 2]), "x")["structuredContent"] == {"result": [1, 2]}


def test_is_error_is_a_failure_whose_message_is_the_servers_text() -> None:
    result = tool_call_result(_result(types.TextContent(type="text", text="no such repo"), is_error=True), "Ran it")
    assert result["success"] is False
    assert result["error"] == {"message": "no such repo", "code": "mcp_tool_error"}
    assert result["content"] == [{"type": "text", "text": "no such repo"}]


def test_is_error_without_text_still_explains_itself() -> None:
    result = tool_call_result(_result(is_error=True), "Ran it")
    assert result["error"]["message"] == "The MCP tool reported an error without a message."


def test_progress_shows_message_and_amount() -> None:
    assert progress_content(2, 5, "copying") == [{"type": "text", "text": "copying (2/5)"}]
    assert progress_content(0.5, None, None) == [{"type": "text", "text": "Working (0.5)"}]
