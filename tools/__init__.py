"""Tools the agent host can run: one interface, built-in tools, the sandbox and the policy.

Public surface:
* `Tool`, `ToolContext`, `Preparation`, `success_result`, `failure_result` (tools.base)
* `ContentStore`, `InMemoryContentStore`, `DataUriContentStore`, `file_edit`,
  `file_edit_content`, `diff_stats`, `text_content` (tools.content)
* `resolve_path`, `allowed_roots` (tools.sandbox)
* `PolicyState`, `Rule`, `parse_rule`, `Decision`, `decide`, `confirmation_options`,
  `apply_option`, `OptionEffect` (tools.policy)
* `builtin_tools` and the tool classes (tools.builtin)
* the exception tree rooted at `ToolsError` (tools.errors)
"""

from typing import TYPE_CHECKING

from ahp.lazy import lazy_exports

# The names are loaded on first use (PEP 562), as in ``tools.mcp``: importing ``tools.base`` (every
# tool's interface) must not import the built-in tools, the shell parser and pathspec at start-up.
_WHERE = {
    "Preparation": "base",
    "Tool": "base",
    "ToolContext": "base",
    "failure_result": "base",
    "success_result": "base",
    "AskUserTool": "builtin",
    "EditFileTool": "builtin",
    "GlobTool": "builtin",
    "GrepTool": "builtin",
    "ListDirTool": "builtin",
    "ReadFileTool": "builtin",
    "ShellTool": "builtin",
    "WriteFileTool": "builtin",
    "builtin_tools": "builtin",
    "ContentStore": "content",
    "DataUriContentStore": "content",
    "InMemoryContentStore": "content",
    "diff_stats": "content",
    "file_edit": "content",
    "file_edit_content": "content",
    "text_content": "content",
    "PolicyRuleError": "errors",
    "SandboxError": "errors",
    "ToolFailure": "errors",
    "ToolInputError": "errors",
    "ToolsError": "errors",
    "Decision": "policy",
    "OptionEffect": "policy",
    "PolicyState": "policy",
    "Rule": "policy",
    "apply_option": "policy",
    "confirmation_options": "policy",
    "decide": "policy",
    "parse_rule": "policy",
    "session_prefixes": "policy",
    "allowed_roots": "sandbox",
    "resolve_path": "sandbox",
}

if TYPE_CHECKING:
    from .base import Preparation, Tool, ToolContext, failure_result, success_result
    from .builtin import (
        AskUserTool,
        EditFileTool,
        GlobTool,
        GrepTool,
        ListDirTool,
        ReadFileTool,
        ShellTool,
        WriteFileTool,
        builtin_tools,
    )
    from .content import (
        ContentStore,
        DataUriContentStore,
        InMemoryContentStore,
        diff_stats,
        file_edit,
        file_edit_content,
        text_content,
    )
    from .errors import PolicyRuleError, SandboxError, ToolFailure, ToolInputError, ToolsError
    from .policy import (
        Decision,
        OptionEffect,
        PolicyState,
        Rule,
        apply_option,
        confirmation_options,
        decide,
        parse_rule,
        session_prefixes,
    )
    from .sandbox import allowed_roots, resolve_path


__getattr__ = lazy_exports(__name__, _WHERE)


__all__ = [
    "Tool",
    "ToolContext",
    "Preparation",
    "success_result",
    "failure_result",
    "ContentStore",
    "InMemoryContentStore",
    "DataUriContentStore",
    "diff_stats",
    "file_edit",
    "file_edit_content",
    "text_content",
    "resolve_path",
    "allowed_roots",
    "PolicyState",
    "Rule",
    "parse_rule",
    "Decision",
    "decide",
    "confirmation_options",
    "apply_option",
    "OptionEffect",
    "session_prefixes",
    "builtin_tools",
    "AskUserTool",
    "EditFileTool",
    "GlobTool",
    "GrepTool",
    "ListDirTool",
    "ReadFileTool",
    "ShellTool",
    "WriteFileTool",
    "ToolsError",
    "ToolInputError",
    "SandboxError",
    "ToolFailure",
    "PolicyRuleError",
]
