"""`shell`: run a command through the user's shell in the working directory.

Contract:
* The command runs as `<shell> -c <command>` (the `shell` given to the tool, else
  `$SHELL`, else `/bin/sh`), in the session working directory, with stdin closed and
  stdout+stderr on a pseudo-terminal (`tools.pty`: programs see a terminal, so they stream
  line by line and keep their colours), in a new session so it leads its own process group.
* When the host gives `ctx.open_terminal`, the pty is published as a terminal channel and
  its `ToolResultTerminalContent` item is reported at once (a client can attach while the
  command runs) and kept in the result.
* While it runs, the output so far is streamed through `ctx.report_content` as one text
  item (then the terminal item, if any), at most once per `stream_interval` seconds. The
  text the model reads has terminal escape sequences removed and `\r\n` turned into `\n`.
* On timeout, on `ctx.cancellation`, and when the host cancels the task, the command's whole
  family (`tools.processes`: its process group, its jobs and whatever they daemonised with
  `nohup`, `setsid` or a double fork) gets SIGHUP + SIGTERM and, after `kill_grace` seconds,
  SIGKILL.
* A command that exits on its own while processes it started in the background still run
  (`server &`) hands them to `ctx.keep_background`: the host keeps them until the session is
  disposed or the host stops (an agent starts a server in one call and uses it in the next, as
  in a terminal). Without it they are ended with the call, since nothing would end them later.
  Either way the result says so (`structuredContent.backgroundProcesses`, a line in the text);
  their output is not collected once the command exited.
* Output beyond `max_output_bytes` is cut from the middle (the start and the end are
  kept) with a note saying how many bytes were left out.
* When the host gives `ctx.sandbox`, the command runs inside that OS sandbox (`tools.os_sandbox`:
  bubblewrap, writes only in the session's folders and a private /tmp, network as configured);
  a write elsewhere fails in the command, so the outside-write check below is skipped. When the
  host sets `ctx.sandbox_unavailable` (a sandbox is required and the platform has none), nothing
  runs: the call fails with code `sandbox_unavailable` and the reason.
* Before anything is spawned (and without an OS sandbox), the command line is read for writes outside the allowed roots
  (`tools.shell.writes`: redirections, `tee`/`cp`/`mv`/`rm`/…, `cd` out of the root); if
  there are any, the tool asks again through `ctx.reconfirm` with a sentence naming them. A
  refusal (or no host to ask) fails the call with code `outside_write_denied` and that
  sentence, and nothing runs.
* Files the command created, changed or deleted in the working directory
  (`tools.file_changes`, a snapshot before and a comparison after; off with
  `track_changes=False`; folders in `untracked` are never reported) are added to the result as `fileEdit` items, so the host records
  them in the session's changeset like `edit_file`'s. So are the files it changed at the places
  outside the working directory its command line names (`tools.shell.writes.write_targets`:
  redirections, `cp`/`mv`/`rm`/... targets, a folder it `cd`s to), at most
  `MAX_OUTSIDE_TARGETS` of them, when they lie in the extra roots or in `ctx.readable_roots`
  (outside the extra roots the user approved the write first, or nothing ran). Writes elsewhere
  are not recorded: the host could not undo them (it writes only inside its roots) and would
  show clients files they may not read.
* Result: success iff the exit code is 0. `structuredContent` carries `exitCode` (or
  `signal`), `timedOut`, `cancelled`, `outputBytes`, `truncatedBytes`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from ..base import Tool, ToolContext, failure_result, success_result
from ..content import file_edit_content, text_content
from ..errors import ToolFailure
from ..file_changes import DirectorySnapshot
from ..os_sandbox import Confined
from ..pty import PtyProcess
from ..sandbox_notes import denials
from ..shell import describe_findings, outside_writes, write_targets

__all__ = ["ShellTool", "plain_text"]

logger = logging.getLogger(__name__)

# CSI (colours, cursor moves), OSC (titles, shell integration) and two-byte escapes.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


MAX_OUTSIDE_TARGETS = 8
"""Places outside the working directory whose changes one command may report (4 MB of content each)."""


def _changes(snapshots: list[DirectorySnapshot]) -> list[tuple[Path, bytes | None, bytes | None]]:
    """Every snapshot's changes, each file once (places may nest), in path order."""
    found: dict[Path, tuple[Path, bytes | None, bytes | None]] = {}
    for snapshot in snapshots:
        for change in snapshot.changes():
            found.setdefault(change[0], change)
    return [found[path] for path in sorted(found)]


def plain_text(text: str) -> str:
    """Terminal output as plain text for a model: escapes removed, ``\\r\\n`` line ends made ``\\n``."""
    return _ESCAPES.sub("", text).replace("\r\n", "\n")


def _background_note(pids: AbstractSet[int], kept: bool) -> str:
    shown = ", ".join(map(str, sorted(pids)[:10])) + (", …" if len(pids) > 10 else "")
    count = f"{len(pids)} background process{'es' if len(pids) > 1 else ''} (pid {shown})"
    if kept:
        return f"[{count} still running; they are ended when this session is disposed or the host stops.]"
    return f"[{count} stopped with the command: nothing would have ended them later.]"


