"""The AG-UI endpoint: web front ends built on AG-UI drive AHP sessions over one HTTP POST.

``agui_endpoint`` (``endpoint``) is the Starlette handler ``host.transport.server`` mounts at
``/agui``; ``AguiRuns`` (``runs``) maps threads to sessions and runs turns through the store;
``RunTranslator`` (``mapping``) is the pure AHP-actions → AG-UI-events translation.
"""

from typing import TYPE_CHECKING

from ahp.lazy import lazy_exports

# Loaded on first use (PEP 562): the ag_ui package takes a tenth of a second to import, which
# start-up should not pay for an endpoint most hosts never see a request on (host/startup.py).
_WHERE = {
    "agui_endpoint": "endpoint", "parse_run_input": "endpoint",
    "RunTranslator": "mapping", "token_usage": "mapping",
    "AguiRuns": "runs", "client_id_for": "runs", "session_uri_for": "runs", "thread_session": "runs",
}

if TYPE_CHECKING:
    from host.transport.agui.endpoint import agui_endpoint, parse_run_input
    from host.transport.agui.mapping import RunTranslator, token_usage
    from host.transport.agui.runs import AguiRuns, client_id_for, session_uri_for, thread_session


__getattr__ = lazy_exports(__name__, _WHERE)


__all__ = [
    "AguiRuns",
    "RunTranslator",
    "agui_endpoint",
    "client_id_for",
    "parse_run_input",
    "session_uri_for",
    "thread_session",
    "token_usage",
]
