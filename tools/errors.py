"""Exceptions raised inside `tools/`.

Contract: none of these ever reaches the host as an exception from `Tool.call`; the
base class turns each into a `ToolCallResult` with `success: false`, the exception's
message as `error.message` and its `code` as `error.code`. Messages are written for
the user and the model: they name the offending argument or path and never contain a
traceback. `PolicyRuleError` is the exception a host sees directly, when it loads a
malformed rule string from configuration.

    ToolsError                     root of everything raised in tools/
     ├── ToolInputError            arguments do not match the tool's input schema
     ├── SandboxError              a path is malformed or outside the allowed roots
     ├── ToolFailure               the tool ran but could not do its job
     └── PolicyRuleError           a confirmation rule string cannot be parsed
"""

from __future__ import annotations

__all__ = ["ToolsError", "ToolInputError", "SandboxError", "ToolFailure", "PolicyRuleError"]


class ToolsError(Exception):
    """Root of the tools exception tree; `code` is the stable machine-readable kind."""

    code: str = "tool_error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class ToolInputError(ToolsError):
    """The arguments a model supplied do not satisfy the tool's input schema."""

    code = "invalid_arguments"


class SandboxError(ToolsError):
    """A path was refused: malformed, or outside the working directory and extra roots."""

    code = "path_not_allowed"


class ToolFailure(ToolsError):
    """The tool ran but could not complete (missing file, ambiguous edit, timeout...)."""

    code = "failed"


class PolicyRuleError(ToolsError, ValueError):
    """A rule such as `shell(git status:*)` could not be parsed."""

    code = "invalid_rule"
