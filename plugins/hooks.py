"""Running plugin hook commands (FORMAT.md 3.6 and 7.5, Claude Code's runtime contract).

Contract:
- :func:`run_hook` runs one :class:`~plugins.model.Hook` as ``sh -c <command>`` in its own
  process group, writes the event payload as JSON to stdin and closes it, and waits at most the
  hook's timeout. On timeout (or if the awaiting task is cancelled) the whole process group is
  killed, so grandchildren a script spawned die too. It never raises for hook failures.
  A hook whose first line of output is ``{"async": true}`` (Claude Code's asynchronous answer) is
  left running: the call returns at once (``asynchronous``), and when the rest of its output is
  there (at most ``asyncTimeout`` ms later, default 15 s) ``on_background`` gets its result.
- Environment: the host env (``base_env``, default ``os.environ``) + the hook's declared env +
  ``PLUGIN_ROOT``/``CLAUDE_PLUGIN_ROOT``/``PLUGIN_DATA`` (the plugin's own values win).
  Working directory: the hook's ``cwd``, else ``cwd`` given by the host (the session's), else the
  plugin root.
- Result (:class:`HookResult`), as Claude Code reads a command hook's answer:
  exit 2 -> ``blocked`` with stderr as the reason; other non-zero exits -> ``error`` (the caller
  shows it to the user and goes on); timeout -> ``timeout``; a command that cannot start ->
  ``error``. Exit 0: stdout parsed when it is one JSON object; ``decision: "block"`` (and the older
  PreToolUse ``decision: "approve"``) and ``hookSpecificOutput.permissionDecision``
  (``allow``/``deny``/``ask`` with ``permissionDecisionReason``, ``updatedInput``) are read;
  ``deny`` or ``block`` make it ``blocked`` with their reason (a ``deny`` without one: its
  ``systemMessage``, so the model knows why); ``continue: false`` sets
  ``stop_reason`` (``stopReason``, the turn stops); ``systemMessage`` is for the user,
  ``hookSpecificOutput.additionalContext`` for the model, and so is the plain (non-JSON) stdout of
  ``SessionStart`` and ``UserPromptSubmit`` hooks; ``suppressOutput`` is kept. What each of these
  means for an event is the caller's (``host.runtime.customizations``).
- :func:`select_hooks` and :func:`hook_payload` are pure helpers; :func:`run_hooks` runs a
  selection in order and stops at the first block.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import child_processes
from plugins.model import Hook, HookEvent, LifecyclePoint, LoadedContainer

__all__ = ["HookOutcome", "HookResult", "hook_payload", "run_hook", "run_hooks", "select_hooks"]

_STDOUT_IS_CONTEXT = frozenset({HookEvent.SESSION_START, HookEvent.USER_PROMPT_SUBMIT})

_REASON_LIMIT = 4000
"""Reasons go to the model and the user; a runaway script must not flood either."""


class HookOutcome(str, Enum):
    """What running a hook means for the host."""

    SUCCESS = "success"
    BLOCKED = "blocked"
    ERROR = "error"
    TIMEOUT = "timeout"


@dataclass(frozen=True)
class HookResult:
    """The interpreted outcome of one hook run."""

    hook: Hook
    outcome: HookOutcome
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""
    reason: str | None = None
    """Why it blocked or failed, fit for showing to the user/model (never a traceback)."""
    output: dict[str, Any] | None = None
    """Stdout parsed as a JSON object, when it was one."""
    permission_decision: str | None = None
    """``allow`` | ``deny`` | ``ask`` from ``hookSpecificOutput``, for tool-call hooks."""
    permission_reason: str | None = None
    """``permissionDecisionReason``: shown in the confirmation (ask) or to the model (deny)."""
    additional_context: str | None = None
    """Text the hook asks to add to the model's context."""
    system_message: str | None = None
    """``systemMessage``: a notice for the user."""
    stop_reason: str | None = None
    """Set when the hook answered ``continue: false`` (its ``stopReason``, or a default)."""
    updated_input: dict[str, Any] | None = None
    """``hookSpecificOutput.updatedInput``: the tool input to use instead (Claude Code's names)."""
    suppress_output: bool = False
    """``suppressOutput``: the hook's stdout is not to be shown."""
    asynchronous: bool = False
    """The hook went on in the background (``async``); this result holds no answer."""

    @property
    def blocked(self) -> bool:
        return self.outcome is HookOutcome.BLOCKED

    @property
    def stopped(self) -> bool:
        """The hook asked to stop (``continue: false``)."""
        return self.stop_reason is not None


