"""The one interface shared by built-in, MCP and client-provided tools.

Contract for a host driving a tool call:

1. `prep = await tool.prepare(args, ctx)`: validates the arguments and says what the
   confirmation should show (`Preparation.ready_fields()` is the body of
   `session/toolCallReady` minus ids and `confirmed`/`options`). It never writes
   anything; for file tools it computes the proposed `edits`. If `prep.failure` is set
   the call cannot succeed (bad arguments, path refused, string not found): complete the
   call with that result instead of asking the user.
2. Ask `tools.policy.decide(...)` whether to run, ask or refuse.
3. `result = await tool.call(args, ctx)`: returns an AHP `ToolCallResult` dict. A failure
   (bad argument, missing file, timeout, cancellation through `ctx`) is a result with
   `success: false` and `error{message, code}`; no exception escapes except
   `asyncio.CancelledError` when the host cancels the task itself.

Subclasses implement `run(args, ctx)` (and optionally `describe`/`preview`); they raise
`ToolsError` subclasses for failures and let `call` convert them. Arguments reaching
`run` and `preview` have already been validated against `input_schema`.

Invariant: every dict produced here is AHP wire shape: camelCase keys, absent values
omitted, never `None`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ._schema import validate_arguments
from .content import ContentStore, InMemoryContentStore, text_content
from .errors import SandboxError, ToolFailure, ToolInputError, ToolsError
from .os_sandbox import OsSandbox
from .sandbox import resolve_path

if TYPE_CHECKING:
    from .pty import PtyProcess

__all__ = [
    "Tool",
    "ToolContext",
    "Preparation",
    "success_result",
    "failure_result",
    "ReportContent",
    "Reconfirm",
    "AskUser",
    "OpenTerminal",
    "KeepBackground",
]

logger = logging.getLogger(__name__)

ReportContent = Callable[[list[dict]], Awaitable[None] | None]
"""Receives the full partial content of a running call (it replaces, not appends)."""
Reconfirm = Callable[[str], Awaitable[bool]]
"""Puts a running call back to pending-confirmation with a reason; True if approved."""
AskUser = Callable[[dict], Awaitable[dict]]
"""Publishes a `SessionInputRequest`; resolves to `{response, answers?}` from `inputCompleted`."""
OpenTerminal = Callable[["PtyProcess", str, str], "dict | None"]
"""Publishes a running `tools.pty.PtyProcess` as a terminal channel: `(process, title, command
line)`; returns its `ToolResultTerminalContent` item (`{type: "terminal", resource, title}`)."""
KeepBackground = Callable[["PtyProcess"], None]
"""Takes over a finished command whose background processes still run, and ends them with the
session (`PtyProcess.terminate`); the host's, per session."""


async def _no_reconfirm(reason: str) -> bool:
    # Without a host to ask, the conservative answer to "may I continue?" is no.
    return False


async def _no_ask(request: dict) -> dict:
    raise ToolFailure("No client is connected that can answer questions.", code="input_unavailable")


