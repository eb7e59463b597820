"""uvicorn's HTTP protocol (httptools), offering each request a way to abort its connection.

ASGI gives an application no way to drop a connection whose peer stopped reading: ending the
response, or raising, makes uvicorn ``close()`` the transport, and a transport closes only once
its peer has read what is buffered, so for ever if it never reads again. The AG-UI stream of a
client cut off for not reading (``host.transport.agui.stream``) must let go of it, so this
protocol puts ``ABORT_EXTENSION`` in each request's ASGI scope (``scope["extensions"]``): a
callable that aborts the connection (what is buffered is dropped, the socket closed, uvicorn
told the client went away), and ``UNSENT_EXTENSION``: a callable giving the bytes still waiting
in the connection's buffer for the peer to read.

This subclasses ``uvicorn.protocols.http.httptools_impl.HttpToolsProtocol`` (what uvicorn's
"auto" picks when httptools is installed, a dependency of this package) and relies on its
``on_message_begin`` building ``scope`` and on ``transport``; uvicorn is pinned to a range in
``pyproject.toml`` and ``tests/host/transport/agui/test_stream.py`` exercises it end to end.
"""

from __future__ import annotations

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["ABORT_EXTENSION", "UNSENT_EXTENSION", "AbortableHttpProtocol"]

ABORT_EXTENSION = "agent-host.abort"
UNSENT_EXTENSION = "agent-host.unsent"


class AbortableHttpProtocol(HttpToolsProtocol):
    def on_message_begin(self) -> None:
        super().on_message_begin()
        # ASGI types an extension's value as a dict; these hand the app two callables.
        self.scope["extensions"] = {ABORT_EXTENSION: self._abort, UNSENT_EXTENSION: self._unsent}  # type: ignore[dict-item]

    def _unsent(self) -> int:
        return self.transport.get_write_buffer_size() if self.transport is not None else 0

    def _abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()
