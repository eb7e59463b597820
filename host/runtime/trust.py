"""Which folders the user trusts: the host's record, kept in its root state.

Contract:
- The record is ``RootState.config.values.trustedFolders`` (``ahp.workspace_trust``). The root
  state is journaled like every channel, so trust lives in the host's data directory and survives
  restarts; every client subscribed to the root sees the list, and a client revokes a folder with
  the action it already knows, ``root/configChanged`` (validated by ``host.transport.validation``: absolute
  paths only). This was chosen over a new method because any client, in any version this host
  speaks, can list and change it without new protocol, and the host and clients agree on it the
  same way they agree on everything else (one action, one ``serverSeq``).
- ``[trust] folders`` of the host config are trusted as well; they are the user's own choice in
  their own file, so clients cannot revoke them (they are not in the root list). With ``[trust]
  require = false`` every folder is trusted (the behaviour before workspace trust).
- A client's own workspace trust, forwarded in the root config's ``workspaceTrust`` (VS Code
  sends its trusted folders there after ``initialize`` and whenever they change), is followed as
  ``[trust] client_trust`` says (``ahp.workspace_trust.trust_source``): by default its folders are
  trusted and, when the client's workspace trust is switched off (``enabled: false``), every
  folder, as VS Code's own agent host reads it. It only adds: the value cannot revoke a folder the
  root list or the host config trusts. It is the client's live state, so it is not kept across a
  host restart (``host.root_config.root_config_state`` drops it; VS Code sends it again when it
  reconnects).
- A folder is trusted when it, or a folder above it, is trusted; paths are compared after
  resolving symlinks (a link into an untrusted tree does not borrow the link's trust).
- ``trust(folder)`` adds a folder (a ``root/configChanged`` dispatched by the host); ``source(folder)``
  says what trusts it; ``listeners`` are called (soon after, never inside a store observer) whenever
  the root list or the forwarded workspace trust changes, whoever changed it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from typing import Any

from ahp.protocol import builders
from ahp.workspace_trust import (
    BY_CONFIG,
    CONFIG_KEY,
    FOLLOW_ALL,
    FOLLOW_NONE,
    ForwardedTrust,
    covers,
    forwarded_trust,
    trust_source,
    trusted_folders,
)
from host.state.store import ROOT, Store

__all__ = ["WorkspaceTrust", "resolved_folder"]


def resolved_folder(folder: str | os.PathLike[str]) -> str:
    """The absolute, symlink-free form a folder is trusted under."""
    return os.path.realpath(os.path.expanduser(os.fspath(folder)))


class WorkspaceTrust:
    """The trusted folders: the root config's list, the host config's, and the workspace trust a client forwarded."""

    def __init__(self, store: Store, *, configured: Sequence[str] = (), required: bool = True,
                 client_trust: str = FOLLOW_ALL) -> None:
        self._store = store
        self.required = required
        self.client_trust = client_trust
        """``[trust] client_trust``: how far a client's forwarded workspace trust counts."""
        self.configured = [resolved_folder(folder) for folder in configured]
        """``[trust] folders``: always trusted, not revocable by clients."""
        self.listeners: list[Callable[[], None]] = []
        """Called after the root list changed (by the host or a client)."""
        store.change_observers.append(self._observe)

    def listed(self) -> list[str]:
        """The root config's trusted folders, as stored."""
        return trusted_folders((self._store.state(ROOT) or {}).get("config"))

    def forwarded(self) -> ForwardedTrust | None:
        """The workspace trust a client forwarded (None: none, or ``[trust] client_trust = "ignore"``)."""
        if self.client_trust == FOLLOW_NONE:
            return None
        return forwarded_trust((self._store.state(ROOT) or {}).get("config"))

    def source(self, folder: str | os.PathLike[str] | None) -> str | None:
        """What trusts ``folder`` (an ``ahp.workspace_trust.BY_*`` source), or None."""
        if not self.required:
            return BY_CONFIG
        if folder is None:
            return None
        forwarded = self.forwarded()
        if forwarded is not None:
            forwarded = ForwardedTrust(forwarded.enabled, tuple(resolved_folder(item) for item in forwarded.folders))
        return trust_source(resolved_folder(folder), configured=self.configured,
                            listed=[resolved_folder(item) for item in self.listed()], forwarded=forwarded,
                            follow=self.client_trust)

    def is_trusted(self, folder: str | os.PathLike[str] | None) -> bool:
        return self.source(folder) is not None

    def trust(self, folder: str | os.PathLike[str]) -> None:
        """Remember ``folder`` as trusted (nothing changes when it already is)."""
        real = resolved_folder(folder)
        listed = self.listed()
        if any(covers(resolved_folder(trusted), real) for trusted in listed):
            return
        self._store.dispatch(ROOT, builders.root_config_changed(config={CONFIG_KEY: [*listed, real]}))

    def _observe(self, channel: str, before: dict[str, Any], after: dict[str, Any], envelope: dict[str, Any]) -> None:
        if channel != ROOT:
            return
        old, new = before.get("config"), after.get("config")
        if trusted_folders(old) == trusted_folders(new) and forwarded_trust(old) == forwarded_trust(new):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a synchronous caller (no loop yet): sessions read the list when they open
            return
        for listener in list(self.listeners):
            loop.call_soon(listener)

