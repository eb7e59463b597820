"""How clients reach the host: the network edge and what crosses it.

``server`` (Starlette on uvicorn: token, Origin, limits; ``tokens`` the named tokens, ``access``
what each token level may do) and ``ws_protocol`` (one write per tick)
carry frames; ``connection`` speaks AHP to one client over ``rpc`` (JSON-RPC bound to a
connection); ``dialects`` is the version seam (one dialect object per connection); ``validation``
holds the rules a client's dispatched action must pass; ``agui`` is the AG-UI endpoint on the same port. Nothing here holds state that outlives a connection:
that lives in ``host.state``.
"""
