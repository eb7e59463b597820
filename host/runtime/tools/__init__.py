"""Tools in sessions: built-in and client-provided tools, the confirmation flow and policy settings.

``ToolsRuntime`` is the entry point (one per host, ``AgentHost.tools``); see its module for how it
plugs into the turn environment and the store.
"""

from .client_tools import CLASH_PREFIX, ClientDeparture, ClientTool
from .confirmation import RESULT_REJECTED, ConfirmingApprover
from .runtime import ToolsRuntime
from .session_config import AUTO_APPROVE, AutoApproveValueError, auto_approve_of, with_auto_approve
from .session_tools import SessionTools
from .settings import ToolSettings

__all__ = [
    "AUTO_APPROVE",
    "AutoApproveValueError",
    "CLASH_PREFIX",
    "ClientDeparture",
    "ClientTool",
    "ConfirmingApprover",
    "RESULT_REJECTED",
    "SessionTools",
    "ToolSettings",
    "ToolsRuntime",
    "auto_approve_of",
    "with_auto_approve",
]
