"""``TerminalService``: pty processes as terminal channels (PROTOCOL.md §11).

Contract:

* ``create(params, client_id)`` (``createTerminal``) starts the user's shell (``$SHELL``, else
  ``/bin/sh``) interactively on a pty of ``cols`` × ``rows`` in ``cwd``: the given ``file:`` URI,
  confined to the same roots as the ``resource*`` methods, else the claiming session's working
  directory, else the host's default directory. A client claim must name the caller's own
  ``clientId``; a session claim an existing session. The terminal is the user's own keyboard, so
  nothing in it asks for confirmation; the agent's commands (the ``shell`` tool) go through the
  tool confirmation before they ever reach a pty.
* ``attach(process, claim, title, command, cwd)`` publishes a command the ``shell`` tool started
  (its ``TerminalContributor`` gives every tool call an ``open_terminal``) as one detected command:
  ``terminal/commandExecuted`` first, ``terminal/commandFinished`` with its exit code and duration
  when it ends, so its output is a ``command`` part. Its stdin is closed (agent
  commands are non-interactive), so validation refuses ``terminal/input`` on it; resize and kill
  (``disposeTerminal``) work. A session keeps its newest ``TOOL_TERMINALS_KEPT`` finished command
  terminals; older ones are removed.
* Shell integration (``host.runtime.terminals.shell_integration``): a ``bash``, ``zsh`` or ``fish`` shell is started
  with our rc file, which reads the user's own and then marks each command with OSC 633
  sequences ending with a nonce made for this terminal; a mark without it (printed by any
  program) is removed and means nothing (``host.runtime.terminals.output``). The first prompt mark dispatches ``terminal/commandDetectionAvailable``; each command
  line the shell runs becomes ``terminal/commandExecuted`` (its output then goes into that
  ``command`` part) and ``terminal/commandFinished`` with its exit code and duration (measured by
  the host) when the next prompt comes; a changed directory becomes ``terminal/cwdChanged``. The
  text before each mark is flushed first, so actions and output keep the order the shell wrote
  them in. A command still running when the shell exits finishes with the shell's exit code.
  Other shells run without it (no command detection). Marks in a tool command's output are
  only removed, never interpreted.
* A user's shell with shell integration that has not reached its first prompt ``SLOW_START`` (5)
  seconds after it started gets a line in its output saying it is still reading its startup files,
  so a slow ``~/.bashrc`` does not look like a dead terminal.
* At most 64 ``createTerminal`` shells run at once (the next is refused with -32009 saying so).
* Output becomes ``terminal/data`` (a burst coalesced into one action per 16 ms, shell-integration escapes
  removed, ``host.runtime.terminals.output``); a terminal's scrollback is kept under
  ``scrollback_limit`` characters by ``terminal/cleared`` followed by the newest half. The process
  exiting becomes ``terminal/exited{exitCode}`` (128 + signal when killed).
* Client actions, observed after the store applied them: ``terminal/input`` is written to the pty,
  ``terminal/resized`` resizes it; ``terminal/claimed`` / ``titleChanged`` and every create,
  exit and removal refresh ``root/terminalsChanged``.
* ``dispose`` (``disposeTerminal``), ``session_disposed`` (the session's terminals) and ``stop``
  (host shutdown) end the shell's whole family (``tools.processes``: its jobs, and what they
  daemonised with ``nohup``, ``setsid`` or a double fork): SIGHUP + SIGTERM, then SIGKILL after a
  grace period. A shell that exits on its own while jobs it started run on hands them to the
  host's ``BackgroundProcesses`` under the terminal's URI: they end when the terminal is disposed
  (or its session, or the host stops), as nohup'd jobs outlive a closed terminal window.
* A terminal whose shell is gone refuses ``terminal/input`` with one reason (``host.transport.validation``):
  the state's ``lifecycle`` is ``exited`` in every such case. Stopping the host ends each shell (SIGHUP,
  observed: 129) and adds a line to its output saying the host stopped. After the host died
  without stopping (``kill -9``) the journal brings terminal channels back without their
  processes; ``start`` finishes each unfinished one: a command still running is finished (no exit
  code), a line says what happened, and a user's shell is marked exited with 129 (the kernel hung
  up its pty when the host died, which sends SIGHUP to the shell; the host did not see it). A
  ``shell`` tool's command terminal is marked exited without a code: its command had no
  controlling terminal to lose, so how it ended is unknown (its tool call ended with
  ``hostRestarted``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from host.errors import ErrorCode, RpcError
from host.resources.workdirs import session_directory
from host.runtime.agents.base import TurnContext
from host.runtime.agents.environment import Contributor
from host.runtime.processes import BackgroundProcesses
from host.state.store import ROOT, Store
from tools.base import ToolContext
from tools.pty import PtyProcess, exit_code_of

from . import actions
from .output import Mark, TerminalText, bounded
from .shell_integration import integrated

__all__ = ["TerminalService", "TerminalContributor", "TERMINAL_SCHEME", "TOOL_TERMINALS_KEPT"]

logger = logging.getLogger(__name__)

TERMINAL_SCHEME = "ahp-terminal:/"
TOOL_TERMINALS_KEPT = 20
_KILL_GRACE = 2.0
_FLUSH_DELAY = 0.016
_MAX_RUNNING = 64
_MAX_URI = 300
HANGUP_EXIT_CODE = 129
"""128 + SIGHUP: how a shell ends when its terminal goes away (host stop or host death)."""
_STOPPED_NOTE = "\r\n[The host stopped, and this terminal's shell ended with it. The terminal is gone: create a new one to go on.]\r\n"
SLOW_START = 5.0
"""Seconds a user's shell may take to reach its first prompt before its terminal says why it waits."""
_SLOW_START_NOTE = ("\r\n[The shell is still reading its startup files (~/.bashrc, ~/.zshrc, ~/.profile and what they "
                    "run) after {seconds:.0f} s; it takes commands once they are done. A slow one there (a version "
                    "manager's init, a stale lock) makes every new terminal wait this long.]\r\n")
