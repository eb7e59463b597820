"""Parsers for JSON component configs: hooks (FORMAT.md 3.6) and MCP servers (3.7).

Contract:
- Input is already-decoded JSON plus the span table of the file it came from, so servers and
  inline hook blocks get a ``range``. Parsers never raise; they report and skip.
- Hooks: the wrapped form ``{"hooks": {Event: [rule...]}}`` (files) or, inline in a manifest,
  either that or the flat ``{Event: [rule...]}``. A rule is ``{matcher?, hooks: [action...]}``
  or a flat action (Cursor/Copilot CLI). Only ``command`` actions run; ``prompt``/``agent``/
  ``http`` actions are skipped with an info note. Unknown events are ignored (info).
  An invalid matcher regex skips its rule (problem). Claude Code's per-action fields: ``if`` (a
  permission rule; tool events only, elsewhere the hook is skipped with a warning, as it would
  never run), ``async``, ``asyncRewake`` (runs like ``async``, with a warning saying how it
  differs; its ``rewakeMessage``/``rewakeSummary`` are used), ``once`` and ``statusMessage`` (accepted, an info note says they have no effect).
- MCP: documents are read by ``plugins.mcp_servers`` (the one MCP declaration parser), with
  the plugin root as the base and default ``cwd`` of stdio servers.
- Strings are expanded per :mod:`plugins.expand`; relative ``cwd`` values resolve against
  the plugin root, which is also the default ``cwd`` of stdio servers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import plugins._schema as schema
from plugins._collect import Report
from plugins._jsonspan import Span
from plugins.claude_code_tools import host_rules
from plugins.diagnostics import Severity
from plugins.expand import expand_config, expand_hook_command
from plugins.mcp_servers import parse_server, server_entries
from plugins.model import DEFAULT_HOOK_TIMEOUT, Hook, HookEvent, McpServer

__all__: list[str] = []

_NOT_FIRED = {
    HookEvent.PERMISSION_REQUEST: "this host does not fire PermissionRequest hooks (a PreToolUse hook's permissionDecision "
                                  "allow/ask/deny decides about the confirmation instead)",
}
"""Events this host parses but never fires, and what to use instead."""

_TOOL_EVENTS = frozenset({HookEvent.PRE_TOOL_USE, HookEvent.POST_TOOL_USE, HookEvent.POST_TOOL_USE_FAILURE,
                          HookEvent.PERMISSION_REQUEST})
"""The events whose hooks may have an ``if`` condition (Claude Code evaluates it on tool calls only)."""

JsonPath = tuple["str | int", ...]

def parse_hook_events(
    events: Any,
    *,
    source: Path,
    plugin_root: Path,
    plugin_vars: Mapping[str, str],
    environ: Mapping[str, str],
    report: Report,
    where: tuple[str, ...] = ("hooks",),
) -> tuple[Hook, ...]:
    """Parse an ``{Event: [rule, ...]}`` map into runnable hooks, in declaration order."""
    if not isinstance(events, dict):
        report(Severity.PROBLEM, where, "expected a mapping of event names to lists of rules; hooks skipped")
        return ()
    hooks: list[Hook] = []
    for event_name, rules in events.items():
        event = HookEvent.parse(event_name)
        at = where + (event_name,)
        if event is None:
            report(Severity.INFO, at, "unknown hook event (ignored)")
            continue
        if event in _NOT_FIRED:
            report(Severity.INFO, at, _NOT_FIRED[event])
        if not isinstance(rules, list):
            report(Severity.PROBLEM, at, "expected a list of hook rules; event skipped")
            continue
        for index, rule in enumerate(rules):
            hooks.extend(
                _parse_rule(rule, event, at + (str(index),), source, plugin_root, plugin_vars, environ, report)
            )
    return tuple(hooks)


def _parse_rule(
    rule: Any,
    event: HookEvent,
    at: tuple[str, ...],
    source: Path,
    plugin_root: Path,
    plugin_vars: Mapping[str, str],
    environ: Mapping[str, str],
    report: Report,
) -> list[Hook]:
    if not isinstance(rule, dict):
        report(Severity.PROBLEM, at, "expected a hook rule object; skipped")
        return []
    values = schema.HOOK_RULE.validate(rule, report, at)
    matcher = values.get("matcher")
    if matcher is not None and matcher not in ("", "*"):  # "*" and "" mean every subject (Claude Code)
        try:
            re.compile(matcher)
        except re.error as exc:
            report(Severity.PROBLEM, at + ("matcher",), f"not a valid regular expression ({exc.msg}); rule skipped")
            return []
    if "hooks" in rule:
        actions = rule["hooks"]
        if not isinstance(actions, list):
            report(Severity.PROBLEM, at + ("hooks",), "expected a list of hook actions; rule skipped")
            return []
        action_list = [(action, at + ("hooks", str(i))) for i, action in enumerate(actions)]
    elif "command" in rule or "bash" in rule:
        action_list = [({k: v for k, v in rule.items() if k != "matcher"}, at)]
    else:
        report(Severity.PROBLEM, at, "a hook rule needs a 'hooks' list; skipped")
        return []
    hooks = []
    for action, action_at in action_list:
        hook = _parse_action(action, event, matcher, action_at, source, plugin_root, plugin_vars, environ, report)
        if hook is not None:
            hooks.append(hook)
    return hooks


def _parse_action(
    action: Any,
    event: HookEvent,
    matcher: str | None,
    at: tuple[str, ...],
    source: Path,
    plugin_root: Path,
    plugin_vars: Mapping[str, str],
    environ: Mapping[str, str],
    report: Report,
) -> Hook | None:
    if not isinstance(action, dict):
        report(Severity.PROBLEM, at, "expected a hook action object; skipped")
        return None
    values = schema.HOOK_ACTION.validate(action, report, at)
    kind = values.get("type", "command")
    if kind != "command":
        report(Severity.INFO, at + ("type",), f"{kind!r} hook actions are not run by this host (skipped)")
        return None
    command = values.get("command") or values.get("bash")
    if not command or not command.strip():
        report(Severity.PROBLEM, at + ("command",), "a command hook needs a command; skipped")
        return None
    timeout = values.get("timeout", values.get("timeoutSec", DEFAULT_HOOK_TIMEOUT))
    env = {k: expand_config(v, plugin_vars, environ) for k, v in values.get("env", {}).items()}
    env.update(plugin_vars)
    cwd = values.get("cwd")
    condition = values.get("if")
    if condition is not None:
        if event not in _TOOL_EVENTS:
            report(Severity.WARNING, at + ("if",), f"'if' applies to tool events only; as in Claude Code, this "
                                                   f"{event.value} hook never runs (skipped)")
            return None
        try:
            if "(" in condition and not condition.rstrip().endswith(")"):
                raise ValueError("its parenthesis is not closed")
            rules = host_rules(condition, settings_root=str(plugin_root), home=environ.get("HOME"))
        except ValueError as exc:
            report(Severity.PROBLEM, at + ("if",), f"not a permission rule such as 'Bash(git *)' ({exc}); hook skipped")
            return None
        if not rules:
            report(Severity.WARNING, at + ("if",), f"{condition!r} names no tool this host has, so the hook never runs (skipped)")
            return None
    run_async = bool(values.get("async", False))
    rewake = bool(values.get("asyncRewake", False))
    if rewake:
        report(Severity.WARNING, at + ("asyncRewake",),
               "this host does not start a turn by itself: the hook runs in the background like 'async', and "
               "when it exits with status 2 its message is given to the model with the next turn")
    if values.get("once"):
        report(Severity.INFO, at + ("once",), "'once' applies to hooks declared by skills; this hook runs every time")
    if values.get("statusMessage"):
        report(Severity.INFO, at + ("statusMessage",), "not shown: this host shows a hook's messages, not a spinner text")
    return Hook(
        event=event,
        command=expand_hook_command(command, plugin_vars),
        plugin_root=plugin_root,
        source=source,
        matcher=matcher,
        timeout=timeout if timeout > 0 else DEFAULT_HOOK_TIMEOUT,
        env=env,
        cwd=_resolve_cwd(expand_config(cwd, plugin_vars, environ), plugin_root) if cwd else None,
        condition=condition,
        run_async=run_async or rewake,
        async_rewake=rewake,
        rewake_message=values.get("rewakeMessage"),
        rewake_summary=values.get("rewakeSummary"),
    )


def parse_hooks_document(
    data: Any,
    *,
    source: Path,
    plugin_root: Path,
    plugin_vars: Mapping[str, str],
    environ: Mapping[str, str],
    report: Report,
    allow_flat: bool = False,
) -> tuple[Hook, ...]:
    """A hooks file (or inline block): wrapped ``{"hooks": {...}}``; flat only if allowed."""
    if not isinstance(data, dict):
        report(Severity.PROBLEM, (), "hooks config must be a JSON object; skipped")
        return ()
    if isinstance(data.get("hooks"), dict):
        values = schema.HOOKS_FILE.validate(data, report)
        if values.get("disableAllHooks"):
            report(Severity.INFO, ("disableAllHooks",), "all hooks in this file are disabled")
            return ()
        return parse_hook_events(
            data["hooks"], source=source, plugin_root=plugin_root, plugin_vars=plugin_vars,
            environ=environ, report=report,
        )
    if allow_flat:
        return parse_hook_events(
            data, source=source, plugin_root=plugin_root, plugin_vars=plugin_vars,
            environ=environ, report=report, where=(),
        )
    report(Severity.PROBLEM, ("hooks",), "required key is missing (expected {\"hooks\": {Event: [...]}}); skipped")
    return ()


def parse_mcp_document(
    data: Any,
    *,
    source: Path,
    spans: Mapping[JsonPath, Span],
    span_prefix: JsonPath,
    plugin_root: Path,
    plugin_vars: Mapping[str, str],
    environ: Mapping[str, str],
    report: Report,
) -> list[McpServer]:
    """Servers of one MCP config, wrapped or flat; ``span_prefix`` locates ``data`` in its file."""
    result = []
    where = tuple(str(part) for part in span_prefix)
    for name, entry, at in server_entries(data, report, where):
        server = parse_server(
            name, entry, report=report, at=at, path=source, plugin_root=plugin_root, variables=plugin_vars,
            environ=environ, base_dir=plugin_root, default_cwd=plugin_root, exported=plugin_vars,
        )
        if server is not None:
            result.append(_with_range(server, spans.get(span_prefix + at[len(where):])))
    return result


def _with_range(server: McpServer, span: Span | None) -> McpServer:
    return replace(server, range=span)




def _resolve_cwd(value: str, plugin_root: Path) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else plugin_root / path
