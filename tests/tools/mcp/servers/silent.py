"""Test "MCP server" that never answers: it starts, never reads its stdin, never writes.

Usage: silent.py [--marker FILE]. With `--marker`, its pid is appended to FILE at start, so tests
can check the process is gone afterwards. Only a signal ends it (closing stdin does not).
"""

from __future__ import annotations

import os
import sys
import time

if "--marker" in sys.argv:
    with open(sys.argv[sys.argv.index("--marker") + 1], "a", encoding="utf-8") as marker:
        marker.write(f"{os.getpid()}\n")
while True:
    time.sleep(3600)