def hook_payload(event: HookEvent | str, *, session_id: str, cwd: str | Path, **fields: Any) -> dict[str, Any]:
    """The stdin JSON in Claude Code's shape: ``session_id``, ``cwd``, ``hook_event_name`` and
    per-event fields such as ``tool_name``, ``tool_input``, ``tool_response``, ``prompt``."""
    name = event.value if isinstance(event, HookEvent) else event
    payload: dict[str, Any] = {"session_id": session_id, "cwd": str(cwd), "hook_event_name": name}
    payload.update({key: value for key, value in fields.items() if value is not None})
    return payload


def select_hooks(containers: Iterable[LoadedContainer], when: HookEvent | LifecyclePoint,
                 subject: str | None = None, aliases: tuple[str, ...] = ()) -> list[Hook]:
    """Hooks of (enabled, already filtered by the caller) containers that fire for ``when``
    and whose matcher accepts ``subject`` (tool name, file path or command) or one of its
    ``aliases``. A broken plugin has no hooks, so it contributes nothing."""
    selected = []
    for container in containers:
        if container.state.kind == "error":
            continue
        for hook in container.hooks:
            fires = hook.event is when if isinstance(when, HookEvent) else hook.point is when
            if fires and hook.matches(subject, aliases):
                selected.append(hook)
    return selected


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _REASON_LIMIT else text[: _REASON_LIMIT - 1] + "…"


