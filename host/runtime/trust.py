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
- A folder is trusted when it, or a folder above it, is trusted; paths are compared after
  resolving symlinks (a link into an untrusted tree does not borrow the link's trust).
- ``trust(folder)`` adds a folder (a ``root/configChanged`` dispatched by the host); ``listeners``
  are called (soon after, never inside a store observer) whenever the root list changes, whoever
  changed it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from typing import Any

from ahp.protocol import builders
from ahp.workspace_trust import CONFIG_KEY, covers, trusted_folders
from host.state.store import ROOT, Store

__all__ = ["WorkspaceTrust", "resolved_folder"]


def resolved_folder(folder: str | os.PathLike[str]) -> str:
    """The absolute, symlink-free form a folder is trusted under."""
    return os.path.realpath(os.path.expanduser(os.fspath(folder)))


class WorkspaceTrust:
    """The trusted folders: the root config's list plus the host config's."""

    def __init__(self, store: Store, *, configured: Sequence[str] = (), required: bool = True) -> None:
        self._store = store
        self.required = required
        self.configured = [resolved_folder(folder) for folder in configured]
        """``[trust] folders``: always trusted, not revocable by clients."""
        self.listeners: list[Callable[[], None]] = []
        """Called after the root list changed (by the host or a client)."""
        store.change_observers.append(self._observe)

    def listed(self) -> list[str]:
        """The root config's trusted folders, as stored."""
        return trusted_folders((self._store.state(ROOT) or {}).get("config"))

    def is_trusted(self, folder: str | os.PathLike[str] | None) -> bool:
        if not self.required:
            return True
        if folder is None:
            return False
        real = resolved_folder(folder)
        return any(covers(resolved_folder(trusted), real) for trusted in [*self.configured, *self.listed()])

    def trust(self, folder: str | os.PathLike[str]) -> None:
        """Remember ``folder`` as trusted (nothing changes when it already is)."""
        real = resolved_folder(folder)
        listed = self.listed()
        if any(covers(resolved_folder(trusted), real) for trusted in listed):
            return
        self._store.dispatch(ROOT, builders.root_config_changed(config={CONFIG_KEY: [*listed, real]}))

    def _observe(self, channel: str, before: dict[str, Any], after: dict[str, Any], envelope: dict[str, Any]) -> None:
        if channel != ROOT or trusted_folders(before.get("config")) == trusted_folders(after.get("config")):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a synchronous caller (no loop yet): sessions read the list when they open
            return
        for listener in list(self.listeners):
            loop.call_soon(listener)

