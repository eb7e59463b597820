"""The stdio transport: an MCP server as a child process in its own process group.

Contract:
* `stdio_transport(spec, inherit_env=...)` is an async context manager yielding the
  `(read_stream, write_stream)` pair `mcp.ClientSession` expects, plus a `ServerProcess`
  handle for status (pid, exit code, the last lines of stderr). It only moves framed
  messages between pipes and streams; JSON-RPC itself is the SDK's.
* The process starts in a new session, so its pid is its process-group id. Leaving the
  context always ends the whole group: stdin is closed and the server gets a grace
  period to exit, then the group gets SIGTERM, then SIGKILL; finally any member still in
  the group (a grandchild that outlived its parent or ignores SIGTERM) is SIGKILLed.
  The server is also a process family (``tools.processes``: a token in its environment), so
  what left the group (``setsid``, a double fork) is found and ended with it, and after a
  ``kill -9`` of the host by the host's guardian (``child_processes``, through which the server is
  started: it also gets a parent-death signal) or else the next host's start. Every wait is bounded and the shutdown
  runs shielded from cancellation.
* The child's environment is a small safe subset of the host's (PATH, HOME, locale...)
  plus the spec's declared `env`, unless `inherit_env=True` passes the host env through.
  Host secrets such as provider API keys therefore do not leak into third-party servers
  unless a declaration asks for them with `${VAR}`.
* `SpawnError` (raised on entry) carries a message a person can act on: a missing
  command, a command that is not executable, a working directory that does not exist.
* When the server closes stdout (it exited or crashed), the read stream ends, which the
  SDK reports to pending requests as a closed connection, and `ServerProcess.ended` is set.
* Each stderr line (cut at 8 KiB) goes to `ServerProcess.stderr_lines` (the last 20) and to
  `on_stderr`, when given (the connection keeps the server's log with it).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import mcp_types as types
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

import child_processes

from .. import processes
from .specs import McpServerSpec

__all__ = ["SpawnError", "ServerProcess", "stdio_transport", "SAFE_ENV_VARS", "group_alive"]

logger = logging.getLogger(__name__)

SAFE_ENV_VARS = ("HOME", "LOGNAME", "USER", "PATH", "SHELL", "TERM", "LANG", "LANGUAGE", "LC_ALL",
                 "LC_CTYPE", "TMPDIR", "TZ", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME",
                 "XDG_DATA_HOME", "SSL_CERT_FILE", "SSL_CERT_DIR")
"""Host variables every stdio server inherits; everything else must be declared."""

EXIT_GRACE_SECONDS = 1.0
"""How long a server may take to exit after its stdin closes."""
TERM_GRACE_SECONDS = 2.0
"""How long the group may take to exit after SIGTERM before SIGKILL."""
_POLL_SECONDS = 0.02
_STDERR_LINES = 20
_STDERR_LINE_BYTES = 8192
"""Longest stderr line kept whole; a longer one is cut there (and the rest read as new lines)."""


class SpawnError(Exception):
    """The server process could not be started; the message says why, for a person."""


@dataclass
class ServerProcess:
    """What the host can observe about a running stdio server."""

    pid: int
    stderr_lines: deque[str] = field(default_factory=lambda: deque(maxlen=_STDERR_LINES))
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the server closed its stdout (normally: it exited)."""
    returncode: int | None = None
    _process: Process | None = field(default=None, repr=False)

    async def wait_exit(self, timeout: float) -> int | None:
        """The exit code once the process has exited, waiting at most `timeout` seconds."""
        if self._process is not None and await _wait_exit(self._process, timeout):
            self.returncode = self._process.returncode
        return self.returncode

    def describe_exit(self, with_stderr: bool = True) -> str:
        """"exited with code 3: <last stderr line>" or similar, for status messages.

        The last stderr line is what a failed start usually explains itself with
        ("ModuleNotFoundError: ..."); a crash mid-run gets the exit code alone, since
        older stderr output is unrelated noise by then.
        """
        code = self.returncode
        if code is None:
            text = "closed its connection"
        elif code < 0:
            try:
                text = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                text = f"was killed by signal {-code}"
        else:
            text = f"exited with code {code}"
        tail = self.stderr_tail(1) if with_stderr else ""
        return f"{text}: {tail}" if tail else text

    def stderr_tail(self, lines: int = 3) -> str:
        """The last few non-empty stderr lines, joined, for status messages."""
        kept = [line for line in self.stderr_lines if line.strip()]
        return " | ".join(kept[-lines:])