_LOST_NOTE = ("\r\n[The host ended without stopping (it was killed or crashed) and was restarted; this terminal's process "
              "was lost with it. The terminal is gone: create a new one to go on.]\r\n")
_TAKEN_OVER_NOTE = ("\r\n[The agent host process running this terminal stopped (killed, or cut off from its cluster); "
                    "this terminal's process was lost with it. The terminal is gone: create a new one to go on.]\r\n")


@dataclass
class _Running:
    uri: str
    process: PtyProcess
    owns_process: bool
    """False for a tool's command: the tool reads, times out and closes it."""
    text: TerminalText = field(default_factory=TerminalText)
    pending: list[str] = field(default_factory=list)
    pending_size: int = 0
    overflowed: bool = False
    """More arrived before a flush than the scrollback holds: start over with the newest part."""
    size: int = 0
    flush_scheduled: bool = False
    watcher: asyncio.Task[None] | None = None
    command: tuple[str, int] | None = None
    """The running command's id and start time (ms), for ``terminal/commandFinished``: the tool's
    command, or the one the shell integration last reported as executed."""
    command_line: str = ""
    """The command line of the shell integration's last ``E`` mark, for the next ``C``."""
    detecting: bool = False
    """The shell integration announced itself (``terminal/commandDetectionAvailable`` sent)."""
    cwd: str | None = None
    """The working directory last published (``terminal/cwdChanged`` only when it changes)."""
    slow_start: asyncio.TimerHandle | None = None
    """Says why the terminal waits if the shell's startup files take ``SLOW_START`` seconds or more."""