def _kill_group(process: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


async def run_hook(
    hook: Hook,
    payload: Mapping[str, Any],
    *,
    cwd: str | Path | None = None,
    base_env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    on_background: Callable[[HookResult], None] | None = None,
) -> HookResult:
    """Run one hook command with ``payload`` on stdin; ``timeout`` overrides the hook's.
    ``on_background`` receives the late result of a hook that answered ``{"async": true}``
    (without it, such a hook is waited for like any other)."""
    env = dict(os.environ if base_env is None else base_env)
    env.update(hook.env)
    workdir = hook.cwd or (Path(cwd) if cwd is not None else hook.plugin_root)
    limit = hook.timeout if timeout is None else timeout
    data = json.dumps(payload).encode("utf-8")
    try:
        process = await child_processes.create_subprocess_exec(
            "/bin/sh", "-c", hook.command,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            cwd=str(workdir), env=env, start_new_session=True,
        )
    except OSError as exc:
        return HookResult(hook, HookOutcome.ERROR, None,
                          reason=f"hook could not start in {workdir}: {exc.strerror or 'OS error'}")
    feeding = asyncio.ensure_future(_feed(process, data))
    errors = asyncio.ensure_future(_read_all(process.stderr))
    try:
        first = await asyncio.wait_for(_head(process), timeout=limit)
        answer = _json_object(first.split(b"\n", 1)[0].decode("utf-8", errors="replace")) if on_background is not None else None
        if answer is not None and answer.get("async") is True:
            wait = answer.get("asyncTimeout")
            wait = wait / 1000 if isinstance(wait, (int, float)) and not isinstance(wait, bool) and wait > 0 else _ASYNC_WAIT
            assert on_background is not None
            rest_of_first = first.split(b"\n", 1)[1] if b"\n" in first else b""
            task = asyncio.ensure_future(_finish_in_background(hook, process, rest_of_first, errors, wait, on_background))
            _BACKGROUND.add(task)  # held until done (the event loop keeps only weak references)
            task.add_done_callback(_BACKGROUND.discard)
            return HookResult(hook, HookOutcome.SUCCESS, None, stdout=first.decode("utf-8", errors="replace"), asynchronous=True)
        rest, stderr_bytes = await asyncio.wait_for(_rest(process, errors), timeout=limit)
    except TimeoutError:
        _kill_group(process)
        errors.cancel()
        await process.wait()
        return HookResult(hook, HookOutcome.TIMEOUT, None, reason=f"hook timed out after {limit:g} s and was killed")
    except BaseException:
        _kill_group(process)  # cancelled: leave no orphaned hook processes behind
        errors.cancel()
        raise
    finally:
        feeding.cancel()
    stdout = (first + rest).decode("utf-8", errors="replace")
    stderr = stderr_bytes.decode("utf-8", errors="replace")
    return _interpret(hook, process.returncode, stdout, stderr)


_HEAD_LIMIT = 1 << 20
"""The most output read before deciding whether a hook answered ``{"async": true}`` on its first line."""

_BACKGROUND: set[asyncio.Future[None]] = set()
"""Hooks that answered ``{"async": true}`` and are still running (their process group is killed
when their time is up; a session's hooks also end with its process family)."""

_ASYNC_WAIT = 15.0
"""Seconds a hook that answered ``{"async": true}`` has to finish (Claude Code's default)."""


async def _feed(process: asyncio.subprocess.Process, data: bytes) -> None:
    """Write the payload and close stdin, alongside the reading (a hook may print before it reads)."""
    assert process.stdin is not None
    try:
        process.stdin.write(data)
        await process.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the hook did not read its input: that is its choice
    finally:
        process.stdin.close()


async def _read_all(stream: asyncio.StreamReader | None) -> bytes:
    return await stream.read() if stream is not None else b""


async def _head(process: asyncio.subprocess.Process) -> bytes:
    """Output up to its first line end (or its end, or ``_HEAD_LIMIT`` bytes)."""
    assert process.stdout is not None
    head = b""
    while b"\n" not in head and len(head) < _HEAD_LIMIT:
        chunk = await process.stdout.read(65536)
        if not chunk:
            break
        head += chunk
    return head


async def _rest(process: asyncio.subprocess.Process, errors: asyncio.Future[bytes]) -> tuple[bytes, bytes]:
    out = await _read_all(process.stdout)
    err = await errors
    await process.wait()
    return out, err


async def _finish_in_background(hook: Hook, process: asyncio.subprocess.Process, head: bytes,
                                errors: asyncio.Future[bytes], wait: float,
                                deliver: Callable[[HookResult], None]) -> None:
    try:
        rest, stderr = await asyncio.wait_for(_rest(process, errors), timeout=wait)
    except TimeoutError:
        _kill_group(process)
        await process.wait()
        deliver(HookResult(hook, HookOutcome.TIMEOUT, None, reason=f"asynchronous hook ran over {wait:g} s and was killed"))
        return
    except BaseException:
        _kill_group(process)
        raise
    deliver(_interpret(hook, process.returncode, (head + rest).decode("utf-8", errors="replace"),
                       stderr.decode("utf-8", errors="replace")))


def _text(value: Any) -> str | None:
    return _clip(value) or None if isinstance(value, str) else None


def _interpret(hook: Hook, code: int | None, stdout: str, stderr: str) -> HookResult:
    if code == 2:
        reason = _clip(stderr) or "blocked by a plugin hook"
        return HookResult(hook, HookOutcome.BLOCKED, code, stdout, stderr, reason=reason)
    if code != 0:
        detail = _clip(stderr) or _clip(stdout)
        reason = f"hook exited with status {code}" + (f": {detail}" if detail else "")
        return HookResult(hook, HookOutcome.ERROR, code, stdout, stderr, reason=reason)
    output = _json_object(stdout)
    if output is None:
        # As in Claude Code: what these hooks print (not JSON) is context for the model.
        plain = _clip(stdout) if hook.event in _STDOUT_IS_CONTEXT else ""
        return HookResult(hook, HookOutcome.SUCCESS, code, stdout, stderr, additional_context=plain or None)
    specific = output.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    decision = specific.get("permissionDecision")
    decision = decision if decision in ("allow", "deny", "ask") else None
    permission_reason = _text(specific.get("permissionDecisionReason"))
    top = output.get("decision")
    if decision is None and top in ("approve", "block") and hook.event is HookEvent.PRE_TOOL_USE:
        # The older PreToolUse answer: ``approve`` / ``block`` with ``reason``.
        decision = "allow" if top == "approve" else "deny"
        permission_reason = permission_reason or _text(output.get("reason"))
    updated = specific.get("updatedInput")
    blocked_reason = None
    if decision == "deny":
        # With no reason of its own, the model is told the hook's message (hookify answers so).
        blocked_reason = permission_reason or _text(output.get("systemMessage")) or "denied by a plugin hook"
    elif top == "block":
        blocked_reason = _text(output.get("reason")) or "blocked by a plugin hook"
    stop_reason = None
    if output.get("continue") is False:
        stop_reason = _text(output.get("stopReason")) or "stopped by a plugin hook"
    outcome = HookOutcome.BLOCKED if blocked_reason is not None else HookOutcome.SUCCESS
    return HookResult(hook, outcome, code, stdout, stderr,
                      reason=_clip(blocked_reason) if blocked_reason else None,
                      output=output, permission_decision=decision, permission_reason=permission_reason,
                      additional_context=_text(specific.get("additionalContext")),
                      system_message=_text(output.get("systemMessage")), stop_reason=stop_reason,
                      updated_input=updated if isinstance(updated, dict) else None,
                      suppress_output=output.get("suppressOutput") is True)


def _json_object(stdout: str) -> dict[str, Any] | None:
    text = stdout.strip()
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


async def run_hooks(
    hooks: Sequence[Hook],
    payload: Mapping[str, Any],
    *,
    cwd: str | Path | None = None,
    base_env: Mapping[str, str] | None = None,
) -> list[HookResult]:
    """Run ``hooks`` one after another (declaration order); stop after the first block."""
    results = []
    for hook in hooks:
        result = await run_hook(hook, payload, cwd=cwd, base_env=base_env)
        results.append(result)
        if result.blocked:
            break
    return results
