"""``ToolsRuntime``: tools in sessions, wired to the host's store, config and turn environment.

One per ``AgentHost`` (``host.tools``). ``install(environment)`` registers the ``SessionTools``
contributor and makes the ``ConfirmingApprover`` the environment's approver. The runtime watches
the store (an observer, so no polling) and:

* resolves the futures the approver and client tools wait on, from chat channels:
  ``chat/toolCallConfirmed``, ``chat/toolCallResultConfirmed``, a client's ``chat/toolCallComplete``
  (``ask`` goes through the host's ``host.runtime.inputs.InputRequests``, shared with MCP elicitation);
* publishes ``session/serverToolsChanged`` when a session becomes ready (and whenever
  ``publish_server_tools`` is called because a contributor's set changed, e.g. MCP);
* starts the grace period of a client that left a session's ``activeClients``
  (``session/activeClientRemoved``, or a set that replaced it; ``client_tools.ClientDeparture``);
* forgets the waiters of a turn that ended;
* fails a running client tool call whose owner declines it too late (``action_rejected``:
  validation refuses ``chat/toolCallConfirmed{approved: false}`` outside pending-confirmation, so
  per PROTOCOL.md §8 the host completes the call with ``success: false`` and the owner's reason,
  and the turn goes on).

Observers run inside ``Store.dispatch``; anything that dispatches is scheduled with ``call_soon``.

Policy state per session = configured rules (``[tools]``, then the session's Claude Code settings:
``session_settings``) + the "always allow" choices remembered for the
session's project and the host-wide ones (``ToolSettings``, read at every decision so a choice made
in one session applies to the project's other sessions at once; which of them apply follows the
session's ``useRememberedApprovals``) + the session's own "allow in this session" rules (also in
``ToolSettings``, keyed by session, so they survive a restart as the session does;
``session_disposed`` deletes them) + the session's ``autoApprove`` and ``permissionMode`` config
values (``modes`` makes the rest of each permission mode happen: plan mode's tools, the OS
sandbox; the observer keeps VS Code's ``mode`` and ``permissionMode`` in step).

The remembered choices are listed in the root config (``rememberedApprovals``, see
``host.runtime.tools.remembered``): ``publish_remembered`` puts the stored list there (at host
start and after every change), and the observer revokes what a client's ``root/configChanged``
removed from it, then publishes the list again.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ahp.protocol import builders
from host.config import ToolsConfig
from host.resources.workdirs import session_directory
from host.runtime.agents.base import TurnContext
from host.runtime.agents.environment import Contributor, TurnEnvironment
from host.runtime.inputs import InputRequests
from host.state.store import ROOT, Store
from tools.base import failure_result
from tools.builtin import builtin_tools
from tools.builtin.shell import ShellTool
from tools.content import ContentStore
from tools.policy import OptionEffect, PolicyState, Rule

from ._reporting import ContentReporters
from ._waiters import Waiters
from .client_tools import ClientDeparture, ClientTool, client_call_key
from .confirmation import ConfirmingApprover, confirm_key, result_key
from .modes import PermissionModes, SandboxRules, permission_mode_change, set_mode_action, vscode_mode_change
from .published import publish_remembered
from .remembered import ROOT_KEY, project_root, revoked
from .session_config import auto_approve_of, permission_mode_of, remembered_use_of
from .session_tools import SessionToolParts, SessionTools
from .settings import ToolSettings

__all__ = ["ToolsRuntime"]


class ToolsRuntime:
    def __init__(
        self, store: Store, config: ToolsConfig, content_store: ContentStore, inputs: InputRequests, *,
        settings: ToolSettings, private_directory: Path | None = None,
        readable_roots: Callable[[], Sequence[Path]] = tuple,
    ) -> None:
        self.store = store
        self.inputs = inputs
        self.config = config
        self.content_store = content_store
        self.settings = settings
        """The remembered approvals (the host opens them at start: it publishes them before sessions run)."""
        self.waiters = Waiters()
        self.reporters = ContentReporters()
        self.departure = ClientDeparture(store, config.client_tool_grace)
        # The host's own files (journal, content) change under every command; they are not the user's.
        untracked = (private_directory,) if private_directory is not None else ()
        self.builtins = [ShellTool(default_timeout=config.shell_timeout, untracked=untracked) if isinstance(t, ShellTool) else t
                         for t in builtin_tools()]
        self.extra_roots = tuple(Path(os.path.expanduser(root)).resolve() for root in config.extra_roots)
        self._rules = PolicyState.from_settings(allow=config.allow, ask=config.ask, deny=config.deny).rules
        self.session_settings: Callable[[str], tuple[Sequence[Rule], Sequence[str]]] = lambda session: ((), ())
        """A session's rules and extra edit folders from its Claude Code settings (the host sets it)."""
        self.approver = ConfirmingApprover(
            waiters=self.waiters, reporters=self.reporters, policy=self.policy, remember=self.remember,
            needs_result_confirmation=self.needs_result_confirmation, project=self.project,
        )
        self.contributor = SessionTools(SessionToolParts(
            builtins=self.builtins, extra_roots=self.extra_roots, untracked=untracked, content_store=self.content_store,
            waiters=self.waiters, reporters=self.reporters, departure=self.departure,
            other_server_tool_names=self.other_server_tool_names, reconfirm=self.approver.reconfirm, ask=self.ask,
            readable_roots=readable_roots,
        ))
        self.modes = PermissionModes(self.set_mode, sandbox=config.sandbox, network=config.sandbox_network,
                                     extra_roots=self.extra_roots, rules=SandboxRules(
                                         environment=tuple(config.sandbox_environment),
                                         hidden=(*untracked, *(Path(os.path.expanduser(p)) for p in config.sandbox_hidden)),
                                         unix_sockets=tuple(Path(os.path.expanduser(p)) for p in config.sandbox_unix_sockets)))
        self.environment: TurnEnvironment | None = None
        store.change_observers.append(self._observe)
        store.rejection_observers.append(self.action_rejected)

    def install(self, environment: TurnEnvironment) -> None:
        self.environment = environment
        environment.contributors.append(self.contributor)
        environment.contributors.append(self.modes)
        environment.approver = self.approver

    def set_rules(self, *, allow: Sequence[str], ask: Sequence[str], deny: Sequence[str]) -> None:
        """The host's ``[tools]`` permission rules from now on (a config reload); ``ConfigError``
        for a bad rule, with the rules unchanged."""
        self._rules = PolicyState.from_settings(allow=list(allow), ask=list(ask), deny=list(deny)).rules

    def close(self) -> None:
        self.departure.close()
        self.settings.close()

    # -- policy --------------------------------------------------------------------------------

    def policy(self, session: str) -> PolicyState:
        state = self.store.state(session) or {}
        directory = session_directory(state)
        project = self.project(session)
        use = remembered_use_of(state)
        settings_rules, settings_folders = self.session_settings(session)
        return PolicyState(
            rules=(*self._rules, *settings_rules),
            always_allow=self.settings.project_allow(project) if project is not None and use != "none" else (),
            host_allow=self.settings.host_allow() if use == "all" else (),
            session_allow=self.settings.session_allow(session),
            auto_approve=auto_approve_of(state),
            working_directory=str(directory) if directory is not None else None,
            permission_mode=permission_mode_of(state),
            edit_roots=(*(str(root) for root in self.extra_roots), *settings_folders),
        )

    def set_mode(self, session: str, mode: str) -> None:
        """Switch the session's permission mode (as a client would: every client sees it)."""
        self.store.dispatch(session, set_mode_action(mode))

    def project(self, session: str) -> str | None:
        """The path of the session's project ("always" choices are kept for it), or None."""
        directory = session_directory(self.store.state(session) or {})
        return str(project_root(directory)) if directory is not None else None

    def remember(self, session: str, effect: OptionEffect) -> None:
        """Keep what a chosen option added: session rules, and "always" rules for the session's project."""
        self.settings.add_session(session, (str(rule) for rule in effect.state.session_allow))
        if effect.persist:
            self.settings.add(effect.persist, self.project(session))
            self.publish_remembered()

    def publish_remembered(self) -> None:
        """Make the root config's ``rememberedApprovals`` the stored list (if it is not already)."""
        publish_remembered(self.store, self.settings)

    def _revoke_removed(self, after: dict[str, Any]) -> None:
        value = ((after.get("config") or {}).get("values") or {}).get(ROOT_KEY)
        for rule, project in revoked(self.settings.remembered(), value):
            self.settings.revoke(rule, project)
        asyncio.get_running_loop().call_soon(self.publish_remembered)

    def needs_result_confirmation(self, tool_name: str) -> bool:
        return any(fnmatch.fnmatchcase(tool_name, pattern) for pattern in self.config.result_confirmation)

    # -- server tools --------------------------------------------------------------------------

    def other_server_tool_names(self, ctx: TurnContext, me: Contributor) -> set[str]:
        names: set[str] = set()
        for contributor in self.environment.contributors if self.environment else ():
            if contributor is not me:
                names.update(tool.name for tool in contributor.tools(ctx) if not isinstance(tool, ClientTool))
        return names

    def server_tools(self, session: str) -> list[dict[str, Any]]:
        """The ``ToolDefinition``s of every server tool the session's turns are offered."""
        ctx = TurnContext(session, "", {}, lambda channel, action: None, lambda: self.store.state(session))
        seen: dict[str, dict[str, Any]] = {}
        for contributor in self.environment.contributors if self.environment else [self.contributor]:
            for tool in contributor.tools(ctx):
                if not isinstance(tool, ClientTool):
                    seen.setdefault(tool.name, tool.definition())
        return list(seen.values())

    def publish_server_tools(self, session: str) -> None:
        """Dispatch ``session/serverToolsChanged`` if the session's server tools changed."""
        state = self.store.state(session)
        if state is None or state.get("lifecycle") != "ready":
            return
        tools = self.server_tools(session)
        if state.get("serverTools") != tools:
            self.store.dispatch(session, builders.session_server_tools_changed(tools=tools))

    # -- asking the user -----------------------------------------------------------------------

    async def ask(self, ctx: TurnContext, request: dict) -> dict:
        return await self.inputs.ask(ctx.chat, request)

    def session_disposed(self, session: str) -> None:
        """Delete what the user allowed in a disposed session (and in any other session gone)."""
        self.settings.forget_session(session)
        self.settings.forget_sessions_except(name for name, _ in self.store.channels("session"))

    # -- refused client actions ----------------------------------------------------------------

    def action_rejected(self, chat: str, action: dict[str, Any], client_id: str) -> None:
        """React to a client action validation refused; only an owner's late denial matters."""
        if action.get("type") != "chat/toolCallConfirmed" or action.get("approved") is not False:
            return
        state = self.store.state(chat) or {}
        turn_id, call_id = action.get("turnId"), action.get("toolCallId")
        call = _running_call(state, turn_id, call_id)
        if call is None or not client_id or _client_of(call) != client_id:
            return
        assert isinstance(turn_id, str) and isinstance(call_id, str)  # they found a running call
        title = call.get("displayName") or call.get("toolName") or "the tool"
        self.store.dispatch(chat, builders.chat_tool_call_complete(
            turn_id=turn_id, tool_call_id=call_id,
            result=failure_result(f"Did not run {title}", _declined_text(action), "declined_by_client"),
        ))

    # -- observing the store -------------------------------------------------------------------

    def _observe(self, channel: str, before: dict[str, Any], after: dict[str, Any], envelope: dict[str, Any]) -> None:
        kind_of_channel = self.store.kind(channel)
        action = envelope.get("action") or {}
        kind = action.get("type")
        if channel == ROOT:
            if kind == "root/configChanged" and (ROOT_KEY in (action.get("config") or {}) or action.get("replace")):
                self._revoke_removed(after)
            return
        if kind_of_channel == "session":
            if kind in ("session/activeClientSet", "session/activeClientRemoved"):
                self.departure.active_changed(channel, before, after)
            elif kind == "session/ready":
                asyncio.get_running_loop().call_soon(self.publish_server_tools, channel)
            elif kind == "session/configChanged":
                follow = vscode_mode_change(after, action) or permission_mode_change(after, action)
                if follow is not None:  # VS Code's ``mode`` and ``permissionMode`` say the same thing
                    asyncio.get_running_loop().call_soon(self.store.dispatch, channel, builders.session_config_changed(config=follow))
            return
        if kind_of_channel != "chat":
            return
        turn_id = action.get("turnId")
        call_id = action.get("toolCallId")
        if not isinstance(turn_id, str) or not isinstance(call_id, str):
            pass  # no waiter is keyed by a missing id
        elif kind == "chat/toolCallConfirmed":
            self._resolve_if_waiting(confirm_key(channel, turn_id, call_id), action)
        elif kind == "chat/toolCallResultConfirmed":
            self._resolve_if_waiting(result_key(channel, turn_id, call_id), action)
        elif kind == "chat/toolCallComplete" and _is_client_call(before, turn_id, call_id):
            self.waiters.resolve(client_call_key(channel, turn_id, call_id), action.get("result"))
        ended = before.get("activeTurn")
        if isinstance(ended, dict) and (after.get("activeTurn") or {}).get("id") != ended.get("id"):
            self._forget_turn(channel, ended.get("id"))

    def _resolve_if_waiting(self, key: tuple, value: Any) -> None:
        if self.waiters.waiting(key):
            self.waiters.resolve(key, value)

    def _forget_turn(self, chat: str, turn_id: Any) -> None:
        def ended(key: Any) -> bool:
            return isinstance(key, tuple) and len(key) >= 3 and key[1] == chat and key[2] == turn_id

        self.waiters.drop(ended)
        self.approver.forget_turn(chat, turn_id)