class TerminalService:
    def __init__(
        self,
        store: Store,
        *,
        resolve_directory: Callable[[Any], Path],
        default_directory: Path,
        clock: Callable[[], int],
        background: BackgroundProcesses,
        scrollback_limit: int = 256_000,
    ) -> None:
        self.store = store
        self._background = background
        self._resolve_directory = resolve_directory
        self._default_directory = default_directory
        self._clock = clock
        self.scrollback_limit = scrollback_limit
        self.slow_start = SLOW_START
        """Seconds before a shell not at its first prompt yet gets a line saying why (tests shorten it)."""
        self._running: dict[str, _Running] = {}
        self._ending: set[asyncio.Task[None]] = set()
        """Shells of terminals this process lost, being ended (``lost``)."""
        self._counter = 0
        store.change_observers.append(self._observe)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        """Terminals recovered from the journal have no process any more: finish and mark them
        exited, saying why (see the module contract)."""
        for uri, state in list(self.store.channels("terminal")):
            if uri in self._running or actions.has_exited(state):
                continue
            self._finish_lost(uri, state, _LOST_NOTE)
        self._publish_list()

    def taken_over(self, uri: str) -> None:
        """A cluster's process that ran terminal ``uri`` died (or lost it), and this one took the
        terminal over: its process is gone with that process, so it is finished as a recovered
        one is (``start``), with a line saying what happened."""
        state = self.store.state(uri)
        if state is None or uri in self._running or actions.has_exited(state):
            return
        self._finish_lost(uri, state, _TAKEN_OVER_NOTE)
        self._publish_list()

    def lost(self, uri: str) -> None:
        """This process lost terminal ``uri`` (a cluster: its lease lapsed or was taken): its
        shell and what it started are ended, quietly (nothing of it can be written any more; the
        process that takes the terminal over marks it exited)."""
        item = self._running.pop(uri, None)
        if item is None:
            return
        if item.watcher is not None:
            item.watcher.cancel()
        if item.owns_process:
            task = asyncio.get_running_loop().create_task(self._quietly_ended(item))
            self._ending.add(task)
            task.add_done_callback(self._ending.discard)

    async def _quietly_ended(self, item: _Running) -> None:
        try:
            await item.process.terminate(_KILL_GRACE)
        finally:
            item.process.close()

    def _finish_lost(self, uri: str, state: dict[str, Any], note: str) -> None:
        """A terminal whose process is gone: its running command finished, ``note`` in its
        output, and exited (129 for a user's shell, whose pty was hung up; no code for a tool's
        command, how it ended unknown)."""
        for part in state.get("content") or []:
            if part.get("type") == "command" and not part.get("isComplete"):
                self.store.dispatch(uri, actions.command_finished(part["commandId"], None, None))
        self.store.dispatch(uri, actions.data(note))
        tool_command = bool((state.get("claim") or {}).get("toolCallId"))
        self.store.dispatch(uri, actions.exited(None if tool_command else HANGUP_EXIT_CODE))

    async def stop(self) -> None:
        running = list(self._running.values())
        await asyncio.gather(*(self._end(item) for item in running), *self._ending, return_exceptions=True)
        self._publish_list()

    # -- createTerminal / disposeTerminal ------------------------------------------------------

    async def create(self, params: dict[str, Any], client_id: str) -> None:
        uri = params.get("channel")
        if not isinstance(uri, str) or not uri.startswith(TERMINAL_SCHEME) or len(uri) <= len(TERMINAL_SCHEME) or len(uri) > _MAX_URI:
            raise RpcError(ErrorCode.INVALID_PARAMS, "channel must be a terminal URI: ahp-terminal:/ followed by an id you choose (e.g. ahp-terminal:/<uuid>).")
        if uri in self.store:
            raise RpcError(ErrorCode.ALREADY_EXISTS, f"{uri} already exists; pick a new terminal URI.")
        if sum(1 for item in self._running.values() if item.owns_process) >= _MAX_RUNNING:
            raise RpcError(ErrorCode.PERMISSION_DENIED, f"This host already runs {_MAX_RUNNING} terminals; dispose one with disposeTerminal first.")
        claim = params["claim"]
        session_state: dict[str, Any] | None = None
        if claim.get("kind") == "client":
            if claim.get("clientId") != client_id:
                raise RpcError(ErrorCode.INVALID_PARAMS, "A client claim must name your own clientId.")
        else:
            session_state = self.store.state(claim.get("session")) if self.store.kind(claim.get("session")) == "session" else None
            if session_state is None:
                raise RpcError(ErrorCode.SESSION_NOT_FOUND, f"No session {claim.get('session')} to claim the terminal.")
            if not isinstance(claim.get("chat"), str) and isinstance(session_state.get("defaultChat"), str):
                claim = {**claim, "chat": session_state["defaultChat"]}  # 0.7.0 claims name no chat
        cwd = self._directory(params.get("cwd"), session_state)
        cols, rows = _dimension(params.get("cols"), 80), _dimension(params.get("rows"), 24)
        shell = os.environ.get("SHELL") or "/bin/sh"
        nonce = secrets.token_hex(16)
        argv, env = integrated(shell, {**os.environ, "TERM": "xterm-256color", "COLORTERM": "truecolor"}, nonce)
        try:
            process = await PtyProcess.spawn(argv, cwd=cwd, env=env, cols=cols, rows=rows, interactive=True)
        except OSError as error:
            raise RpcError(ErrorCode.INTERNAL_ERROR, f"Could not start {shell}: {error.strerror or type(error).__name__}.") from None
        title = params.get("name") or os.path.basename(shell)
        state = {"title": title, "cwd": cwd.as_uri(), "cols": cols, "rows": rows, "content": [], "claim": claim,
                 "lifecycle": {"status": "running"}}
        self.store.create(uri, "terminal", state)
        self._open(uri, process, owns_process=True, cwd=cwd.as_uri(), nonce=nonce)

    def attach(self, process: PtyProcess, claim: dict[str, Any], title: str, command: str, cwd: Path) -> str:
        """Publish a tool's running command as a new terminal; returns its URI."""
        self._counter += 1
        started = self._clock()
        uri = f"{TERMINAL_SCHEME}cmd-{os.getpid()}-{started}-{self._counter}"
        state = {"title": title, "cwd": cwd.as_uri(), "cols": 80, "rows": 24, "content": [], "claim": claim,
                 "lifecycle": {"status": "running"}}
        command_id = claim.get("toolCallId") or f"command-{self._counter}"
        self.store.create(uri, "terminal", state)
        self.store.dispatch(uri, actions.command_executed(command_id, command, started))
        self._open(uri, process, owns_process=False, command=(command_id, started))
        self._trim_tool_terminals(claim.get("session"))
        return uri

    def dispose(self, uri: Any) -> None:
        if self.store.kind(uri) != "terminal":
            raise RpcError(ErrorCode.NOT_FOUND, f"No terminal {uri}.")
        self._remove(uri)

    def session_disposed(self, session: str) -> None:
        for uri, state in list(self.store.channels("terminal")):
            claim = state.get("claim") or {}
            if claim.get("kind") == "session" and claim.get("session") == session:
                self._remove(uri)

    # -- internals -----------------------------------------------------------------------------

    def _directory(self, cwd: Any, session_state: dict[str, Any] | None) -> Path:
        if cwd is not None:
            path = self._resolve_directory(cwd)
        elif session_state is not None:
            path = session_directory(session_state) or self._default_directory
        else:
            path = self._default_directory
        if not path.is_dir():
            raise RpcError(ErrorCode.NOT_FOUND, f"{path.as_uri()} is not an existing directory; pass another cwd.")
        return path

    def _open(self, uri: str, process: PtyProcess, *, owns_process: bool, command: tuple[str, int] | None = None,
              cwd: str | None = None, nonce: str | None = None) -> None:
        item = _Running(uri, process, owns_process, text=TerminalText(nonce), command=command, cwd=cwd)
        self._running[uri] = item
        process.listeners.append(lambda chunk: self._received(item, chunk))
        item.watcher = asyncio.get_running_loop().create_task(self._watch(item))
        if owns_process and nonce is not None:  # a user's shell whose first prompt says it is ready
            item.slow_start = asyncio.get_running_loop().call_later(self.slow_start, self._starting_slowly, item)
        self._publish_list()

    def _starting_slowly(self, item: _Running) -> None:
        """The shell has not reached its first prompt yet: its terminal says why it waits."""
        if self._running.get(item.uri) is item and not item.detecting:
            self._flush(item)
            self.store.dispatch(item.uri, actions.data(_SLOW_START_NOTE.format(seconds=self.slow_start)))

    def _received(self, item: _Running, chunk: bytes) -> None:
        if not item.owns_process:
            self._queue(item, item.text.feed(chunk))
            return
        for part in item.text.segments(chunk):
            if isinstance(part, Mark):
                self._marked(item, part)
            else:
                self._queue(item, part)

    def _marked(self, item: _Running, mark: Mark) -> None:
        """One shell-integration mark of a user's shell, after the text before it is published."""
        if self._running.get(item.uri) is not item:
            return
        if mark.code in ("A", "B", "C", "D", "E") and not item.detecting:
            item.detecting = True
            self.store.dispatch(item.uri, actions.command_detection_available())
        if mark.code == "E":
            item.command_line = mark.value or ""
        elif mark.code == "C":
            self._flush(item)
            self._finish_command(item, None)  # a C without a D in between: the last one is over
            command_id, started = f"cmd-{uuid.uuid4().hex}", self._clock()
            item.command = (command_id, started)
            self.store.dispatch(item.uri, actions.command_executed(command_id, item.command_line, started))
            item.command_line = ""
        elif mark.code == "D":
            self._flush(item)
            self._finish_command(item, _exit_code(mark.value))
        elif mark.code == "P" and (mark.value or "").startswith("Cwd="):
            directory = (mark.value or "")[4:]
            if directory.startswith("/"):
                cwd = Path(directory).as_uri()
                if cwd != item.cwd:
                    item.cwd = cwd
                    self.store.dispatch(item.uri, actions.cwd_changed(cwd))

    def _finish_command(self, item: _Running, exit_code: int | None) -> None:
        if item.command is not None:
            command_id, started = item.command
            item.command = None
            self.store.dispatch(item.uri, actions.command_finished(command_id, exit_code, max(0, self._clock() - started)))

    def _queue(self, item: _Running, text: str) -> None:
        if not text:
            return
        item.pending.append(text)
        item.pending_size += len(text)
        if item.pending_size > self.scrollback_limit:
            kept = "".join(item.pending)[-(self.scrollback_limit // 2):]
            item.pending, item.pending_size, item.overflowed = [kept], len(kept), True
        if not item.flush_scheduled:
            item.flush_scheduled = True
            # A short delay gathers a burst of reads into one action (at most ~60 a second).
            asyncio.get_running_loop().call_later(_FLUSH_DELAY, self._flush, item)

    def _flush(self, item: _Running) -> None:
        item.flush_scheduled = False
        if not item.pending or self._running.get(item.uri) is not item:
            item.pending.clear()
            item.pending_size = 0
            return
        added = "".join(item.pending)
        item.pending.clear()
        item.pending_size = 0
        restart = bounded(item.size, added, _scrollback(self.store.state(item.uri)), self.scrollback_limit)
        if item.overflowed:
            restart, item.overflowed = added, False
        if restart is not None:
            self.store.dispatch(item.uri, actions.cleared())
            added = restart
            item.size = 0
        self.store.dispatch(item.uri, actions.data(added))
        item.size += len(added)

    async def _watch(self, item: _Running) -> None:
        """Publish the exit of the process once it exited and its output is read."""
        try:
            returncode = await item.process.wait()
            try:
                await asyncio.wait_for(item.process.output_closed.wait(), _KILL_GRACE)
            except TimeoutError:
                pass  # a background job still holds the pty; the terminal is over anyway
            tail = item.text.feed(b"", final=True)
            if tail:
                item.pending.append(tail)
            if self._running.get(item.uri) is not item:
                return
            self._flush(item)
            self._finish_command(item, exit_code_of(returncode))
            self.store.dispatch(item.uri, actions.exited(exit_code_of(returncode)))
            del self._running[item.uri]
            if item.owns_process:
                if item.process.background():
                    # The shell exited but a job it started (nohup, setsid, &) runs on: it goes
                    # when the terminal is disposed, with its session, or when the host stops.
                    self._background.keep(item.uri, item.process)
                else:
                    item.process.close()
            self._publish_list()
        except asyncio.CancelledError:
            raise
        except Exception:  # a terminal's bookkeeping failing must not take the host down
            logger.exception("watching terminal %s failed", item.uri)

    def _remove(self, uri: str) -> None:
        item = self._running.pop(uri, None)
        self._background.end(uri)
        self.store.remove(uri)
        self._publish_list()
        if item is not None:
            asyncio.get_running_loop().create_task(self._end(item))

    async def _end(self, item: _Running) -> None:
        """End the process group; a terminal still listed (host stop) shows how it ended."""
        self._running.pop(item.uri, None)
        if item.watcher is not None:
            item.watcher.cancel()
        try:
            returncode = await item.process.terminate(_KILL_GRACE)
            if item.uri in self.store and not actions.has_exited(self.store.state(item.uri) or {}):
                if item.owns_process:
                    self._finish_command(item, None)
                    self.store.dispatch(item.uri, actions.data(_STOPPED_NOTE))
                self.store.dispatch(item.uri, actions.exited(exit_code_of(returncode)))
        finally:
            if item.owns_process:
                item.process.close()

    def _trim_tool_terminals(self, session: Any) -> None:
        finished = [
            uri for uri, state in self.store.channels("terminal")
            if (state.get("claim") or {}).get("session") == session and (state.get("claim") or {}).get("toolCallId")
            and uri not in self._running
        ]
        for uri in finished[: max(0, len(finished) - TOOL_TERMINALS_KEPT)]:
            self._remove(uri)

    def _publish_list(self) -> None:
        action = actions.terminals_changed(self.store.channels("terminal"))
        if (self.store.state(ROOT) or {}).get("terminals", []) != action["terminals"]:
            self.store.dispatch(ROOT, action)

    def _observe(self, channel: str, before: dict[str, Any], after: dict[str, Any], envelope: dict[str, Any]) -> None:
        if self.store.kind(channel) != "terminal":
            return
        action = envelope.get("action") or {}
        kind = action.get("type")
        item = self._running.get(channel)
        if kind == "terminal/input" and item is not None and isinstance(action.get("data"), str):
            item.process.write(action["data"].encode("utf-8"))
        elif kind == "terminal/resized" and item is not None:
            item.process.resize(int(action["cols"]), int(action["rows"]))
        elif kind == "terminal/cleared":
            if item is not None and envelope.get("origin") is not None:
                item.size = 0
        elif kind in ("terminal/claimed", "terminal/titleChanged"):
            asyncio.get_running_loop().call_soon(self._publish_list)


class TerminalContributor(Contributor):
    """Gives each tool call an ``open_terminal`` that publishes its command as a terminal."""

    def __init__(self, terminals: TerminalService) -> None:
        self._terminals = terminals

    def tool_context(self, ctx: TurnContext, context: ToolContext) -> ToolContext:
        terminals = self._terminals
        claim: dict[str, Any] = {"kind": "session", "session": ctx.session, "chat": ctx.chat, "turnId": ctx.turn_id}
        if context.tool_call_id is not None:
            claim["toolCallId"] = context.tool_call_id
        cwd = context.working_directory

        def open_terminal(process: PtyProcess, title: str, command: str) -> dict[str, Any]:
            uri = terminals.attach(process, claim, title, command, cwd)
            return {"type": "terminal", "resource": uri, "title": title}

        context.open_terminal = open_terminal
        return context


def _dimension(value: Any, default: int) -> int:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 1 <= value <= 1000:
        return int(value)
    return default


def _exit_code(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _scrollback(state: dict[str, Any] | None) -> str:
    parts = (state or {}).get("content") or []
    return "".join(part.get("output") if part.get("type") == "command" else part.get("value") or "" for part in parts)
