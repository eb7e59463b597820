"""The protocol versions this host serves: the internal model (``ahp.state``, AHP 1.0.0 shapes, which
0.9.0 shares) and one folder per older wire version, each a projection of that model.

Contract: everything here is pure (no I/O). The host's edge picks one version per connection at
``initialize`` and nothing past the edge knows which one it was.

* ``negotiation``: which versions are served (``SERVED_VERSIONS``) and how a connection picks one
  (the 1.0.0 caret rule); the one table to change when a version is added or dropped.
* ``catalogue``: which action types, notifications and client methods each version knows.
* ``params``: a command's params checked against a version's vendored schema.
* ``v0_7/``: AHP 0.7.0 as a projection of the model, with its vendored data (``spec-0.7.0/``).
* ``v0_2/``: AHP 0.2.0, the session-centric line, as a projection of the model, with its own
  reducers (the reference its tests check against, and what 0.2.0 clients mirror with) and its
  wire (``wire/``: the generated 0.2.0 wire types, method table, action catalogue and vendored
  data, ``wire/spec/``).

1.0.0 and 0.9.0 need no folder: they are the model's own shapes (``ahp/protocol/spec-1.0.0/`` is
the model's vendored schema). A later version that only adds is rows in ``negotiation`` and
``catalogue``; one that changes shapes is a folder here beside ``v0_7``.
"""
