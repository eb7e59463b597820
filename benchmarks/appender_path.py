"""Instructions per streamed token on a turn's own path through the store, without sockets or a
provider: a turn's appender (``TurnContext.appender``, as the turn runner builds the context) →
``Store.dispatch_streamed`` (the active-turn check, the channel's run, the embedded log's append
and frame, the journal's run) → the fan-out to one in-process subscriber of ``PROTOCOL``'s group,
then the journal's commit of that token (``Store.flush``: the tail's record), one token at a time;
closing the store at the end writes the tail's rows into SQLite, which every streamed token pays
once.

    valgrind --tool=callgrind --callgrind-out-file=/dev/null .venv/bin/python benchmarks/appender_path.py . 2000 0.9.0
    valgrind --tool=callgrind --callgrind-out-file=/dev/null .venv/bin/python benchmarks/appender_path.py . 6000 0.9.0

The difference of the two ``Collected`` totals over 4,000 is one token's instructions (start-up
cancels out); the first argument is the repository whose ``host`` is imported (a baseline's copy).
Deterministic to about ±100 instructions a token, where ``chunk_end_to_end.py`` moves by
thousands with the machine's load. No event loop turns between tokens (the end-of-tick machinery
and the connection's write are not in it).
"""

import asyncio
import sys
import tempfile

sys.path.insert(0, sys.argv[1])
N = int(sys.argv[2])
PROTOCOL = sys.argv[3] if len(sys.argv) > 3 else "0.9.0"


async def main() -> None:
    import functools

    from ahp.dialects.negotiation import Negotiated
    from benchmarks.fanout import open_turn
    from benchmarks.fanout_store import _Subscriber
    from host.config import load_config
    from host.runtime.agents.base import TurnContext
    from host.service import AgentHost
    from host.transport.dialects import dialect_for

    with tempfile.TemporaryDirectory() as data:
        config = load_config(None, overrides={"server": {"port": 0, "data_dir": data}}, environ={})
        host = AgentHost(config)
        await host.open()
        store = host.store
        public, chat, turn = open_turn(host)
        await asyncio.sleep(0.3)
        dialect = dialect_for(Negotiated(PROTOCOL, PROTOCOL))
        subscriber = _Subscriber(dialect.translator)
        target = public if PROTOCOL == "0.2.0" else chat
        for channel in dialect.internal_channels(host, target) or [chat]:
            store.subscribe(channel, subscriber, dialect.translator_for(host, target, channel))
        ctx = TurnContext(session="s", turn_id=turn, message={}, chat=chat,
                          _dispatch=store.dispatch, _dispatch_streamed=store.dispatch_streamed,
                          _commit_with_next_step=store.commit_with_next_step, _state=dict,
                          _chat_state=lambda: store.state(chat),
                          _active_turn_id=functools.partial(store.active_turn_id, chat))
        append = ctx.appender("chat/delta", "partId", "p")
        flush = store.flush
        for _ in range(50 + N):  # 50 untimed tokens: first-use caches
            append("tok ")
            flush()
            subscriber.frames.clear()
        assert subscriber.received == N + 50, subscriber.received
        await store.close()


asyncio.run(main())