def _is_client_call(state: dict[str, Any], turn_id: Any, call_id: Any) -> bool:
    turn = state.get("activeTurn")
    if not isinstance(turn, dict) or turn.get("id") != turn_id:
        return False
    for part in turn.get("responseParts") or ():
        call = part.get("toolCall") if part.get("kind") == "toolCall" else None
        if call is not None and call.get("toolCallId") == call_id:
            return _client_of(call) is not None and call.get("status") in ("running", "pending-confirmation")
    return False


def _running_call(state: dict[str, Any], turn_id: Any, call_id: Any) -> dict[str, Any] | None:
    turn = state.get("activeTurn")
    if not isinstance(turn, dict) or turn.get("id") != turn_id:
        return None
    for part in turn.get("responseParts") or ():
        call = part.get("toolCall") if part.get("kind") == "toolCall" else None
        if call is not None and call.get("toolCallId") == call_id and call.get("status") == "running":
            return call
    return None


def _client_of(call: dict[str, Any]) -> str | None:
    """The clientId of the client that runs ``call``; None for host and MCP tools."""
    contributor = call.get("contributor")
    if isinstance(contributor, dict) and contributor.get("kind") == "client" and isinstance(contributor.get("clientId"), str):
        return contributor["clientId"]
    return None


def _declined_text(action: dict[str, Any]) -> str:
    text = "The client that provides this tool declined to run it."
    for key, label in (("reasonMessage", "Its reason"), ("userSuggestion", "Suggested instead")):
        value = action.get(key)
        value = value.get("markdown") or value.get("text") if isinstance(value, dict) else value
        if isinstance(value, str) and value.strip():
            text += f" {label}: {value.strip()}"
    return text

