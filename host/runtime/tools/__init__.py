"""Tools in sessions: built-in and client-provided tools, the confirmation flow and policy settings.

``ToolsRuntime`` is the entry point (one per host, ``AgentHost.tools``); see its module for how it
plugs into the turn environment and the store.
"""

from typing import TYPE_CHECKING

from ahp.lazy import lazy_exports

# The names load on first use (PEP 562): the host's start needs the remembered approvals
# (``remembered``, ``settings``, ``published``), not the tools runtime and the built-in tools
# (``host.session_services``, the start-up plan).
_WHERE = {
    "CLASH_PREFIX": "client_tools",
    "ClientDeparture": "client_tools",
    "ClientTool": "client_tools",
    "RESULT_REJECTED": "confirmation",
    "ConfirmingApprover": "confirmation",
    "ToolsRuntime": "runtime",
    "AUTO_APPROVE": "session_config",
    "AutoApproveValueError": "session_config",
    "auto_approve_of": "session_config",
    "with_auto_approve": "session_config",
    "SessionTools": "session_tools",
    "ToolSettings": "settings",
}

if TYPE_CHECKING:
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

__getattr__ = lazy_exports(__name__, _WHERE)
