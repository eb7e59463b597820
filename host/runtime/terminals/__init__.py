"""Terminals: pty processes published as AHP terminal channels (``ahp-terminal:/<id>``).

``TerminalService`` (one per host) runs the terminals clients create with ``createTerminal`` and
publishes the ``shell`` tool's commands (``TerminalContributor`` hands each tool call an
``open_terminal``); see ``host.runtime.terminals.service`` for the contract.
"""

from .service import TerminalContributor, TerminalService

__all__ = ["TerminalContributor", "TerminalService"]
