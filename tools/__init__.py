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
