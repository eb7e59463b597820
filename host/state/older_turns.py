"""Older turns: a chat's completed turns kept out of its state and paged back in, at the storage
boundary (AHP ``turnsNextCursor``, ``fetchTurns``, ``chat/turnsLoaded``).

With a journal and ``recent_turns`` > 0, a chat's state holds its newest ``recent_turns`` completed
turns and ``turnsNextCursor``; the older ones are not in memory. They stay where the journal's
snapshots keep every chat turn by turn (one row or more per turn, ``host.state.turn_pages``, the
reading side of that layout): every snapshot lists their rows again, so they are never pruned,
and ``turns`` / ``load_older`` read them back.

A subscriber holds exactly the state it was given plus what it was sent, and no action takes turns
away from the front, so turns leave a state (``trim``) only when nobody subscribes to the chat:
when its last subscriber leaves, after a snapshot, and at recovery; and only turns whose rows the
last snapshot wrote (``Journal.turn_rows``; never while a snapshot's plans are out). While clients
watch a chat its state grows with new and loaded turns as theirs do. Turns come back only by
``chat/turnsLoaded`` (``Store.load_older``: ``fetchTurns``, and before a truncation at an older
turn), which every subscriber sees, so every subscriber converges. After a trim, a ``reconnect``
replay from before it is refused (the client would hold turns the state lacks): the client gets a
snapshot. Recovery reads whole snapshots (every turn) and applies later entries to them, then
trims: the reducers give the same newest turns on a longer list.

This module keeps which turns are older, reads them back and moves them out; it never numbers,
sends or journals an action: ``chat/turnsLoaded`` goes through the store like any other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ahp.protocol import builders
from host.state.channels import Channel
from host.state.embedded_log import EmbeddedLog
from host.state.turn_pages import split_turns, turn_of, turns_cursor

__all__ = ["OlderTurns"]


class OlderTurns:
    """The older turns of every chat of one store (see the module docstring)."""

    def __init__(self, channels: dict[str, Channel], changed: set[str], log: EmbeddedLog | None,
                 recent_turns: int, load_older: Callable[[str, int], Any]) -> None:
        self._channels = channels
        """The store's channels (read; a trimmed state is set on its channel)."""
        self._changed = changed
        """The store's channels changed since the last snapshot: a trimmed chat is written again."""
        self._log = log
        """Where the rows are (its journal); None: a log that keeps no rows, and no paging."""
        self.recent_turns = recent_turns if log is not None and log.journal is not None else 0
        """Completed turns a chat nobody watches keeps in its state (0: all)."""
        self.older: dict[str, list[tuple[Any, list[int]]]] = {}
        """Per chat: its turns older than its state's, oldest first, as (turn id, part ids)."""
        self._trimmed: dict[str, int] = {}
        """Per chat: the serverSeq when its state last lost older turns (``replay`` cannot cover it)."""
        self._load_older = load_older

    # -- reading -------------------------------------------------------------------------------

    def count(self, chat: str) -> int:
        return len(self.older.get(chat, ()))

    def ids(self, chat: str) -> list[Any]:
        """The chat's older turn ids, oldest first."""
        return [turn_id for turn_id, _ in self.older.get(chat, ())]

    def rows(self, chat: str) -> list[list[int]]:
        """The journal rows of each of the chat's older turns, oldest first (a snapshot lists them again)."""
        return [ids for _, ids in self.older.get(chat, ())]

    def read(self, chat: str, start: int, end: int) -> list[dict[str, Any]]:
        """The chat's older turns ``[start:end]``, read back from the journal."""
        return self._read(chat, self.older.get(chat, [])[start:end])

    def _read(self, chat: str, entries: list[tuple[Any, list[int]]]) -> list[dict[str, Any]]:
        journal = self._log.journal if self._log is not None else None
        if not entries or journal is None:
            return []
        texts = iter(journal.read_parts(chat, [part for _, parts in entries for part in parts]))
        return [turn_of([next(texts) for _ in parts]) for _, parts in entries]

    def refuses_replay(self, since: int, channels: Iterable[str]) -> bool:
        """Whether a chat of ``channels`` lost older turns from its state after ``since`` (a client
        replayed from there would hold turns the state lacks)."""
        return any(self._trimmed.get(channel, -1) >= since for channel in channels)

    # -- loading back --------------------------------------------------------------------------

    def page(self, chat: str, start: int) -> tuple[dict[str, Any], list[tuple[Any, list[int]]], list[dict[str, Any]]] | None:
        """Take the chat's older turns from position ``start`` on out of the older ones: the
        ``chat/turnsLoaded`` that brings them back into its state, the page and its turns read
        back. None when no older turn is at or after ``start``."""
        older = self.older.get(chat)
        start = max(0, start)
        if not older or start >= len(older):
            return None
        page, rest = older[start:], older[:start]
        turns = self._read(chat, page)
        if rest:
            self.older[chat] = rest
        else:
            del self.older[chat]
        action = builders.chat_turns_loaded(turns=turns, turns_next_cursor=turns_cursor(page[0][0]) if rest else None)
        return action, page, turns

    def loaded(self, chat: str, page: list[tuple[Any, list[int]]], turns: list[dict[str, Any]]) -> None:
        """The loaded turns head the state as the very objects read, in the same rows: a snapshot
        keeps those rows rather than writing the turns again."""
        journal = self._log.journal if self._log is not None else None
        if journal is not None:
            written_turns, written_ids = journal.turn_rows(chat)
            loaded_ids: list[list[int] | None] = [ids for _, ids in page]
            journal.note_turn_rows(chat, [*turns, *written_turns], [*loaded_ids, *written_ids])

    def before_apply(self, channel: str, action: dict[str, Any]) -> None:
        """What an action on a chat with older turns needs first: a truncation at an older turn
        loads the turns from there on (so it reduces against them); one of every turn drops them;
        resuming the last turn loads the one before it if the state holds no other (AHP 0.2.0
        shows a resume as a truncation at that turn)."""
        action_type = action.get("type")
        if action_type == "chat/turnResume":
            if len(self._channels[channel].shape.get("turns") or ()) < 2:
                self._load_older(channel, len(self.older[channel]) - 1)
            return
        if action_type != "chat/truncated":
            return
        turn_id = action.get("turnId")
        if turn_id is None:
            del self.older[channel]
            return
        for position, (older_id, _) in enumerate(self.older[channel]):
            if older_id == turn_id:
                self._load_older(channel, position)
                return

    # -- moving out ----------------------------------------------------------------------------

    def recovered(self, chat: str, parts: Any) -> dict[str, Any]:
        """A chat's state from its snapshot rows, noting which rows hold each turn (to page them
        out again)."""
        state, groups = split_turns(parts)
        turns = state.get("turns")
        if not isinstance(turns, list):
            turns = []
        if self._log is not None and self._log.journal is not None:
            self._log.journal.note_turn_rows(chat, turns, groups)
        return state

    def trim(self, chat: str) -> None:
        """Move a chat's oldest completed turns out of its state, down to ``recent_turns``, when
        nobody subscribes to it (a subscriber holds the state it was given: see the module
        docstring). Only turns whose rows the last snapshot wrote move (they are read back from
        there), and never while a snapshot's plans are out. Silent, as nobody holds the state: a
        ``reconnect`` from before it gets a snapshot instead of a replay."""
        log = self._log
        entry = self._channels.get(chat)
        if (self.recent_turns <= 0 or log is None or log.journal is None or log.snapshotting or entry is None
                or entry.kind != "chat" or entry.subscribers or entry.translated):
            return
        journal = log.journal
        state = entry.state
        turns = state.get("turns")
        if not isinstance(turns, list) or len(turns) <= self.recent_turns:
            return
        written_turns, written_ids = journal.turn_rows(chat)
        excess = len(turns) - self.recent_turns
        moved = 0
        while moved < min(excess, len(written_turns)) and turns[moved] is written_turns[moved] and isinstance(turns[moved], dict):
            moved += 1
        unwritten = moved == len(written_turns) or turns[moved] is not written_turns[moved]
        if excess - moved >= self.recent_turns and unwritten:
            # A page or more of turns without rows of their own yet: write them soon, then move them.
            self._changed.add(chat)
            log.snapshot_soon()
        if not moved:
            return
        self.older.setdefault(chat, []).extend((turns[index].get("id"), written_ids[index]) for index in range(moved))
        journal.note_turn_rows(chat, written_turns[moved:], list(written_ids[moved:]))
        entry.state = {**state, "turns": turns[moved:], "turnsNextCursor": turns_cursor(turns[moved].get("id"))}
        self._changed.add(chat)
        self._trimmed[chat] = log.seq

    def forget(self, chat: str, *, removed: bool) -> None:
        """The chat's state was replaced whole (``removed`` False) or the chat is gone."""
        self.older.pop(chat, None)
        if removed:
            self._trimmed.pop(chat, None)
