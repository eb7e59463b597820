"""``cli.serve_process``: ``agent-host serve`` as a child process, as the tests and benchmarks that
run real host processes start, read and stop it."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.serve_process import ServeProcess, serving_pid
from client import AhpClient
from tests.conftest import TOKEN


async def test_a_started_host_answers_at_the_url_it_printed_and_stopping_it_returns_what_it_printed(tmp_path: Path) -> None:
    host = ServeProcess(["--data-dir", str(tmp_path / "data")], token=TOKEN)
    try:
        url = await host.start()
        assert url.startswith("ws://127.0.0.1:") and host.address == url.split("?")[0]
        client = await AhpClient.connect(url)
        await client.initialize()
        assert host.process is not None
        assert serving_pid(client._conn._ws.local_address[1], host.port, [host.process.pid]) == host.process.pid  # type: ignore[union-attr]
        await client.close()
    finally:
        printed = host.stop()
    assert url in printed and "Traceback" not in printed
    assert host.process.returncode == 0


async def test_a_host_that_ends_before_it_listens_is_an_error_that_says_what_it_printed(tmp_path: Path) -> None:
    host = ServeProcess(["--data-dir", str(tmp_path), "--cluster", "http://127.0.0.1:4222"], token=TOKEN)
    with pytest.raises(RuntimeError, match="ended without printing its URL.*cluster.url"):
        await host.start()
    host.stop()
