"""What one session's customizations are at run time: its containers (host plugins, the active
client's plugins, workspace directories), the files in play, its MCP servers and hook firing.

Invariants:
- Only ``usable`` containers (enabled, not ``error``) contribute anything: hooks, rules, skills,
  agents, slash entries, MCP servers. The running MCP servers' prompts are slash entries too. A broken plugin therefore never runs a hook or starts a server.
- Container order is stable: host plugins (configuration order), client plugins, directories;
  rules, skills and hooks follow it.
- Hooks run as one process family per session (``tools.processes``: the token in their
  environment): what a hook leaves running in the background is ended with the session
  (``CustomizationService.close_session``), at host stop too, and after a ``kill -9`` by the
  next start.
- Hooks get Claude Code's input (``fire``): ``session_id`` (the session's id), ``transcript_path``
  (``transcript``, brought up to date first), ``cwd``, ``permission_mode`` and, for tool events,
  the call in Claude Code's words (``HookCall`` through ``plugins.claude_code_tools``), whose ``if``
  conditions are checked against it. ``async`` hooks run in ``background`` (cancelled with the
  session); what they say joins ``late_context`` (for the model's next turn) and ``notices``.
- Custom agents a ``task`` call may name (``custom_agents``): a plugin's as ``plugin:agent``, a
  folder's by its bare name; ``resolve_agent`` also takes a bare name that only one agent has.
- ``read_roots`` are the folders the model may read with the file tools besides the session's own:
  the roots of usable plugins and the folders of usable skills (never writable).
- ``touched`` is the session's recent file activity (attachments and tool-call paths, relative
  to the working directory when inside it), bounded to the most recent ``TOUCHED_LIMIT``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlparse

import plugins
from host.runtime.customizations._containers import Container
from host.runtime.customizations.mcp import SessionMcp
from host.runtime.customizations.transcript import HookTranscript
from host.state.sessions import session_id
from plugins.claude_code_tools import claude_name, claude_permission_mode, host_rules, matcher_names, to_claude_input
from tools import processes
from tools.policy import PolicyState, decide, parse_rule

__all__ = ["HookCall", "SessionCustomizations", "TOUCHED_LIMIT"]

logger = logging.getLogger(__name__)

TOUCHED_LIMIT = 200

NOTICE_LIMIT = 50
"""The most hook messages kept for the next turn (for the user, and for the model)."""



class SessionCustomizations:
    """The runtime customization state of one session."""

    def __init__(self, session: str, working_directory: Path | None) -> None:
        self.session = session
        self.working_directory = working_directory
        self.containers: list[Container] = []
        self.touched: dict[str, None] = {}
        self.mcp: SessionMcp | None = None
        self.mcp_started = asyncio.Event()
        """Set once the session's MCP servers were asked to start (a first turn waits for it)."""
        self.reconciles_queued = 0
        """Reconciles of its MCP servers asked for (trust given, a plugin toggled...) that have not
        run yet: a turn starting meanwhile applies them first, so its tools are what they say."""
        self.mcp_wanted = False
        """Whether its MCP servers should run: from its first turn (or at open, with
        ``[mcp] start = "session"``) until they are stopped for being idle."""
        self.idle_stop: asyncio.TimerHandle | None = None
        """The pending idle stop of its MCP servers, if any."""
        self.idle_since: float | None = None
        """Event-loop time its last turn ended (or its last client left, with no turn since)."""
        self.hooks_started = asyncio.Event()
        """Set once the SessionStart hooks ran (a first turn waits for their context)."""
        self.session_context: list[str] = []
        """What SessionStart hooks asked to add to the model's context (output styles...)."""
        self.folder: str | None = os.path.realpath(working_directory) if working_directory is not None else None
        """The working directory without symlinks: what workspace trust is decided for."""
        self.trusted = False
        """Whether the host trusts ``folder`` (``host.runtime.trust``)."""
        self.settings_env: dict[str, str] = {}
        """Claude Code settings' ``env``: set for the session's tools, hooks and MCP servers."""
        self.settings_rules: tuple[Any, ...] = ()
        """Claude Code settings' permission rules (``tools.policy.Rule``) for this session."""
        self.settings_directories: tuple[str, ...] = ()
        """Claude Code settings' ``additionalDirectories``: folders its tools may work in too."""
        self.settings_notes: tuple[Any, ...] = ()
        """What the project's settings files hold that cannot be used (their container shows it)."""
        self.trusted_here = False
        """Whether the user trusted ``folder`` for this session only."""
        self.question: asyncio.Future[dict[str, Any]] | None = None
        """The open trust question, if any."""
        self.declined = False
        """The user answered the trust question with no: it is not asked again in this session."""
        self.start_source = "startup"
        """The ``source`` of its SessionStart hooks: ``resume`` once a restored session was resumed
        (also for hooks a folder trusted later releases)."""
        self.resume_pending = False
        """A session restored at host start: its SessionStart hooks (``source: "resume"``) and trust
        question wait until a client resumes it."""
        self.family = processes.new_family()
        """The process family of its hooks (``tools.processes``): what a hook leaves running in the
        background (``cmd &``, ``nohup``, ``setsid``) runs on until the session closes."""
        self.hooks_ran = False
        self.session_ended = False
        self.directory_stamps: dict[str, tuple[Any, ...]] = {}
        """Per workspace folder container: what its files looked like when it was read."""
        """Its ``SessionEnd`` hooks ran (a script's run ended): they run once."""
        self.session_id = session_id(session) or session
        """The ``session_id`` hooks get: the session's id, not its URI (scripts make file names of it)."""
        self.transcript: HookTranscript | None = None
        """The session's Claude Code-shaped transcript (``transcript_path``), set by the service."""
        self.permission_mode: Callable[[], str | None] = lambda: None
        """The session's permission mode (``tools.policy`` words), read when a hook runs."""
        self.notices: list[str] = []
        """What hooks said for the user (``systemMessage``, failures), until a turn shows it."""
        self.late_context: list[str] = []
        """What hooks that ran in the background said for the model, until its next request."""
        self.background: set[asyncio.Task[Any]] = set()
        """Hooks running in the background (``async``)."""
        self.tool_notes: dict[str, list[str]] = {}
        """``additionalContext`` of PreToolUse hooks, by tool call id, until the call's result goes to the model."""
        self.catalogue_used: dict[str, None] = {}
        """Skills the model loaded in this session, oldest first: listed first in the catalogue."""
        self.catalogue_query: str | None = None
        """The message the session's catalogues are ranked by: its first, kept so that they stay
        the same from request to request (a provider's prompt cache covers them)."""

    @property
    def folder_trusted(self) -> bool:
        """Whether what the folder brings may run in this session."""
        return self.trusted or self.trusted_here

    # -- containers ----------------------------------------------------------------------------

    def container(self, container_id: str | None) -> Container | None:
        return next((c for c in self.containers if c.id == container_id), None)

    def usable(self) -> list[plugins.LoadedContainer]:
        return [c.usable for c in self.containers if c.usable is not None]

    def wire(self) -> list[dict[str, Any]]:
        return [container.wire() for container in self.containers]

    def slash_entries(self) -> list[plugins.SlashEntry]:
        """The usable skills, commands and prompts, then the running MCP servers' prompts
        (``/mcp__<server>__<prompt>``, see ``host.runtime.customizations.mcp_prompts``)."""
        entries = plugins.slash_entries(self.usable())
        if self.mcp is not None:
            entries.extend(plugins.SlashEntry(name=prompt.name, short_name=prompt.name, kind="prompt", target=prompt,  # type: ignore[arg-type]  # plugins cannot name the host's McpPrompt
                                              container=f"MCP server {prompt.server}", description=prompt.description,
                                              argument_hint=prompt.argument_hint)
                           for prompt in self.mcp.prompt_entries())
        return entries

    def agent(self, selection: dict[str, Any] | None) -> plugins.Agent | None:
        """The custom agent an ``AgentSelection`` names (by its child ``uri``), if still usable."""
        uri = selection.get("uri") if isinstance(selection, dict) else None
        if not isinstance(uri, str):
            return None
        for container in self.containers:
            loaded = container.usable
            if loaded is None:
                continue
            for agent in loaded.agents:
                if _uri_of(container, agent.path) == uri:
                    return agent
        return None

    def custom_agents(self) -> list[tuple[str, plugins.Agent, str]]:
        """Every usable custom agent as ``(name, agent, uri)``: a plugin's agent is named
        ``plugin:agent``, so two plugins' agents of one name are both reachable; a folder's keeps
        its bare name (the first of a name wins)."""
        found: dict[str, tuple[str, plugins.Agent, str]] = {}
        for container in self.containers:
            loaded = container.usable
            if loaded is None:
                continue
            for agent in loaded.agents:
                name = f"{loaded.name}:{agent.name}" if isinstance(loaded, plugins.LoadedPlugin) else agent.name
                found.setdefault(name, (name, agent, _uri_of(container, agent.path)))
        return list(found.values())

    def read_roots(self) -> tuple[Path, ...]:
        """Folders the model may read besides the session's own (see the module docstring)."""
        roots: dict[Path, None] = {}
        for loaded in self.usable():
            if isinstance(loaded, plugins.LoadedPlugin):
                roots[loaded.root] = None
                continue
            for skill in loaded.skills:
                if skill.path.name == "SKILL.md":
                    roots[skill.folder] = None
        return tuple(roots)

    def agent_container(self, selection: dict[str, Any] | None) -> Container | None:
        agent = self.agent(selection)
        if agent is None:
            return None
        return next((c for c in self.containers if c.usable is not None and agent in c.usable.agents), None)

    def rules(self) -> list[tuple[plugins.LoadedContainer, plugins.Rule]]:
        return [(loaded, rule) for loaded in self.usable() for rule in loaded.rules]

    def instruction_files(self) -> list[str]:
        """The instruction files in the prompt (AGENTS.md, CLAUDE.md...) and what they imported,
        relative to the working directory where possible."""
        shown: list[str] = []
        for loaded in self.usable():
            if not isinstance(loaded, plugins.LoadedDirectory) or loaded.files is None:
                continue
            for rule in loaded.rules:
                shown.append(rule.name)
                shown.extend(f"{self._relative(path)} (imported)" for path in rule.imports)
        return shown

    def _relative(self, path: Path) -> str:
        if self.working_directory is not None:
            try:
                return str(path.relative_to(self.working_directory.resolve()))
            except ValueError:
                pass
        return str(path)

    # -- files in play -------------------------------------------------------------------------

    def touch(self, path: str | Path) -> None:
        text = str(path)
        if text.startswith("file://"):
            text = unquote(urlparse(text).path)
        candidate = Path(text)
        if candidate.is_absolute() and self.working_directory is not None:
            try:
                candidate = candidate.resolve().relative_to(self.working_directory.resolve())
            except (ValueError, OSError):
                return  # outside the workspace: globs are relative to it, so nothing can match
        key = candidate.as_posix()
        self.touched.pop(key, None)
        self.touched[key] = None
        while len(self.touched) > TOUCHED_LIMIT:
            self.touched.pop(next(iter(self.touched)))

    def in_play(self, rule: plugins.Rule) -> bool:
        return any(rule.applies_to(path) for path in self.touched)

    # -- hooks ---------------------------------------------------------------------------------

    def fires(self, when: plugins.HookEvent | plugins.LifecyclePoint, subject: str | None = None) -> bool:
        """Whether a usable container has a hook for ``when`` whose matcher accepts ``subject``
        (before its ``if`` condition): what ``fire`` would run is worth its payload."""
        return bool(plugins.select_hooks(self.usable(), when, subject))

    async def fire(self, when: plugins.HookEvent | plugins.LifecyclePoint, subject: str | None = None, *,
                   only: set[str] | None = None, call: HookCall | None = None, **fields: Any) -> list[plugins.HookResult]:
        """Run the hooks of usable containers (``only`` those ids, when given) that fire for
        ``when`` and whose matcher accepts ``subject`` (a tool event: the ``call``'s Claude Code
        name), one after another, with Claude Code's event JSON on stdin; stops after the first that
        blocks or stops. A tool event's payload has ``tool_name``/``tool_input`` in Claude Code's
        words, and its hooks' ``if`` conditions are checked against the call. Hooks with
        ``async`` run in the background (not in the results). Every hook's ``systemMessage`` and
        failure joins ``notices``."""
        aliases: tuple[str, ...] = ()
        if call is not None:
            subject = claude_name(call.name)
            aliases = (call.name, *matcher_names(call.name))
        usable = [c.usable for c in self.containers if c.usable is not None and (only is None or c.id in only)]
        selected = plugins.select_hooks(usable, when, subject, aliases)
        if not selected:
            return []  # (before the working directory's ``stat``: nearly every event of a turn has no hook)
        cwd = self.working_directory if self.working_directory is not None and self.working_directory.is_dir() else None
        if call is not None:
            fields = {"tool_name": subject,
                      "tool_input": to_claude_input(call.name, call.arguments, cwd=str(cwd) if cwd else None),
                      "tool_use_id": call.tool_use_id, **fields}
        hooks = [hook for hook in selected if self._condition_holds(hook, call, cwd)]
        if not hooks:
            return []
        transcript = self._sync_transcript()
        results = []
        for hook in hooks:
            self.hooks_ran = True
            payload = plugins.hook_payload(hook.event, session_id=self.session_id, cwd=cwd or hook.plugin_root,
                                           transcript_path=str(transcript) if transcript is not None else None,
                                           permission_mode=claude_permission_mode(self.permission_mode()), **fields)
            if hook.run_async:
                self._in_background(self._run_async(hook, payload, cwd))
                continue
            result = await self._run(hook, payload, cwd)
            results.append(result)
            if result.blocked or result.stopped:
                break
        return results

    def _environment(self) -> dict[str, str]:
        # CLAUDE_PROJECT_DIR: the session's project, as Claude Code gives every hook (the user's
        # own settings hooks read it from here; a project's hooks had it filled in at load).
        project = {"CLAUDE_PROJECT_DIR": str(self.working_directory)} if self.working_directory is not None else {}
        return {**os.environ, **project, **self.settings_env, processes.FAMILY_VARIABLE: self.family}

    async def _run(self, hook: Any, payload: dict[str, Any], cwd: Path | None) -> plugins.HookResult:
        result = await plugins.run_hook(hook, payload, cwd=cwd, base_env=self._environment(), on_background=self._late)
        self._note(result)
        return result

    async def _run_async(self, hook: Any, payload: dict[str, Any], cwd: Path | None) -> None:
        self._late(await plugins.run_hook(hook, payload, cwd=cwd, base_env=self._environment()))

    def _late(self, result: plugins.HookResult) -> None:
        """A hook that ran in the background finished: as in Claude Code, what it says (its
        ``systemMessage``, its ``additionalContext``, an ``asyncRewake`` hook's exit 2) reaches
        the model with the next turn; the user sees its messages and failures."""
        self._note(result)
        told = [text for text in (result.system_message, result.additional_context) if text]
        hook = result.hook
        if result.blocked and hook.async_rewake and result.reason:
            told.append(f"{hook.rewake_message}\n{result.reason}" if hook.rewake_message else result.reason)
            self.notices.append(f"{hook.rewake_summary}: {result.reason}" if hook.rewake_summary
                                else f"A {_event_name(result)} hook that ran in the background reports: {result.reason}")
        self.late_context.extend(f"[{_event_name(result)} hook, ran in the background] {text}" for text in told)
        del self.late_context[:-NOTICE_LIMIT]

    def _note(self, result: plugins.HookResult) -> None:
        if result.system_message:
            self.notices.append(result.system_message)
        if result.outcome.value in ("error", "timeout"):
            logger.info("hook %s (%s) for %s: %s", result.hook.command, result.hook.event.value, self.session, result.reason)
            self.notices.append(f"A plugin's {_event_name(result)} hook failed ({result.reason}); the session goes on.")
        del self.notices[:-NOTICE_LIMIT]  # hooks outside turns (background, notifications) keep the newest

    def _in_background(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    def take_notices(self) -> list[str]:
        notices, self.notices = self.notices, []
        return notices

    def take_late_context(self) -> list[str]:
        late, self.late_context = self.late_context, []
        return late

    async def end_background(self) -> None:
        """Cancel the hooks still running in the background (their process groups are killed)."""
        tasks = list(self.background)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _sync_transcript(self) -> Path | None:
        if self.transcript is None:
            return None
        try:
            return self.transcript.sync()
        except OSError as error:  # a full disk must not stop the hooks
            logger.warning("transcript of %s could not be written: %s", self.session, error)
            return self.transcript.path if self.transcript.path.exists() else None

    def _condition_holds(self, hook: Any, call: HookCall | None, cwd: Path | None) -> bool:
        """A hook's ``if`` (a Claude Code permission rule) holds for the call: checked with
        ``tools.policy`` as a deny rule would be (any part of a chained command matches)."""
        if hook.condition is None:
            return True
        if call is None or call.tool is None:
            return False
        try:
            rules = host_rules(hook.condition, settings_root=str(hook.plugin_root), home=os.path.expanduser("~"))
        except ValueError:
            return False
        if not rules:
            return False
        state = PolicyState(rules=tuple(parse_rule(rule, "deny") for rule in rules),
                            working_directory=str(cwd) if cwd is not None else None)
        decision = decide(call.tool, dict(call.arguments), state)
        return decision.outcome == "deny" and decision.rule is not None


@dataclass(frozen=True)
class HookCall:
    """The tool call a tool event's hooks are about, in this host's words."""

    name: str
    arguments: Mapping[str, Any]
    tool: Any = None
    """The ``tools.base.Tool`` (for ``if`` conditions); None when the session has no such tool."""
    tool_use_id: str | None = None


def _event_name(result: plugins.HookResult) -> str:
    return result.hook.event.value


def _uri_of(container: Container, path: Path) -> str:
    """The URI a child was published under (a client plugin's URIs are its own)."""
    loaded = container.loaded
    if container.uri and isinstance(loaded, plugins.LoadedPlugin):
        try:
            relative = path.relative_to(loaded.root).as_posix()
        except ValueError:
            return path.absolute().as_uri()
        return container.uri.rstrip("/") + "/" + quote(relative)
    return path.absolute().as_uri()
