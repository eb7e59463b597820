"""Provider test fixtures: the live-network switch is off (only 127.0.0.1 is reachable)."""

from __future__ import annotations

import socket

import pytest


@pytest.fixture(autouse=True)
def no_live_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection that is not to 127.0.0.1 fails the test (record mode 'none')."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def guard(address: object) -> None:
        host = address[0] if isinstance(address, tuple) else None
        if host not in {"127.0.0.1", "::1", "localhost"} and not isinstance(address, (str, bytes)):
            raise AssertionError(f"live network call to {address!r} in an offline test")

    def connect(self: socket.socket, address: object) -> None:
        guard(address)
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: object) -> int:
        guard(address)
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
