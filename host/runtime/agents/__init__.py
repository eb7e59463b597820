"""Agent backends the host can run sessions on (see ``base`` for the contract).

``OfflineAgent`` is the embedded echo agent; ``ProviderAgent`` runs turns against a model
provider (``provider``), built from the config by ``build_agents`` (``catalog``); tools are
approved through the ``ToolApprover`` seam (``tooling``).
"""

from host.runtime.agents.base import Agent, SessionCreationFailed, TurnContext, TurnEnded, TurnFailed, TurnStopped
from host.runtime.agents.catalog import agent_from_config, build_agents, default_agent_configs
from host.runtime.agents.offline import OFFLINE_PROVIDER, OfflineAgent
from host.runtime.agents.provider import ModelSpec, ProviderAgent, ProviderSource, StaticSource, TurnSettings
from host.runtime.agents.replay import ReplaySource
from host.runtime.agents.sources import SdkSource
from host.runtime.agents.tooling import Approval, AutoApprover, ToolApprover, ToolCallRequest

__all__ = [
    "Agent",
    "TurnContext",
    "TurnEnded",
    "TurnStopped",
    "TurnFailed",
    "SessionCreationFailed",
    "OfflineAgent",
    "OFFLINE_PROVIDER",
    "ProviderAgent",
    "ProviderSource",
    "StaticSource",
    "SdkSource",
    "ReplaySource",
    "ModelSpec",
    "TurnSettings",
    "ToolApprover",
    "AutoApprover",
    "ToolCallRequest",
    "Approval",
    "build_agents",
    "agent_from_config",
    "default_agent_configs",
]
