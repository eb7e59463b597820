"""Open Plugins customizations and MCP servers in sessions (issue 5, host side).

``CustomizationService`` loads the host's plugins, publishes each session's customization tree
and runs its MCP servers and hooks; ``CustomizationContributor`` makes them act on turns through
the ``TurnEnvironment`` seam; ``complete_user_message`` answers the ``completions`` command.
"""

from host.runtime.customizations.completions import complete_user_message
from host.runtime.customizations.contributor import CustomizationContributor
from host.runtime.customizations.mcp import SessionMcp
from host.runtime.customizations.service import ALWAYS_LISTED_DIRECTORIES, CustomizationService
from host.runtime.customizations.session import SessionCustomizations
from host.runtime.customizations.skills import RULE_TOOL, SKILL_TOOL, LoadTextTool

__all__ = [
    "ALWAYS_LISTED_DIRECTORIES",
    "CustomizationContributor",
    "CustomizationService",
    "LoadTextTool",
    "RULE_TOOL",
    "SKILL_TOOL",
    "SessionCustomizations",
    "SessionMcp",
    "complete_user_message",
]
