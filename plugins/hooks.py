"""Running plugin hook commands (FORMAT.md 3.6 and 7.5, Claude Code's runtime contract).

Contract:
- :func:`run_hook` runs one :class:`~plugins.model.Hook` as ``sh -c <command>`` in its own
  process group, writes the event payload as JSON to stdin and closes it, and waits at most the
  hook's timeout. On timeout (or if the awaiting task is cancelled) the whole process group is
  killed, so grandchildren a script spawned die too. It never raises for hook failures.
- Environment: the host env (``base_env``, default ``os.environ``) + the hook's declared env +
  ``PLUGIN_ROOT``/``CLAUDE_PLUGIN_ROOT``/``PLUGIN_DATA`` (the plugin's own values win).
  Working directory: the hook's ``cwd``, else ``cwd`` given by the host (the session's), else the
  plugin root.
- Result (:class:`HookResult`): exit 0 -> ``success`` (stdout parsed when it is one JSON object;
  ``decision: "block"`` or ``hookSpecificOutput.permissionDecision: "deny"`` or ``continue:
  false`` turn it into ``blocked`` with their reason; ``hookSpecificOutput.additionalContext`` is
  context for the model, and so is the plain, non-JSON stdout of ``SessionStart`` and
  ``UserPromptSubmit`` hooks, as in Claude Code); exit 2 -> ``blocked`` with stderr as the
  reason; other exits -> ``error`` (non-blocking); timeout -> ``timeout`` (non-blocking);
  a command that cannot start -> ``error``.
- :func:`select_hooks` and :func:`hook_payload` are pure helpers; :func:`run_hooks` runs a
  selection in order and stops at the first block.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

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
    additional_context: str | None = None
    """Text the hook asks to add to the model's context."""

    @property
    def blocked(self) -> bool:
        return self.outcome is HookOutcome.BLOCKED


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
) -> HookResult:
    """Run one hook command with ``payload`` on stdin; ``timeout`` overrides the hook's."""
    env = dict(os.environ if base_env is None else base_env)
    env.update(hook.env)
    workdir = hook.cwd or (Path(cwd) if cwd is not None else hook.plugin_root)
    limit = hook.timeout if timeout is None else timeout
    data = json.dumps(payload).encode("utf-8")
    try:
        process = await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", hook.command,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            cwd=str(workdir), env=env, start_new_session=True,
        )
    except OSError as exc:
        return HookResult(hook, HookOutcome.ERROR, None,
                          reason=f"hook could not start in {workdir}: {exc.strerror or 'OS error'}")
    try:
        stdout_bytes, stderr_bytes = await asyncio.wait_for(process.communicate(data), timeout=limit)
    except TimeoutError:
        _kill_group(process)
        await process.wait()
        return HookResult(hook, HookOutcome.TIMEOUT, None, reason=f"hook timed out after {limit:g} s and was killed")
    except BaseException:
        _kill_group(process)  # cancelled: leave no orphaned hook processes behind
        raise
    stdout = stdout_bytes.decode("utf-8", errors="replace")
    stderr = stderr_bytes.decode("utf-8", errors="replace")
    return _interpret(hook, process.returncode, stdout, stderr)


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
    context = specific.get("additionalContext")
    context = context if isinstance(context, str) else None
    blocked_reason = None
    if output.get("continue") is False:
        blocked_reason = str(output.get("stopReason") or "stopped by a plugin hook")
    elif output.get("decision") == "block":
        blocked_reason = str(output.get("reason") or "blocked by a plugin hook")
    elif decision == "deny":
        blocked_reason = str(specific.get("permissionDecisionReason") or "denied by a plugin hook")
    outcome = HookOutcome.BLOCKED if blocked_reason is not None else HookOutcome.SUCCESS
    return HookResult(hook, outcome, code, stdout, stderr,
                      reason=_clip(blocked_reason) if blocked_reason else None,
                      output=output, permission_decision=decision, additional_context=context)


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