def group_alive(pgid: int) -> bool:
    """Whether any process is left in the group (signal 0 probes without killing)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def child_environment(spec: McpServerSpec, inherit_env: bool) -> dict[str, str]:
    """The environment a stdio server starts with (see the module contract)."""
    base = dict(os.environ) if inherit_env else {k: os.environ[k] for k in SAFE_ENV_VARS if k in os.environ}
    return {**base, **spec.env}


def _check_spawnable(spec: McpServerSpec, env: dict[str, str]) -> None:
    command = spec.command or ""
    if spec.cwd is not None and not Path(spec.cwd).is_dir():
        raise SpawnError(f"working directory '{spec.cwd}' does not exist")
    if os.sep in command:
        path = Path(command) if Path(command).is_absolute() or spec.cwd is None else Path(spec.cwd) / command
        if not path.exists():
            raise SpawnError(f"command '{command}' not found")
        if not os.access(path, os.X_OK) or path.is_dir():
            raise SpawnError(f"command '{command}' is not executable")
    elif shutil.which(command, path=env.get("PATH", os.defpath)) is None:
        raise SpawnError(f"command '{command}' not found (is it installed and on PATH?)")


async def _wait_exit(process: Process, timeout: float) -> bool:
    # Not process.wait(): on asyncio it also waits for the pipes, which a grandchild can hold open.
    deadline = anyio.current_time() + timeout
    while process.returncode is None:
        if anyio.current_time() >= deadline:
            return False
        await anyio.sleep(_POLL_SECONDS)
    return True


async def _wait_group_gone(pgid: int, timeout: float) -> bool:
    deadline = anyio.current_time() + timeout
    while group_alive(pgid):
        if anyio.current_time() >= deadline:
            return False
        await anyio.sleep(_POLL_SECONDS)
    return True


def _signal_group(pgid: int, sig: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _stop(process: Process) -> None:
    """Close stdin, give the server a grace period, then end the whole process group."""
    pgid = process.pid
    if process.stdin is not None:
        with suppress(Exception):
            await process.stdin.aclose()
    if not await _wait_exit(process, EXIT_GRACE_SECONDS):
        _signal_group(pgid, signal.SIGTERM)
        if not await _wait_group_gone(pgid, TERM_GRACE_SECONDS):
            _signal_group(pgid, signal.SIGKILL)
    # The leader may be gone while children it started live on in the group: no orphans.
    if group_alive(pgid):
        _signal_group(pgid, signal.SIGKILL)
        if not await _wait_group_gone(pgid, TERM_GRACE_SECONDS):
            logger.warning("process group %d still has members after SIGKILL", pgid)
    await _wait_exit(process, TERM_GRACE_SECONDS)
    for pipe in (process.stdout, process.stderr):
        if pipe is not None:
            with suppress(Exception):
                await pipe.aclose()
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    if transport is not None:
        with suppress(Exception):
            transport.close()


@asynccontextmanager
async def stdio_transport(
    spec: McpServerSpec, *, inherit_env: bool = False, on_stderr: Callable[[str], None] | None = None
) -> AsyncIterator[tuple[MemoryObjectReceiveStream, MemoryObjectSendStream, ServerProcess]]:
    """Start the server of `spec` and bridge its pipes to SDK streams (see module contract)."""
    env = child_environment(spec, inherit_env)
    _check_spawnable(spec, env)
    family = processes.new_family()
    env[processes.FAMILY_VARIABLE] = family
    try:
        process = await child_processes.open_process(
            [spec.command or "", *spec.args], env=env, cwd=spec.cwd, start_new_session=True,
        )
    except FileNotFoundError:
        raise SpawnError(f"command '{spec.command}' not found") from None
    except PermissionError:
        raise SpawnError(f"command '{spec.command}' is not executable") from None
    except OSError as exc:
        raise SpawnError(f"command '{spec.command}' could not be started ({exc.strerror or exc})") from None
    handle = ServerProcess(pid=process.pid, _process=process)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](16)

    async def pump_stdout() -> None:
        assert process.stdout is not None
        buffer = b""
        try:
            async with read_writer:
                async for chunk in process.stdout:
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if not line.strip():
                            continue
                        try:
                            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                        except ValueError as exc:
                            # Stray prints on stdout are a server bug; surface it without dying.
                            logger.warning("MCP server %r wrote a non-JSON-RPC line on stdout", spec.name)
                            await read_writer.send(exc)
                            continue
                        await read_writer.send(SessionMessage(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            pass
        finally:
            handle.ended.set()

    async def pump_stdin() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode("utf-8"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The server stopped reading: end the read side so pending requests fail now.
            await read_writer.aclose()

    def stderr_line(text: str) -> None:
        handle.stderr_lines.append(text)
        logger.debug("[mcp %s] %s", spec.name, text)
        if on_stderr is not None:
            try:
                on_stderr(text)
            except Exception:  # a host callback bug must not stop the pump
                logger.exception("MCP stderr callback failed")

    async def pump_stderr() -> None:
        assert process.stderr is not None
        buffer = b""
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            async for chunk in process.stderr:
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                if len(buffer) > _STDERR_LINE_BYTES:  # a line with no end in sight: keep its start
                    lines.append(buffer[:_STDERR_LINE_BYTES])
                    buffer = b""
                for line in lines:
                    stderr_line(line.decode("utf-8", "replace").rstrip())
        if buffer.strip():
            stderr_line(buffer.decode("utf-8", "replace").rstrip())

    async with anyio.create_task_group() as group:
        group.start_soon(pump_stdout)
        group.start_soon(pump_stdin)
        group.start_soon(pump_stderr)
        try:
            yield read_stream, write_stream, handle
        finally:
            with anyio.CancelScope(shield=True):
                write_stream.close()
                read_stream.close()
                await _stop(process)
                handle.returncode = process.returncode
                await processes.end(family, None, TERM_GRACE_SECONDS)  # what left the group
            group.cancel_scope.cancel()
