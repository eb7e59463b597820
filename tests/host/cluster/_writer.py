"""A writer process for the cluster tests: ``python -m tests.host.cluster._writer URL SESSION COUNT
[LEASE_TTL]`` claims SESSION on the JetStream log at URL, appends COUNT envelopes to its default
chat in ticks of 10 (``{"action": {"type": "test/step", "writer": SESSION, "i": i}}``), prints
``seq <serverSeq> <i>`` for each as it is stored, then ``done`` and, until killed, keeps its lease
renewed. A refused claim or append prints ``refused <error class>`` and exits 3."""

from __future__ import annotations

import asyncio
import sys

from ahp.state.channels import default_chat_uri
from host.cluster.jetstream_log import JetStreamLog
from host.state.log import LogError


async def main(url: str, session: str, count: int, ttl: float) -> int:
    log = await JetStreamLog.connect(url, holder=f"writer-{session}", lease_ttl=ttl)
    chat = default_chat_uri(session)
    try:
        await log.claim(session)
        for start in range(0, count, 10):
            tick = [log.append(chat, 0, {"action": {"type": "test/step", "writer": session, "i": i}, "serverSeq": 0})
                    for i in range(start, min(start + 10, count))]
            for i, (envelope_json, _frame) in enumerate(await asyncio.gather(*tick), start):
                print("seq", envelope_json.rsplit('"serverSeq":', 1)[1].rstrip("}"), i, flush=True)
    except LogError as error:
        print("refused", type(error).__name__, flush=True)
        return 3
    print("done", flush=True)
    await asyncio.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]) if len(sys.argv) > 4 else 6.0)))
