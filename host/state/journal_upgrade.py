"""Upgrading a journal an older build wrote (its store held AHP 0.2.0 states and ``session/*``
actions) to the internal (0.9.0) model, once, when the host opens it.

Contract: ``upgrade_journal(journal)`` does nothing to a journal whose ``model`` is recorded
(``host.state.journal.MODEL``; a new journal records it when it is created). For an older one it
rebuilds the old store exactly as the old build did (the newest snapshot, then every later entry,
reduced with the 0.2.0 reducers, ``ahp.dialects.v0_2.state``), lifts every channel state into the
internal model (``ahp.dialects.v0_2.states``: a 0.2.0 session ``ahp-session:/<id>`` becomes the
session ``<provider>:/<id>`` and its default chat, a terminal's claim names that chat...), and
rewrites the journal as one snapshot of the lifted states at the same ``serverSeq``
(``Journal.rewrite``, one transaction, the model recorded). Old entries are not kept: their
actions are in the old model, so a client reconnecting across the upgrade is answered with
snapshots. A state the lift cannot name (a session without a usable provider) is left out and
logged. Returns whether it upgraded.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from ahp.dialects.v0_2.state import reduce as reduce_v02
from ahp.dialects.v0_2.states import changeset_lift, resource_watch_lift, root_lift, session_lift, terminal_lift
from ahp.dialects.v0_2.uris import session_id
from host.state.journal import MODEL, Journal

__all__ = ["upgrade_journal"]

logger = logging.getLogger(__name__)


def _old_store(journal: Journal) -> tuple[dict[str, tuple[str, dict[str, Any]]], int]:
    """The old build's store: channel → (kind, 0.2.0 state), and its serverSeq."""
    channels: dict[str, tuple[str, dict[str, Any]]] = {}
    seq, upto = 0, 0
    snapshot = journal.latest_snapshot()
    if snapshot is not None:
        seq, upto = snapshot.seq, snapshot.upto
        for uri, saved in snapshot.channels.items():
            channels[uri] = (saved["kind"], saved["state"])
    for item in journal.entries_after(upto):
        if item.kind == "created":
            body = json.loads(item.body or "{}")
            channels[item.channel] = (body["kind"], body["state"])
        elif item.kind == "removed":
            channels.pop(item.channel, None)
        elif item.kind == "action":
            envelope = json.loads(item.body or "{}")
            entry = channels.get(item.channel)
            if entry is not None:
                channels[item.channel] = (entry[0], reduce_v02(entry[0], entry[1], envelope["action"], item.now or 0))
            seq = max(seq, item.seq or 0)
    return channels, seq


def upgrade_journal(journal: Journal) -> bool:
    if journal.model is not None:
        return False
    old, seq = _old_store(journal)
    providers: dict[str, str] = {}
    for _uri, (kind, state) in old.items():
        summary = state.get("summary") if kind == "session" else None
        if not isinstance(summary, dict):
            summary = {}
        ident, provider = session_id(summary.get("resource")), summary.get("provider")
        if ident is not None and isinstance(provider, str):
            providers[ident] = provider
    provider_of = providers.get
    lifted: dict[str, tuple[str, dict[str, Any]]] = {}
    for uri, (kind, state) in old.items():
        if kind == "session":
            try:
                session = session_lift(state, provider_of=provider_of)
            except ValueError as error:
                logger.warning("journal upgrade: %s left out: %s", uri, error)
                continue
            meta = session.state.get("_meta")
            if not isinstance(meta, dict):
                meta = {}
            lifted[session.uri] = ("session", {**session.state, "_meta": {**meta, "createdAt": session.created_at}})
            for chat_uri, chat in session.chats.items():
                lifted[chat_uri] = ("chat", chat)
        elif kind == "root":
            lifted[uri] = (kind, root_lift(state, provider_of=provider_of))
        elif kind == "terminal":
            lifted[uri] = (kind, terminal_lift(state, provider_of=provider_of))
        elif kind == "changeset":
            lifted[uri] = (kind, changeset_lift(state))
        elif kind == "resourceWatch":
            lifted[uri] = (kind, resource_watch_lift(state))
        else:
            logger.warning("journal upgrade: %s (a %s channel) has no internal form; left out", uri, kind)
    journal.rewrite(lifted, seq, MODEL)
    logger.info("journal upgraded to the %s model: %d channels, serverSeq %d", MODEL, len(lifted), seq)
    return True
