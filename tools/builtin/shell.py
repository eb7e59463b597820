"""`shell`: run a command through the user's shell in the working directory.

Contract:
* The command runs as `<shell> -c <command>` (the `shell` given to the tool, else
  `$SHELL`, else `/bin/sh`), in the session working directory, with stdin closed and
  stdout+stderr merged, in a new session (`start_new_session=True`) so it leads its own
  process group.
* While it runs, the output so far is streamed through `ctx.report_content` as one text
  item, at most once per `stream_interval` seconds.
* On timeout, on `ctx.cancellation`, and when the host cancels the task, the whole
  process group gets SIGTERM and, after `kill_grace` seconds, SIGKILL: grandchildren die
  too. Background processes still holding the output pipe after the command exits are
  left alone, but their output is no longer collected after `kill_grace` seconds.
* Output beyond `max_output_bytes` is cut from the middle (the start and the end are
  kept) with a note saying how many bytes were left out.
* Before anything is spawned, the command line is read for writes outside the allowed roots
  (`tools.shell.writes`: redirections, `tee`/`cp`/`mv`/`rm`/…, `cd` out of the root); if
  there are any, the tool asks again through `ctx.reconfirm` with a sentence naming them. A
  refusal (or no host to ask) fails the call with code `outside_write_denied` and that
  sentence, and nothing runs.
* Result: success iff the exit code is 0. `structuredContent` carries `exitCode` (or
  `signal`), `timedOut`, `cancelled`, `outputBytes`, `truncatedBytes`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import Any

from ..base import Tool, ToolContext, failure_result, success_result
from ..shell import describe_findings, outside_writes
from ..content import text_content
from ..errors import ToolFailure

__all__ = ["ShellTool"]


async def _wait_exit(process: asyncio.subprocess.Process) -> None:
    """Wait until the process itself has exited and its exit status is known.

    `Process.wait()` also waits for the output pipe to close, which never happens while a
    background grandchild holds it; this watches the process alone (a pidfd on Linux).
    """
    if process.returncode is None:
        loop = asyncio.get_running_loop()
        try:
            pidfd = os.pidfd_open(process.pid)
        except (AttributeError, OSError):
            pidfd = None  # already reaped, or no pidfd support: the status arrives shortly
        if pidfd is not None:
            exited = loop.create_future()
            loop.add_reader(pidfd, lambda: exited.done() or exited.set_result(None))
            try:
                await exited
            finally:
                loop.remove_reader(pidfd)
                os.close(pidfd)
    # The child watcher records the status a moment after the exit becomes visible.
    while process.returncode is None:
        await asyncio.sleep(0.005)


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
        head = self.head.decode("utf-8", "replace")
        tail = self.tail.decode("utf-8", "replace")
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
    ) -> None:
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

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ)
        # Nothing can answer a pager or a credential prompt: make them not happen.
        env.update({"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"})
        return env

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        command = args["command"]
        timeout = float(args.get("timeout_seconds", self.default_timeout))
        shell = self.shell or os.environ.get("SHELL") or "/bin/sh"
        if not ctx.working_directory.is_dir():
            raise ToolFailure(f"The working directory {ctx.working_directory} does not exist.", code="no_working_directory")
        findings = outside_writes(command, ctx.working_directory, ctx.extra_roots)
        if findings:
            reason = describe_findings(findings, ctx.working_directory)
            if not await ctx.reconfirm(f"{reason} Run it anyway?"):
                message = f"{reason} The user did not allow that, so the command was not run."
                return failure_result(f"Did not run `{command}`", message, "outside_write_denied")
        try:
            process = await asyncio.create_subprocess_exec(
                shell, "-c", command,
                cwd=ctx.working_directory,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
                env=self._environment(),
            )
        except OSError as exc:
            raise ToolFailure(f"Could not start {shell}: {exc.strerror or type(exc).__name__}.", code="spawn_failed") from None

        output = _Output(self.max_output_bytes)
        changed = asyncio.Event()
        reader = asyncio.create_task(self._read(process, output, changed))
        streamer = asyncio.create_task(self._stream(output, changed, ctx))
        exited = asyncio.create_task(_wait_exit(process))
        cancelled = asyncio.create_task(ctx.cancellation.wait())
        finished_normally = False
        try:
            done, _ = await asyncio.wait({exited, cancelled}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            timed_out = not done
            was_cancelled = cancelled in done and exited not in done
            if exited not in done:
                await self._kill_group(process)
            finished_normally = True
        finally:
            cancelled.cancel()
            if not finished_normally:
                # The host cancelled this task: the processes must not outlive it.
                await asyncio.shield(self._kill_group(process))
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(reader), self.kill_grace)
            reader.cancel()
            streamer.cancel()
            exited.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.gather(reader, streamer, exited, return_exceptions=True)
            # A background process may still hold the pipe open; stop listening to it.
            transport = getattr(process, "_transport", None)
            if transport is not None:
                transport.close()
        return self._result(command, process.returncode, output, timeout, timed_out, was_cancelled)

    async def _read(self, process: asyncio.subprocess.Process, output: _Output, changed: asyncio.Event) -> None:
        assert process.stdout is not None
        while chunk := await process.stdout.read(65536):
            output.add(chunk)
            changed.set()

    async def _stream(self, output: _Output, changed: asyncio.Event, ctx: ToolContext) -> None:
        while True:
            await changed.wait()
            changed.clear()
            await ctx.emit([text_content(output.render())])
            await asyncio.sleep(self.stream_interval)

    async def _kill_group(self, process: asyncio.subprocess.Process) -> None:
        """SIGTERM the process group, then SIGKILL whatever is left after the grace period."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(_wait_exit(process), self.kill_grace)
        # Even if the leader exited, its children may have ignored SIGTERM.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        await _wait_exit(process)

    def _result(
        self, command: str, returncode: int | None, output: _Output, timeout: float, timed_out: bool, cancelled: bool
    ) -> dict:
        text = output.render() or "(no output)"
        structured: dict[str, Any] = {
            "timedOut": timed_out,
            "cancelled": cancelled,
            "outputBytes": output.total,
            "truncatedBytes": output.cut,
        }
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
        content = [text_content(f"{text.rstrip(chr(10))}\n{footer}")]
        if timed_out:
            return failure_result(f"Ran `{command}` (timed out)", message, "timeout", content, structured)
        if cancelled:
            return failure_result(f"Ran `{command}` (cancelled)", message, "cancelled", content, structured)
        if returncode == 0:
            return success_result(f"Ran `{command}`", content, structured)
        return failure_result(f"Ran `{command}`", message, "exit_code", content, structured)
