"""The Agent Host Protocol (AHP) core, shared by the host and its clients: the model (AHP 1.0.0
shapes, which 0.9.0 shares) and the older versions served as projections of it.

Contract: nothing in this package does I/O. No sockets, files (other than reading the vendored
schemas that ship inside it), subprocesses, clocks, random ids, logging handlers or asyncio: every
value arrives as an argument and leaves as a return value, so the server (``host``), the client
library (``client``) and the terminal client (``chat``) run the very same code.
``tests/test_architecture.py`` enforces it.

- ``ahp.state``: the model, pure reducers for every channel kind.
- ``ahp.protocol``: the model's typed action builders and error codes, its vendored 1.0.0 schema
  (``spec-1.0.0/``).
- ``ahp.dialects``: which versions are served and how a connection picks one (``negotiation``),
  the version tables (``catalogue``), and one folder per older wire version (``v0_7/``, ``v0_2/``,
  whose ``wire/`` holds the 0.2.0 wire types).
- ``ahp.jsonrpc``: JSON-RPC 2.0 without I/O (decode a frame, build a reply, number our own
  requests), used by ``host.transport.rpc`` and ``client._connection`` alike.
- ``ahp.tool_results``: a tool call's result as text, the same for the model, AG-UI and the
  terminal client.
"""
