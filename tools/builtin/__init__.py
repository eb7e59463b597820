"""The built-in tools the host offers every session.

`builtin_tools()` returns fresh instances of all of them with default limits; construct
the classes directly to change limits (timeouts, output caps, the shell to use).
"""

from __future__ import annotations

from ..base import Tool
from .ask_user import QUESTION_KINDS, AskUserTool
from .edit_file import EditFileTool
from .glob import GlobTool
from .grep import GrepTool
from .list_dir import ListDirTool
from .read_file import ReadFileTool
from .shell import ShellTool
from .write_file import WriteFileTool

__all__ = [
    "builtin_tools",
    "AskUserTool",
    "EditFileTool",
    "GlobTool",
    "GrepTool",
    "ListDirTool",
    "ReadFileTool",
    "ShellTool",
    "WriteFileTool",
    "QUESTION_KINDS",
]


def builtin_tools() -> list[Tool]:
    """One instance of every built-in tool, in the order they are offered to models."""
    return [
        ReadFileTool(),
        ListDirTool(),
        GlobTool(),
        GrepTool(),
        EditFileTool(),
        WriteFileTool(),
        ShellTool(),
        AskUserTool(),
    ]
