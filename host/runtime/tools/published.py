"""The root config's ``rememberedApprovals`` made the stored list (``host.runtime.tools.remembered``
says why it is published there). The host does this at start, before any session's tools are
built (``AgentHost.start``), and the tools runtime again after a client revoked one."""

from __future__ import annotations

from ahp.protocol import builders
from host.state.store import ROOT, Store

from .remembered import ROOT_KEY, entries
from .settings import ToolSettings

__all__ = ["publish_remembered"]


def publish_remembered(store: Store, settings: ToolSettings) -> None:
    """Dispatch ``root/configChanged`` with the stored list, unless the root config already holds it."""
    listed = entries(settings.remembered())
    config = (store.state(ROOT) or {}).get("config")
    if isinstance(config, dict) and (config.get("values") or {}).get(ROOT_KEY) != listed:
        store.dispatch(ROOT, builders.root_config_changed(config={ROOT_KEY: listed}))
