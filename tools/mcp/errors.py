"""Exceptions raised by `tools.mcp`.

Contract: configuration problems are the only exceptions a host sees from this package
(`McpConfigError`, raised while reading server specs; its message names the source, the
key and the bad value). Everything that goes wrong while a server runs becomes a server
status (`ServerStatus.message`) or a tool result with `success: false`, never an
exception from `McpTool.call`. Prompt and resource requests (`McpServerConnection.get_prompt`,
`read_resource`) raise `McpRequestError`, whose message says which server and what went wrong.

    McpError                    root of everything raised in tools/mcp
     ├── McpConfigError         a server declaration is malformed (names source and key)
     ├── McpRequestError        a prompt or resource request failed (the message is for a person)
     └── McpServerGone          internal: the server connection ended under a request
"""

from __future__ import annotations

__all__ = ["McpError", "McpConfigError", "McpRequestError", "McpServerGone"]


class McpError(Exception):
    """Root of the `tools.mcp` exception tree."""


class McpConfigError(McpError, ValueError):
    """A server declaration cannot be used; the message says where and why."""


class McpServerGone(McpError):
    """The connection to a server ended while a request was waiting on it."""


class McpRequestError(McpError):
    """A prompt or resource request to a server failed; the message names the server and the cause."""
