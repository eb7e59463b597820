"""The protocol versions this host serves, each as a dialect of one internal model.

Contract: everything here is pure (no I/O). A dialect is an older wire version kept alive beside
the newest one: its own reducers (so clients of that version can mirror state exactly) and the
projection between its shapes and the internal model. The host's edge picks one dialect per
connection at ``initialize`` and nothing past the edge knows which one it was.
"""
