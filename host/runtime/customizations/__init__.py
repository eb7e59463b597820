"""Open Plugins customizations and MCP servers in sessions (issue 5, host side).

``CustomizationService`` loads the host's plugins, publishes each session's customization tree
and runs its MCP servers and hooks; ``CustomizationContributor`` makes them act on turns through
the ``TurnEnvironment`` seam; ``complete_user_message`` answers the ``completions`` command.
"""

from typing import TYPE_CHECKING

from ahp.lazy import lazy_exports

# The names load on first use (PEP 562): the host's start needs the Claude Code set-up
# (``claude_code``, ``claude_config``) and the completion triggers, not the customization service
# (``host.session_services``, the start-up plan).
_WHERE = {
    "complete_user_message": "completions",
    "CustomizationContributor": "contributor",
    "SessionMcp": "mcp",
    "ALWAYS_LISTED_DIRECTORIES": "service",
    "CustomizationService": "service",
    "SessionCustomizations": "session",
    "RULE_TOOL": "skills",
    "SKILL_TOOL": "skills",
    "LoadTextTool": "skills",
}

if TYPE_CHECKING:
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

__getattr__ = lazy_exports(__name__, _WHERE)
