"""The protocol versions this host serves, each as a dialect of one internal model.

Contract: everything here is pure (no I/O). A dialect is an older wire version kept alive beside
the newest one: its own reducers (so clients of that version can mirror state exactly) and the
projection between its shapes and the internal model. The host's edge picks one dialect per
connection at ``initialize`` and nothing past the edge knows which one it was.

* ``catalogue``: which action types and notifications each version knows (``known_to``).
* ``v0_7``: AHP 0.7.0 as a projection of the internal 0.9.0 model (``ahp.state``).
* ``v0_2``: AHP 0.2.0, the session-centric line, with its own reducers.
"""