def _add_denials(result: dict, notes: list[str]) -> None:
    """What the sandbox refused, said after the output (the model and every client read it)."""
    if not notes:
        return
    first = result["content"][0]
    first["text"] = first["text"] + "\n" + "\n".join(notes)
    result.setdefault("structuredContent", {})["sandboxDenials"] = notes


class _Output:
    """Keeps the first and last bytes of a stream, counting what falls in between."""

    def __init__(self, limit: int) -> None:
        self.head_limit = limit // 3
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    @property
    def cut(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def render(self) -> str:
        head = plain_text(self.head.decode("utf-8", "replace"))
        tail = plain_text(self.tail.decode("utf-8", "replace"))
        if self.cut:
            return f"{head}\n[… {self.cut:,} bytes of output cut; {self.total:,} bytes in total …]\n{tail}"
        return head + tail


class ShellTool(Tool):
    """Runs shell commands with streaming output, a timeout and group-wide kill."""

    name = "shell"
    title = "Run Command"
    description = (
        "Run a shell command in the working directory and return its exit code and combined "
        "stdout/stderr. Commands are non-interactive (stdin is closed). Long output is cut in the middle."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "minLength": 1, "description": "The command line to run."},
            "timeout_seconds": {"type": "number", "minimum": 1, "maximum": 3600, "description": "Stop the command after this many seconds. Default 120."},
            "description": {"type": "string", "description": "A short description of what the command does, shown to the user."},
        },
        "required": ["command"],
        "additionalProperties": False,
    }
    annotations = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False, "openWorldHint": True}
    subject_kind = "command"

    def __init__(
        self,
        shell: str | None = None,
        default_timeout: float = 120.0,
        max_output_bytes: int = 30_000,
        stream_interval: float = 0.25,
        kill_grace: float = 2.0,
        track_changes: bool = True,
        untracked: tuple[Path, ...] = (),
    ) -> None:
        self.track_changes = track_changes
        self.untracked = untracked
        """Folders whose files are never reported as changed (the host's own data)."""
        self.shell = shell
        self.default_timeout = default_timeout
        self.max_output_bytes = max_output_bytes
        self.stream_interval = stream_interval
        self.kill_grace = kill_grace

    def describe(self, args: dict) -> str:
        return args.get("description") or f"Run `{args.get('command', '')}`"

    def past_tense(self, args: dict) -> str:
        return f"Tried to run `{args.get('command', '')}`"

    def confirmation_title(self, args: dict) -> str:
        return "Run this command?"

    def policy_subject(self, args: dict) -> str | None:
        return args.get("command")

    def _environment(self, ctx: ToolContext | None = None) -> dict[str, str]:
        # Nothing can answer a pager or a credential prompt: make them not happen.
        quiet = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
        if ctx is not None and ctx.sandbox is not None:
            return ctx.sandbox.environ(os.environ, {**ctx.environment, **quiet})
        env = dict(os.environ)
        if ctx is not None:
            env.update(ctx.environment)
        env.update(quiet)
        return env

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        command = args["command"]
        timeout = float(args.get("timeout_seconds", self.default_timeout))
        shell = self.shell or os.environ.get("SHELL") or "/bin/sh"
        if not ctx.working_directory.is_dir():
            raise ToolFailure(f"The working directory {ctx.working_directory} does not exist.", code="no_working_directory")
        if ctx.sandbox_unavailable:
            message = f"Commands must run in a sandbox in this session, and {ctx.sandbox_unavailable}."
            return failure_result(f"Did not run `{command}`", message, "sandbox_unavailable")
        # In the OS sandbox a write outside the session's folders fails by itself: nothing to ask.
        findings = outside_writes(command, ctx.working_directory, ctx.extra_roots) if ctx.sandbox is None else []
        if findings:
            reason = describe_findings(findings, ctx.working_directory)
            if not await ctx.reconfirm(f"{reason} Run it anyway?"):
                message = f"{reason} The user did not allow that, so the command was not run."
                return failure_result(f"Did not run `{command}`", message, "outside_write_denied")
        snapshots: list[DirectorySnapshot] = []
        if self.track_changes:
            snapshots = await asyncio.to_thread(self._snapshots, command, ctx)
        argv = [shell, "-c", command]
        confined = await asyncio.to_thread(ctx.sandbox.confine, argv) if ctx.sandbox else Confined(argv)
        try:
            process = await PtyProcess.spawn(confined.argv, cwd=ctx.working_directory, env=self._environment(ctx))
        except OSError as exc:
            confined.release()
            raise ToolFailure(f"Could not start {shell}: {exc.strerror or type(exc).__name__}.", code="spawn_failed") from None

        output = _Output(self.max_output_bytes)
        changed = asyncio.Event()

        def received(chunk: bytes) -> None:
            output.add(chunk)
            changed.set()

        process.listeners.append(received)
        terminal = None
        if ctx.open_terminal is not None:
            try:
                terminal = ctx.open_terminal(process, self.describe(args), command)
            except Exception:  # publishing is a courtesy; the command itself must still be run and reaped
                logger.exception("could not publish the command's terminal")
        extra = [terminal] if terminal is not None else []
        if terminal is not None:
            await ctx.emit([text_content(""), terminal])
        streamer = asyncio.create_task(self._stream(output, changed, ctx, extra))
        exited = asyncio.create_task(process.wait())
        cancelled = asyncio.create_task(ctx.cancellation.wait())
        finished_normally = False
        timed_out = was_cancelled = False
        background: set[int] = set()
        try:
            done, _ = await asyncio.wait({exited, cancelled}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            timed_out = not done
            was_cancelled = cancelled in done and exited not in done
            if exited not in done:
                await process.terminate(self.kill_grace)
            finished_normally = True
        finally:
            cancelled.cancel()
            if not finished_normally:
                # The host cancelled this task: the processes must not outlive it.
                await asyncio.shield(process.terminate(self.kill_grace))
            process.drain()  # what the command wrote before it exited
            if finished_normally and not (timed_out or was_cancelled):
                background = process.background()
            if not background:
                # Only the command held the pty, and it is gone: the pty closes once it is read.
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(asyncio.shield(process.output_closed.wait()), self.kill_grace)
            streamer.cancel()
            exited.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.gather(streamer, exited, return_exceptions=True)
            if not background:
                process.close()
            confined.release()  # a sandbox's processes end with its command: its placeholders are unused now
        kept = False
        if background:
            process.listeners.remove(received)
            if ctx.keep_background is not None:
                ctx.keep_background(process)  # it ends them with the session, and releases the pty
                kept = True
            else:
                await process.terminate(self.kill_grace)
                process.close()
        result = self._result(command, process.returncode, output, timeout, timed_out, was_cancelled, background, kept)
        if ctx.sandbox is not None:
            _add_denials(result, denials(output.render(), ctx.sandbox, ctx.working_directory))
        edits = []
        if snapshots:
            changes = await asyncio.to_thread(_changes, snapshots)
            edits = [file_edit_content(ctx.content_store, path, before, after) for path, before, after in changes]
        if edits or extra:
            result["content"] = [*result.get("content", []), *edits, *extra]
        return result

    def _snapshots(self, command: str, ctx: ToolContext) -> list[DirectorySnapshot]:
        """The working directory's snapshot, then one per place outside it the command writes to
        that may be recorded (see the module contract). Blocking: run in a thread."""
        roots = (*ctx.extra_roots, *ctx.readable_roots)
        places = [ctx.working_directory, *write_targets(command, ctx.working_directory, roots)[:MAX_OUTSIDE_TARGETS]]
        taken = []
        for index, place in enumerate(places):
            budget = {} if index == 0 else {"max_total_bytes": 4_000_000}
            snapshot = DirectorySnapshot.take(place, roots, excluded=self.untracked, **budget)
            if snapshot is not None:
                taken.append(snapshot)
        return taken

    async def _stream(self, output: _Output, changed: asyncio.Event, ctx: ToolContext, extra: list[dict]) -> None:
        while True:
            await changed.wait()
            changed.clear()
            await ctx.emit([text_content(output.render()), *extra])
            await asyncio.sleep(self.stream_interval)

    def _result(
        self, command: str, returncode: int | None, output: _Output, timeout: float, timed_out: bool, cancelled: bool,
        background: AbstractSet[int] = frozenset(), kept: bool = False,
    ) -> dict:
        text = output.render() or "(no output)"
        structured: dict[str, Any] = {
            "timedOut": timed_out,
            "cancelled": cancelled,
            "outputBytes": output.total,
            "truncatedBytes": output.cut,
        }
        if background:
            structured["backgroundProcesses"] = len(background)
        if returncode is not None and returncode >= 0:
            structured["exitCode"] = returncode
            status = f"[exit code {returncode}]"
        else:
            structured["signal"] = -(returncode or 0)
            status = f"[terminated by signal {-(returncode or 0)}]"
        if timed_out:
            message = f"The command timed out after {timeout:g} s and was stopped."
        elif cancelled:
            message = "The command was cancelled."
        elif returncode is not None and returncode < 0:
            message = f"The command was terminated by signal {-returncode}."
        else:
            message = f"The command exited with code {returncode}."
        footer = status if returncode == 0 and not (timed_out or cancelled) else f"{status} {message}"
        if background:
            footer += "\n" + _background_note(background, kept)
        content = [text_content(f"{text.rstrip(chr(10))}\n{footer}")]
        if timed_out:
            return failure_result(f"Ran `{command}` (timed out)", message, "timeout", content, structured)
        if cancelled:
            return failure_result(f"Ran `{command}` (cancelled)", message, "cancelled", content, structured)
        if returncode == 0:
            return success_result(f"Ran `{command}`", content, structured)
        return failure_result(f"Ran `{command}`", message, "exit_code", content, structured)
