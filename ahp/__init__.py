"""The Agent Host Protocol (AHP) 0.2.0 core, shared by the host and its clients.

Contract: nothing in this package does I/O. No sockets, files (other than reading the vendored
schema that ships inside it), subprocesses, clocks, random ids, logging handlers or asyncio: every
value arrives as an argument and leaves as a return value, so the server (``host``), the client
library (``client``) and the terminal client (``chat``) run the very same code.
``tests/test_architecture.py`` enforces it.

- ``ahp.protocol``: wire types generated from the vendored schema, the method table, the action
  catalogue, error codes and version negotiation.
- ``ahp.dialects.v0_2.state``: the pure reducers for every channel kind.
- ``ahp.jsonrpc``: JSON-RPC 2.0 without I/O (decode a frame, build a reply, number our own
  requests), used by ``host.transport.rpc`` and ``client._connection`` alike.
- ``ahp.tool_results``: a tool call's result as text, the same for the model, AG-UI and the
  terminal client.
"""
