"""Agent backends the host can run sessions on (see ``base`` for the contract)."""

from host.agents.base import Agent, SessionCreationFailed, TurnContext, TurnEnded, TurnFailed
from host.agents.offline import OFFLINE_PROVIDER, OfflineAgent

__all__ = [
    "Agent",
    "TurnContext",
    "TurnEnded",
    "TurnFailed",
    "SessionCreationFailed",
    "OfflineAgent",
    "OFFLINE_PROVIDER",
]
