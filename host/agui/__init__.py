"""The AG-UI endpoint: web front ends built on AG-UI drive AHP sessions over one HTTP POST.

``agui_endpoint`` (``endpoint``) is the Starlette handler mounted at ``AGUI_PATH``; ``AguiRuns``
(``runs``) maps threads to sessions and runs turns through the store; ``RunTranslator``
(``mapping``) is the pure AHP-actions → AG-UI-events translation.
"""

from host.agui.endpoint import AGUI_PATH, agui_endpoint, parse_run_input
from host.agui.mapping import RunTranslator, token_usage
from host.agui.runs import AguiRuns, client_id_for, session_uri_for

__all__ = [
    "AGUI_PATH",
    "AguiRuns",
    "RunTranslator",
    "agui_endpoint",
    "client_id_for",
    "parse_run_input",
    "session_uri_for",
    "token_usage",
]