@dataclass
class ToolContext:
    """Everything a tool may use from its session; one instance per tool call."""

    working_directory: Path
    """The session working directory; relative paths resolve against it."""
    extra_roots: tuple[Path, ...] = ()
    """Further directories file tools may touch."""
    cancellation: asyncio.Event = field(default_factory=asyncio.Event)
    """Set by the host to ask a running tool to stop; tools then return a cancelled result."""
    report_content: ReportContent | None = None
    """Streams partial content while running (host: `session/toolCallContentChanged`)."""
    reconfirm: Reconfirm = _no_reconfirm
    """Asks the user again mid-execution (host: `toolCallReady` without `confirmed`)."""
    ask: AskUser = _no_ask
    """Asks the user structured questions (host: `session/inputRequested` / `inputCompleted`)."""
    content_store: ContentStore = field(default_factory=InMemoryContentStore)
    """Where before/after file contents go; the host serves its URIs via `resourceRead`."""
    tool_call_id: str | None = None
    """The AHP tool call id, when the host has one; used to derive stable request ids."""
    open_terminal: OpenTerminal | None = None
    """Publishes a command's pty as a terminal clients can attach to (host: a terminal channel)."""
    keep_background: KeepBackground | None = None
    """Keeps a finished command's background processes running until the session ends (host).
    Without it the `shell` tool ends them with the call: nothing else would."""
    untracked: tuple[Path, ...] = ()
    """Folders whose file changes are never reported (the host's own data directory)."""
    readable_roots: tuple[Path, ...] = ()
    """Folders every client of the host may read (the host's resource roots). The ``shell`` tool
    reports the files it changes there outside the working directory, after the user approved
    writing there, so they can be undone like the others."""
    sandbox: OsSandbox | None = None
    """The OS sandbox commands run in (``tools.os_sandbox``), when the host asks for one."""
    environment: dict[str, str] = field(default_factory=dict)
    """Variables set for the processes the tool starts, on top of the host's (Claude Code settings'
    ``env``; ``CLAUDE_PLUGIN_ROOT`` while a plugin's command, skill or agent is in play)."""
    sandbox_unavailable: str | None = None
    """Set when the session needs a sandbox this platform cannot give: why (the ``shell`` tool
    then refuses to run anything, with this reason)."""
    read_roots: tuple[Path, ...] = ()
    """Folders the reading tools (``read_file``, ``list_dir``, ``glob``, ``grep``) may read as
    well, and nothing may write: the files of the session's plugins and skills."""

    def __post_init__(self) -> None:
        self.working_directory = Path(self.working_directory)
        self.extra_roots = tuple(Path(r) for r in self.extra_roots)

    @property
    def cancelled(self) -> bool:
        """Whether the host asked this call to stop."""
        return self.cancellation.is_set()

    def resolve(self, path: str) -> Path:
        """Resolve a tool-supplied path inside the sandbox (raises `SandboxError`)."""
        return resolve_path(path, self.working_directory, self.extra_roots)

    def resolve_readable(self, path: str) -> Path:
        """Like `resolve`, for reading: `read_roots` count as well. A path outside all of them
        gets `resolve`'s error (which names the roots that may be written)."""
        try:
            return self.resolve(path)
        except SandboxError as refused:
            if not self.read_roots:
                raise
            try:
                return resolve_path(path, self.working_directory, (*self.extra_roots, *self.read_roots))
            except SandboxError:
                raise refused from None

    def display_path(self, path: Path) -> str:
        """`path` relative to the working directory when inside it, else absolute."""
        root = Path(resolve_path(".", self.working_directory))
        return str(path.relative_to(root)) if path.is_relative_to(root) and path != root else str(path)

    async def emit(self, content: list[dict]) -> None:
        """Call `report_content` whether the host gave a plain or an async callback."""
        if self.report_content is None:
            return
        outcome = self.report_content(content)
        if inspect.isawaitable(outcome):
            await outcome


@dataclass(frozen=True)
class Preparation:
    """What to show before a call runs; computed without side effects."""

    invocation_message: str
    """Present-tense line for the call, e.g. "Edit src/app.py"."""
    confirmation_title: str | None = None
    """Heading of the confirmation prompt, e.g. "Run this command?"."""
    edits: list[dict] | None = None
    """Proposed `FileEdit` items for file tools."""
    failure: dict | None = None
    """A `ToolCallResult` when the call cannot succeed; skip confirmation and report it."""

    def ready_fields(self) -> dict:
        """`invocationMessage`, `confirmationTitle?`, `edits?{items}` for `toolCallReady`."""
        fields: dict[str, Any] = {"invocationMessage": self.invocation_message}
        if self.confirmation_title is not None:
            fields["confirmationTitle"] = self.confirmation_title
        if self.edits:
            fields["edits"] = {"items": list(self.edits)}
        return fields


def success_result(
    past_tense: str,
    content: list[dict] | None = None,
    structured: dict | None = None,
) -> dict:
    """A successful `ToolCallResult`."""
    result: dict[str, Any] = {"success": True, "pastTenseMessage": past_tense}
    if content:
        result["content"] = content
    if structured is not None:
        result["structuredContent"] = structured
    return result


