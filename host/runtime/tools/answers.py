"""Who answered a tool call's confirmation, as the tool call's ``_meta`` records it.

A module of its own so that the connection's checks (``host.transport.access``,
``host.transport.action_checks``) read the key without loading the confirmation flow, which the
host builds with its session services after it listens (``host.session_services``).
"""

from __future__ import annotations

__all__ = ["ANSWERED_BY"]

ANSWERED_BY = "answeredBy"
"""The key of a tool call's ``_meta`` that says who answered its confirmation: ``clientId`` and,
for a named token, ``tokenName`` (``host.transport.access.recorded_answer``)."""
