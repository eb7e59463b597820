"""What of an edited config a running host takes on, and what waits for its next start. Pure.

``config_changes(running, edited)`` compares two loaded configs section by section and key by key:

* taken on at once (``RELOADABLE``): ``[agents]`` (the agents, their models, keys and prompts; a
  turn already running finishes on the agent it started with), ``[tools] allow``, ``ask`` and
  ``deny`` (the permission rules of every session's next tool call) and ``[sessions]
  default_agent``;
* everything else (the address and limits of ``[server]``, the data directory, ``[mcp]``,
  ``[plugins]``, ``[trust]``, the other ``[tools]`` keys, ...) is built into the host's parts as it
  starts: those keys are named as waiting for the next start, and the host keeps the values it has.

``merged(running, edited)`` is the config the host runs with after the reload: the edited values of
the reloadable keys over the running config.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from host.config import HostConfig

__all__ = ["RELOADABLE", "ConfigChanges", "config_changes", "merged"]

RELOADABLE = {"agents": None, "tools": ("allow", "ask", "deny"), "sessions": ("default_agent",)}
"""Per section, the keys a running host takes on (None: the whole section)."""


@dataclass(frozen=True)
class ConfigChanges:
    applied: tuple[str, ...]
    """The changed keys the host takes on now (``agents``, ``tools.allow``, ...)."""
    pending: tuple[str, ...]
    """The changed keys that wait for the host's next start."""


def _sections(config: HostConfig) -> dict[str, Any]:
    return config.model_dump(mode="json")


def config_changes(running: HostConfig, edited: HostConfig) -> ConfigChanges:
    """Which keys differ between ``running`` and ``edited``, split as the module docstring says.
    The API keys the agents read from the environment count as part of ``agents``."""
    before, after = _sections(running), _sections(edited)
    applied: list[str] = []
    pending: list[str] = []
    for section in sorted(set(before) | set(after)):
        old, new = before.get(section), after.get(section)
        keys = RELOADABLE.get(section, ())
        if section == "agents":
            if old != new or running.environ != edited.environ:
                applied.append("agents")
            continue
        if not isinstance(old, dict) or not isinstance(new, dict):
            if old != new:
                pending.append(section)
            continue
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                (applied if keys and key in keys else pending).append(f"{section}.{key}")
    return ConfigChanges(tuple(applied), tuple(pending))


def merged(running: HostConfig, edited: HostConfig) -> HostConfig:
    """``running`` with the reloadable keys of ``edited`` (see the module docstring)."""
    tools = running.tools.model_copy(update={key: getattr(edited.tools, key) for key in RELOADABLE["tools"] or ()})
    sessions = running.sessions.model_copy(update={key: getattr(edited.sessions, key) for key in RELOADABLE["sessions"] or ()})
    return running.model_copy(update={"agents": edited.agents, "environ": edited.environ, "tools": tools, "sessions": sessions})