def failure_result(
    past_tense: str,
    message: str,
    code: str | None = None,
    content: list[dict] | None = None,
    structured: dict | None = None,
) -> dict:
    """A failed `ToolCallResult`; `message` also goes in as text content for the model."""
    error: dict[str, Any] = {"message": message}
    if code is not None:
        error["code"] = code
    result: dict[str, Any] = {"success": False, "pastTenseMessage": past_tense, "error": error}
    result["content"] = content if content else [text_content(message)]
    if structured is not None:
        result["structuredContent"] = structured
    return result


class Tool(ABC):
    """Base class: subclasses set the class attributes and implement `run`."""

    name: str
    """Unique identifier the model calls the tool by."""
    title: str
    """Human-readable display name (AHP `displayName`)."""
    description: str
    """What the tool does, written for the model."""
    input_schema: dict
    """JSON Schema of the arguments (an object schema)."""
    annotations: dict = {}
    """AHP `ToolAnnotations` hints: readOnlyHint, destructiveHint, idempotentHint, openWorldHint."""
    subject_kind: Literal["command", "path"] | None = None
    """What `policy_subject` returns, so confirmation rules know how to match it."""

    @property
    def read_only(self) -> bool:
        """Whether the tool declares it does not modify its environment."""
        return bool(self.annotations.get("readOnlyHint", False))

    def definition(self) -> dict:
        """The AHP `ToolDefinition` for this tool."""
        definition: dict[str, Any] = {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
        }
        if self.annotations:
            definition["annotations"] = {"title": self.title, **self.annotations}
        return definition

    def validate(self, args: Any) -> None:
        """Raise `ToolInputError` listing every problem with `args`."""
        problems = validate_arguments(self.input_schema, args)
        if problems:
            raise ToolInputError(f"Invalid arguments for {self.name}: " + "; ".join(problems) + ".")

    def describe(self, args: dict) -> str:
        """Present-tense invocation message; override for something specific."""
        return f"Run {self.title}"

    def past_tense(self, args: dict) -> str:
        """Past-tense message used when the call fails before `run` says otherwise."""
        return f"Tried to run {self.title}"

    def confirmation_title(self, args: dict) -> str | None:
        """Heading for the confirmation prompt."""
        return f"Allow {self.title}?"

    def policy_subject(self, args: dict) -> str | None:
        """The argument that confirmation rules match against (a command, a path), if any."""
        return None

    async def preview(self, args: dict, ctx: ToolContext) -> list[dict] | None:
        """Proposed `FileEdit`s, computed without writing; None for tools that edit nothing."""
        return None

    async def prepare(self, args: Any, ctx: ToolContext) -> Preparation:
        """Validate and describe the call for confirmation; never has side effects."""
        safe_args = args if isinstance(args, dict) else {}
        try:
            message = self.describe(safe_args)
        except Exception:  # a describe() on malformed args must not break confirmation
            message = f"Run {self.title}"
        try:
            self.validate(args)
            edits = await self.preview(args, ctx)
        except ToolsError as exc:
            return Preparation(message, failure=failure_result(self.past_tense(safe_args), exc.message, exc.code))
        return Preparation(message, self.confirmation_title(args), edits)

    async def call(self, args: Any, ctx: ToolContext) -> dict:
        """Run the tool; always returns a `ToolCallResult` (see the module contract)."""
        safe_args = args if isinstance(args, dict) else {}
        try:
            self.validate(args)
            return await self.run(args, ctx)
        except ToolsError as exc:
            return failure_result(self.past_tense(safe_args), exc.message, exc.code)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # The boundary where a tool bug becomes a result: log it, keep the trace off the wire.
            logger.exception("tool %s failed unexpectedly", self.name)
            return failure_result(
                self.past_tense(safe_args),
                f"{self.title} failed unexpectedly ({type(exc).__name__}).",
                "internal_error",
            )

    @abstractmethod
    async def run(self, args: dict, ctx: ToolContext) -> dict:
        """Do the work with validated `args`; raise `ToolsError` subclasses on failure."""
