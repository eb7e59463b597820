"""Session configuration before a session exists: ``resolveSessionConfig`` and
``sessionConfigCompletions`` (PROTOCOL.md §5.1).

Contract: ``SessionConfigResolver.resolve(params)`` returns the full ``{schema, values}`` for the
agent ``params.provider`` (default: the host's default agent) given what the user filled in so far
(``params.config``) — never a delta. The schema is built from what the host really offers:

* ``model`` — the agent's models (``AgentInfo.models``), ids with their names as labels;
* the chosen model's own ``configSchema`` properties (``reasoningEffort`` for OpenAI reasoning
  models, ``thinking`` for Anthropic ones) — so the schema changes when the model does, which is
  why the method is iterative;
* ``workingDirectory`` — ``enumDynamic``: completed from the directories sessions may work in;
* ``autoApprove`` — when the host runs tools (``sessionMutable``: it can be flipped later); besides
  booleans it takes VS Code's approval levels (``"default"``, ``"assisted"``, ``"autoApprove"``,
  ``"autopilot"``), kept as the boolean they mean here (``host.runtime.tools.session_config``);
* ``useRememberedApprovals`` — when the host runs tools (``sessionMutable``): which *Always allow*
  choices apply (``"all"``, ``"project"``, ``"none"``; ``host.runtime.tools.session_config``);
* ``permissionMode`` — when the host runs tools (``sessionMutable``): ``"default"``,
  ``"accept-edits"``, ``"plan"`` or ``"full-auto"`` (``host.runtime.tools.session_config``); when
  not given, VS Code's ``mode`` decides it if sent (``"plan"`` → ``"plan"``, ``"autopilot"`` →
  ``"full-auto"``), else ``[tools] permission_mode``.

VS Code 1.139.1 sends two more properties from its own settings, whatever this schema says; they
are accepted, and join the schema and the values only when sent:

* ``mode`` — ``"interactive"``, ``"plan"`` or ``"autopilot"``. ``"autopilot"`` runs tools without
  asking (as VS Code means it); each value also sets ``permissionMode`` (at creation when that is
  not given, and whenever VS Code changes ``mode`` later: ``host.runtime.tools.modes``).
* ``isolation`` — ``"folder"`` only: sessions run in their working directory itself. A
  ``"worktree"`` (or anything else) is refused, since this host makes no worktrees.

Every value the client sent is checked (an unknown model, an effort the model does not offer, a
directory outside ``[sessions] allowed_directories``) and refused with -32602 saying what is
allowed; values not sent get the host's defaults. The ``values`` are what ``createSession`` takes
as ``config``; ``model_selection(values)`` turns them into the session's ``ModelSelection`` (the
model id plus its own config), the form the agents read.

``completions(params)`` answers for ``property``: enum properties filtered by ``query`` (value or
label, case-insensitive); ``workingDirectory`` lists directories under the allowed roots whose
path starts with the query (an empty query lists the roots and the working directories of
existing sessions). No I/O beyond listing directories.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from host.errors import ErrorCode, RpcError
from host.resources.workdirs import WorkingDirectoryError, check_working_directory, directory_of
from host.runtime.agents import Agent
from host.runtime.tools.session_config import (
    AUTO_APPROVE,
    PERMISSION_MODE,
    REMEMBERED_USE,
    AutoApproveValueError,
    auto_approve_property,
    auto_approve_value,
    mode_for_vscode,
    permission_mode_property,
    remembered_use_property,
)

__all__ = ["SessionConfigResolver", "MODEL", "WORKING_DIRECTORY", "MODE", "ISOLATION"]

MODEL = "model"
WORKING_DIRECTORY = "workingDirectory"
MODE = "mode"
ISOLATION = "isolation"
_CLIENT_PROPERTIES: dict[str, dict[str, Any]] = {
    MODE: {
        "type": "string", "title": "Mode", "enum": ["interactive", "plan", "autopilot"], "default": "interactive",
        "description": "How the agent works: interactive asks before tools as the approval setting says; autopilot runs them "
                       "without asking; plan offers read-only tools until you approve the agent's plan.",
        "sessionMutable": True,
    },
    ISOLATION: {
        "type": "string", "title": "Isolation", "enum": ["folder"], "default": "folder", "readOnly": True,
        "description": "Sessions work in their working directory itself; this host makes no worktrees.",
    },
}
"""Properties VS Code sends from its own settings: in the schema only when a client sent them."""
_COMPLETION_LIMIT = 50


class SessionConfigResolver:
    def __init__(
        self,
        agents: Mapping[str, Agent],
        default_provider: Callable[[], str],
        allowed_directories: Callable[[], list[Path]],
        default_directory: Path,
        session_directories: Callable[[], Iterable[str]],
        auto_approve_default: bool | None,
        remembered_use_default: str = "all",
        permission_mode_default: str = "default",
        project_permission_mode: Callable[[str], str | None] | None = None,
    ) -> None:
        self._agents = agents
        self._default_provider = default_provider
        self._allowed = allowed_directories
        self._default_directory = default_directory
        self._session_directories = session_directories
        self._auto_approve_default = auto_approve_default
        """None when the host runs no tools: then there is nothing to approve."""
        self._remembered_use_default = remembered_use_default
        self.permission_mode_default = permission_mode_default
        self.project_permission_mode = project_permission_mode
        """The permission mode a working directory's own settings ask for (a trusted folder's
        Claude Code ``defaultMode``), or None; it replaces ``permission_mode_default`` there."""

    # -- resolveSessionConfig ------------------------------------------------------------------

    def resolve(self, params: Mapping[str, Any]) -> dict[str, Any]:
        given = dict(params.get("config") or {})
        if params.get("workingDirectory") is not None:
            given[WORKING_DIRECTORY] = params["workingDirectory"]
        properties, values = self._schema(params.get("provider"), given)
        unknown = sorted(set(given) - set(properties))
        if unknown:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"Unknown config properties {unknown}; this agent takes {sorted(properties)}.")
        return {"schema": {"type": "object", "properties": properties}, "values": values}

    def _schema(self, provider: Any, given: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        agent = self._agent(provider)
        properties: dict[str, Any] = {}
        values: dict[str, Any] = {}
        models = agent.info().get("models") or []
        if models:
            ids = [model["id"] for model in models]
            properties[MODEL] = {
                "type": "string", "title": "Model", "description": "The model that answers in this session.",
                "enum": ids, "enumLabels": [model.get("name") or model["id"] for model in models], "default": ids[0],
            }
            chosen = given.get(MODEL, ids[0])
            if chosen not in ids:
                raise RpcError(ErrorCode.INVALID_PARAMS, f"config.model {chosen!r} is not offered by {agent.provider}; pick one of {ids}.")
            values[MODEL] = chosen
            model_schema = next(model for model in models if model["id"] == chosen).get("configSchema") or {}
            for key, prop in (model_schema.get("properties") or {}).items():
                properties[key] = prop
                values[key] = _checked(key, prop, given[key]) if key in given else prop.get("default")
        properties[WORKING_DIRECTORY] = {
            "type": "string", "title": "Working directory", "enumDynamic": True,
            "description": "The directory the agent reads, edits and runs commands in.",
            "default": self._default_directory.as_uri(),
        }
        values[WORKING_DIRECTORY] = self._working_directory(given.get(WORKING_DIRECTORY))
        if self._auto_approve_default is not None or AUTO_APPROVE in given:  # a client's level is understood even without tools
            properties[AUTO_APPROVE] = auto_approve_property(bool(self._auto_approve_default))
            try:
                values[AUTO_APPROVE] = auto_approve_value(given.get(AUTO_APPROVE, bool(self._auto_approve_default)))
            except AutoApproveValueError as error:
                raise RpcError(ErrorCode.INVALID_PARAMS, str(error)) from None
        if self._auto_approve_default is not None:  # only a host that runs tools remembers approvals
            prop = remembered_use_property(self._remembered_use_default)
            properties[REMEMBERED_USE] = prop
            values[REMEMBERED_USE] = _checked(REMEMBERED_USE, prop, given[REMEMBERED_USE]) if REMEMBERED_USE in given else prop["default"]
            project_mode = self.project_permission_mode(values[WORKING_DIRECTORY]) if self.project_permission_mode else None
            prop = permission_mode_property(project_mode or self.permission_mode_default)
            properties[PERMISSION_MODE] = prop
            values[PERMISSION_MODE] = (_checked(PERMISSION_MODE, prop, given[PERMISSION_MODE]) if PERMISSION_MODE in given
                                       else mode_for_vscode(given.get(MODE)) or prop["default"])
        for key, prop in _CLIENT_PROPERTIES.items():
            if key in given:
                if key == ISOLATION and given[key] not in prop["enum"]:
                    raise RpcError(ErrorCode.INVALID_PARAMS, f"config.isolation {given[key]!r} cannot be honoured: this host runs "
                                   "sessions in their working directory itself (isolation 'folder') and makes no worktrees.")
                properties[key] = prop
                values[key] = _checked(key, prop, given[key])
        return properties, {key: value for key, value in values.items() if value is not None}

    def _agent(self, provider: Any) -> Agent:
        if provider is None:
            provider = self._default_provider()
        agent = self._agents.get(provider)
        if agent is None:
            known = ", ".join(sorted(self._agents)) or "none"
            raise RpcError(ErrorCode.PROVIDER_NOT_FOUND, f"No agent {provider!r} on this host (available: {known}).")
        return agent

    def _working_directory(self, uri: Any) -> str:
        if uri is None:
            return self._default_directory.as_uri()
        try:
            return check_working_directory(uri, self._allowed())
        except WorkingDirectoryError as error:
            raise RpcError(ErrorCode.INVALID_PARAMS, str(error)) from None

    @staticmethod
    def model_selection(values: Mapping[str, Any], properties: Mapping[str, Any]) -> dict[str, Any] | None:
        """The ``ModelSelection`` resolved values describe: the model and its own settings."""
        model = values.get(MODEL)
        if not isinstance(model, str):
            return None
        own = {key: values[key] for key in properties if key not in (MODEL, WORKING_DIRECTORY, AUTO_APPROVE, REMEMBERED_USE, PERMISSION_MODE, *_CLIENT_PROPERTIES) and key in values}
        return {"id": model, **({"config": own} if own else {})}

    # -- sessionConfigCompletions --------------------------------------------------------------

    def completions(self, params: Mapping[str, Any]) -> dict[str, Any]:
        given = dict(params.get("config") or {})
        given.pop(params["property"], None)  # the value being completed is what the user types
        if params.get("workingDirectory") is not None and params["property"] != WORKING_DIRECTORY:
            given[WORKING_DIRECTORY] = params["workingDirectory"]
        properties, _ = self._schema(params.get("provider"), given)
        name = params["property"]
        prop = properties.get(name)
        if prop is None:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"No config property {name!r}; this agent has {sorted(properties)}.")
        query = (params.get("query") or "").strip()
        if name == WORKING_DIRECTORY:
            return {"items": self._directories(query)}
        enum = prop.get("enum")
        if not enum:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"Config property {name!r} is a {prop.get('type')}; it has no values to complete.")
        labels = prop.get("enumLabels") or enum
        descriptions = prop.get("enumDescriptions") or [None] * len(enum)
        needle = query.lower()
        items = []
        for value, label, description in zip(enum, labels, descriptions):
            if needle in str(value).lower() or needle in str(label).lower():
                items.append({"value": value, "label": label, **({"description": description} if description else {})})
        return {"items": items[:_COMPLETION_LIMIT]}

    def _directories(self, query: str) -> list[dict[str, Any]]:
        roots = self._allowed()
        if not query:
            candidates = [*roots]
            for uri in self._session_directories():
                path = directory_of(uri)
                if path is not None and path not in candidates:
                    candidates.append(path)
            return [_directory_item(path) for path in candidates if path.is_dir()][:_COMPLETION_LIMIT]
        typed = directory_of(query) if query.startswith("file:") else Path(os.path.expanduser(query))
        if typed is None or not typed.is_absolute():
            return []
        if query.endswith("/"):
            parent, prefix = typed, ""
        else:
            parent, prefix = typed.parent, typed.name
        resolved_parent = Path(os.path.realpath(parent))
        items = []
        try:
            entries = sorted(os.scandir(resolved_parent), key=lambda entry: entry.name)
        except OSError:
            return []
        for entry in entries:
            if not entry.name.startswith(prefix) or not entry.is_dir() or (entry.name.startswith(".") and not prefix.startswith(".")):
                continue
            path = resolved_parent / entry.name
            if any(path == root or root in path.parents for root in roots):
                items.append(_directory_item(path))
            if len(items) >= _COMPLETION_LIMIT:
                break
        return items


def _directory_item(path: Path) -> dict[str, Any]:
    return {"value": path.as_uri(), "label": str(path)}


def _checked(key: str, prop: Mapping[str, Any], value: Any) -> Any:
    enum = prop.get("enum")
    if enum is not None and value not in enum:
        raise RpcError(ErrorCode.INVALID_PARAMS, f"config.{key} must be one of {enum}, not {value!r}.")
    if prop.get("type") == "boolean" and not isinstance(value, bool):
        raise RpcError(ErrorCode.INVALID_PARAMS, f"config.{key} must be true or false, not {value!r}.")
    return value
