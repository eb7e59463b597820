"""``agent-host`` (or ``agent-host code``) and ``agent-host -p``: the chat in this terminal, or one
message for a script, on the host of the user's data directory (``cli.shared_host``), which is
started in a process of its own when none runs. Exit codes are the chat's (``chat``, ``chat.oneshot``),
and 2 for a configuration error or a shared host that can be neither reached nor started.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from chat import run as run_chat
from cli import shared_host
from cli.config import load, user_config
from host.config import ConfigError
from host.runtime import memory

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    """The one-command mode: the chat in this terminal, on the data directory's shared host
    (started in a process of its own when none runs: ``cli.shared_host``)."""
    try:
        if args.config is None and user_config().is_file():
            args.config = str(user_config())
        config = load(args, {"host": "127.0.0.1", "port": 0, "data_dir": args.data_dir, "token": None})
    except ConfigError as error:
        print(f"agent-host: {error}", file=sys.stderr)
        return 2
    data_dir = config.data_path().resolve()  # the host starts in --cwd: a relative one means here

    def start() -> subprocess.Popen[bytes]:
        # -P: the project directory (its cwd) is not put on sys.path, so a project's own cli/main.py
        # is never what runs here.
        command = [sys.executable, "-P", "-m", "cli.main", "serve", "--for-terminal", "--data-dir", str(data_dir)]
        if args.config is not None:
            command += ["--config", str(Path(args.config).expanduser().resolve())]
        return subprocess.Popen(
            command, cwd=args.cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,  # Ctrl-C in this terminal is the chat's, not the host's
        )

    @asynccontextmanager
    async def shared() -> AsyncIterator[str]:
        identity = shared_host.config_identity(args.config, config.environ)
        def notice(text: str) -> None:
            print(f"agent-host: {text}", file=sys.stderr, flush=True)

        with shared_host.reach(data_dir, config=identity, directory=args.cwd, start=start, notice=notice) as url:
            memory.settle()  # this process is a client: the collector as usual from here
            yield url

    async def find_again() -> str:
        """For a chat whose host went away (killed, crashed): the host now, started again if need be."""
        identity = shared_host.config_identity(args.config, config.environ)
        return await asyncio.to_thread(shared_host.find_or_start, data_dir, identity, start)

    async def reload_config() -> str:
        """``/reload``: the host reads the config file again; what it took on and what waits."""
        fresh = load(args, {"host": "127.0.0.1", "port": 0, "data_dir": args.data_dir, "token": None})
        identity = shared_host.config_identity(args.config, fresh.environ)
        return await asyncio.to_thread(shared_host.reload_now, data_dir, identity)

    try:
        return run_chat(args, embedded=shared, find_host=find_again, reload_config=reload_config)
    except shared_host.SharedHostError as error:
        print(f"agent-host: {error}", file=sys.stderr)
        return 2
