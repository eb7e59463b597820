"""AHP 0.2.0: the session-centric dialect (one conversation per session, ``session/*`` turn actions),
served as a projection of the internal model (``ahp.state``, AHP 0.9.0).

* ``state``: the 0.2.0 reducers exactly as the official 0.2.0 TypeScript reducers behave (what a
  0.2.0 client computes; the reference the projection is checked against).
* ``states``: channel states down (``session_down`` & co.: what a 0.2.0 client is shown) and up
  (``session_lift`` & co.: the internal state a 0.2.0 state stands for, e.g. to migrate a journal).
* ``actions_down``: an internal envelope as zero or more 0.2.0 actions (and whether that is exact).
* ``actions_up``: a 0.2.0 action (a client's ``dispatchAction``, or a journal's) as internal
  envelopes, or why it cannot be taken.
* ``shapes``, ``uris``, ``timestamps``: the renamed objects, the session URIs of both models, and
  exact epoch-ms <-> ISO 8601 conversion.

The commutation laws that make every 0.2.0 client converge are stated in ``actions_down`` and
``actions_up`` and checked in ``tests/ahp/dialects/v0_2/``.
"""

from ahp.lazy import lazy_exports

_WHERE = {
    "CLIENT_DISPATCHABLE": "actions_up",
    "Down": "actions_down",
    "InternalSession": "states",
    "Up": "actions_up",
    "action_down": "actions_down",
    "action_up": "actions_up",
    "changeset_down": "states",
    "changeset_lift": "states",
    "default_chat_uri": "uris",
    "internal_session_uri": "uris",
    "resource_watch_down": "states",
    "resource_watch_lift": "states",
    "root_down": "states",
    "root_lift": "states",
    "session_down": "states",
    "session_lift": "states",
    "summary_changes": "states",
    "summary_down": "states",
    "terminal_down": "states",
    "terminal_lift": "states",
    "v02_session_uri": "uris",
}

__all__ = sorted(_WHERE)

# Lazy: clients import ``ahp.dialects.v0_2.state`` (the reducers) and should not pay for the
# projection, whose refusals read the 0.2.0 action catalogue (``ahp.dialects.v0_2.wire``, pydantic).
__getattr__ = lazy_exports(__name__, _WHERE)
