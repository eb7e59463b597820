"""``ChangesetService``: the files a session's tools changed, published as changesets clients
review, keep and undo (PROTOCOL.md §11; the shapes are in ``host.resources.changesets.model``).

Contract:

* Recording: every host-run tool call that completes (``chat/toolCallComplete`` on one of its chats, dispatched by
  the host, so not a client's own tool) with ``fileEdit`` items in its result (``edit_file``,
  ``write_file``) is folded into the session changeset and the turn's changeset, with the
  before/after content the tool stored in the host's content store. The session's catalogue
  (``session/changesetsChanged``: counts of the review list, and the per-turn template) follows.
  Changeset channels are ordinary store channels and content references live in the durable
  content store, so a restarted host serves the same changesets with nothing else to persist.
* ``invoke(params)`` (``invokeChangesetOperation``) runs an operation on a whole changeset or on
  one file (``target{kind: "resource", resource}``): ``accept`` keeps the changes and takes them
  off the list; ``reject`` (session changeset) and ``revert`` (a turn's changeset, the turn's
  checkpoint) put each file back as it was before, deleting files the agent created.
* Line ranges (``target{kind: "range", resource, side?, range}``, AHP's hunk-level review): the
  blocks of changed lines (``host.resources.changesets.hunks``) that the range's lines meet on ``side``
  (default ``after``) are kept (``accept``: the entry's ``before`` becomes the old content with
  those blocks taken, so they leave the diff) or undone (``reject`` / ``revert``: the file is
  written with those blocks as they were, the entry's ``after`` follows; undoing a turn's blocks
  moves the review list's entry along too). Only for text files that existed on both sides; a
  range no block meets is -32008 naming the changed lines. The conflict rules below apply.
* Conflicts: a file is only put back when its content on disk is still exactly what the agent
  wrote. Otherwise (edited outside the agent, or by a later turn) it is left untouched, the entry
  gets ``_meta.conflict`` saying so, and the answer names it; when nothing could be undone the
  request fails with -32011 (``data.conflicts`` lists the file URIs).
* Every path is resolved through the same sandbox as the ``resource*`` methods before anything is
  read or written.
* ``session_disposed``: each of the session's changesets gets ``changeset/cleared`` and goes.
* ``materialize(uri)``: subscribing to the turn changeset of a turn that changed nothing creates
  it empty (the template is valid for every turn).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from ahp.protocol import builders
from ahp.state import default_chat_uri
from host.errors import ErrorCode, RpcError
from host.state.content import ContentStore
from host.state.store import Store
from regular_files import NotARegularFile, read_regular
from tools.atomic import write_atomically
from tools.content import content_ref, diff_stats

from . import hunks as blocks
from .model import (
    SESSION_OPERATIONS,
    TURN_OPERATIONS,
    catalogue,
    changeset_owner,
    entry_id,
    fold,
    session_changeset,
    turn_changeset,
)

__all__ = ["ChangesetService"]


class ChangesetService:
    def __init__(self, store: Store, content: ContentStore, resolve_uri: Callable[[Any], Path],
                 session_of: Callable[[str], str | None]) -> None:
        self.store = store
        self._session_of = session_of
        """The session a chat channel belongs to (``ChatSummaries.session_of``)."""
        self.content = content
        self._resolve_uri = resolve_uri
        store.change_observers.append(self._observe)

    # -- recording -----------------------------------------------------------------------------

    def _observe(self, channel: str, before: dict[str, Any], after: dict[str, Any], envelope: dict[str, Any]) -> None:
        action = envelope.get("action") or {}
        if action.get("type") != "chat/toolCallComplete" or envelope.get("origin") is not None:
            return
        session = self._session_of(channel) if self.store.kind(channel) == "chat" else None
        if session is None:
            return
        result = action.get("result") or {}
        edits = [item for item in result.get("content") or [] if isinstance(item, dict) and item.get("type") == "fileEdit"]
        if edits and isinstance(action.get("turnId"), str):
            # Observers run inside Store.dispatch; record once it has returned.
            asyncio.get_running_loop().call_soon(self.record, session, action["turnId"], edits)

    def record(self, session: str, turn_id: str, edits: list[dict[str, Any]]) -> None:
        """Fold file edits made in ``turn_id`` into the turn's and the session's changesets."""
        if self.store.kind(session) != "session":
            return
        for item in edits:
            edit = {key: value for key, value in item.items() if key in ("before", "after", "diff")}
            if entry_id(edit) is None:
                continue
            self._fold_into(turn_changeset(session, turn_id), TURN_OPERATIONS, edit, None)
            self._fold_into(session_changeset(session), SESSION_OPERATIONS, edit, turn_id)
        self._publish_catalogue(session)

    def _fold_into(self, uri: str, operations: list[dict[str, Any]], edit: dict[str, Any], turn_id: str | None) -> None:
        self._ensure(uri, operations)
        file_id = entry_id(edit)
        if file_id is None:
            return  # an edit with neither side names no file
        previous = self._entry(uri, file_id)
        if previous is not None and previous["edit"].get("after") == edit.get("after"):
            return  # the same change reported twice (two tools running at once both saw it)
        original = previous["edit"].get("before") if previous is not None else edit.get("before")
        diff = diff_stats(self._bytes(original), self._bytes(edit.get("after")))
        self._put(uri, file_id, previous, fold(previous, edit, turn_id, diff))

    # -- operations ----------------------------------------------------------------------------

    def invoke(self, params: dict[str, Any]) -> dict[str, Any]:
        uri = params["channel"]
        owner = self._owner(uri)
        if owner is None or self.store.kind(uri) != "changeset":
            raise RpcError(ErrorCode.NOT_FOUND, f"No changeset {uri}; take changeset URIs from the session's summary.changesets.")
        session, turn_id = owner
        state = self.store.state(uri) or {}
        operations = state.get("operations") or []
        operation = next((op for op in operations if op.get("id") == params["operationId"]), None)
        if operation is None:
            known = ", ".join(op["id"] for op in operations) or "none"
            raise RpcError(ErrorCode.INVALID_PARAMS, f"{uri} has no operation {params['operationId']!r} (available: {known}).")
        target = params.get("target")
        scope = "changeset" if target is None else target.get("kind")
        if scope not in operation["scopes"]:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"{operation['id']} applies to: {', '.join(operation['scopes'])}; not to a {scope}.")
        files = list(state.get("files") or [])
        if target is not None:
            files = [entry for entry in files if entry["id"] == target.get("resource")]
            if not files:
                raise RpcError(ErrorCode.NOT_FOUND, f"{target.get('resource')} is not in {uri}.")
        if not files:
            return {"message": "There is nothing in this changeset."}
        if scope == "range" and target is not None:  # a range scope came with its target
            message = self._range(uri, session, turn_id, operation["id"], files[0], target)
            self._publish_catalogue(session)
            return {"message": message}
        if operation["id"] == "accept":
            self._accept(uri, session, turn_id, files)
            message = f"Kept the changes to {_count(len(files))}."
        else:
            message = self._undo(uri, session, turn_id, files)
        self._publish_catalogue(session)
        return {"message": message}

    def _accept(self, uri: str, session: str, turn_id: str | None, files: list[dict[str, Any]]) -> None:
        for entry in files:
            self._put(uri, entry["id"], entry, None)
            if turn_id is not None:
                # Kept here, so off the review list too, unless another turn's change is pending.
                pending = self._entry(session_changeset(session), entry["id"])
                if pending is not None and (pending.get("_meta") or {}).get("turns") in ([turn_id], []):
                    self._put(session_changeset(session), entry["id"], pending, None)

    def _undo(self, uri: str, session: str, turn_id: str | None, files: list[dict[str, Any]]) -> str:
        undone: list[str] = []
        conflicts: list[tuple[str, str]] = []
        folders = _working_folders(self.store.state(session) or {})
        for entry in files:
            problem = self._restore(entry["edit"], folders) if not (entry.get("_meta") or {}).get("outsideEdits") else _OUTSIDE_EDITS
            if problem is not None:
                conflicts.append((entry["id"], problem))
                self._put(uri, entry["id"], entry, {**entry, "_meta": {**(entry.get("_meta") or {}), "conflict": problem}})
                continue
            undone.append(entry["id"])
            self._put(uri, entry["id"], entry, None)
            if turn_id is None:
                for turn in (entry.get("_meta") or {}).get("turns") or []:
                    turn_uri = turn_changeset(session, turn)
                    self._put(turn_uri, entry["id"], self._entry(turn_uri, entry["id"]), None)
            else:
                self._after_turn_undone(session, turn_id, entry)
        sentences = [f"Undid the changes to {_count(len(undone))}."] if undone else []
        sentences += [f"Left {_name(file_id)} alone: {problem[0].lower()}{problem[1:]}" for file_id, problem in conflicts]
        message = " ".join(sentences)
        if conflicts and not undone:
            raise RpcError(ErrorCode.CONFLICT, message, {"conflicts": [file_id for file_id, _ in conflicts]})
        return message

    def _range(self, uri: str, session: str, turn_id: str | None, operation: str, entry: dict[str, Any],
               target: dict[str, Any]) -> str:
        """Keep or undo the blocks of changed lines a line range meets (see the module contract)."""
        name = _name(entry["id"])
        edit = entry["edit"]
        before, after = self._bytes(edit.get("before")), self._bytes(edit.get("after"))
        found = blocks.hunks(before, after) if before is not None and after is not None else None
        if found is None or before is None or after is None:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"{name} was created, deleted or is not text, so it has no line ranges; "
                                                     "use target kind \"resource\" for the whole file.")
        side = target.get("side") or "after"
        span = target["range"]
        first, last = int(span["start"]["line"]), int(span["end"]["line"])
        if last < first:
            first, last = last, first
        chosen = blocks.touching(found, side, first, last)
        if not chosen:
            changed = ", ".join(_lines_text(h, side) for h in found) or "none"
            raise RpcError(ErrorCode.NOT_FOUND, f"No change to {name} meets lines {first + 1}-{last + 1} of its {side} side "
                                                f"(changed lines there: {changed}).")
        count = "1 block of lines" if len(chosen) == 1 else f"{len(chosen)} blocks of lines"
        if operation == "accept":
            baseline = blocks.keep(before, after, chosen)
            self._put(uri, entry["id"], entry, self._rebased(entry, baseline))
            if turn_id is not None:
                pending = self._entry(session_changeset(session), entry["id"])
                if pending is not None and self._bytes(pending["edit"].get("before")) == before \
                        and self._bytes(pending["edit"].get("after")) == after:
                    self._put(session_changeset(session), entry["id"], pending, self._rebased(pending, baseline))
            return f"Kept {count} in {name}."
        outside_edits = (entry.get("_meta") or {}).get("outsideEdits") and turn_id is None
        result = blocks.undo(before, after, chosen)
        problem = _OUTSIDE_EDITS if outside_edits else self._rewrite(entry["id"], after, result)
        if problem is not None:
            self._put(uri, entry["id"], entry, {**entry, "_meta": {**(entry.get("_meta") or {}), "conflict": problem}})
            raise RpcError(ErrorCode.CONFLICT, f"Left {name} alone: {problem[0].lower()}{problem[1:]}", {"conflicts": [entry["id"]]})
        written = self._side(entry["id"], result)
        diff = diff_stats(before, result)
        self._put(uri, entry["id"], entry, fold(entry, {"before": edit["after"], "after": written}, None, diff, undo=True))
        if turn_id is not None:
            pending = self._entry(session_changeset(session), entry["id"])
            if pending is not None:
                diff = diff_stats(self._bytes(pending["edit"].get("before")), result)
                self._put(session_changeset(session), entry["id"], pending,
                          fold(pending, {"before": pending["edit"].get("after"), "after": written}, None, diff, undo=True))
        return f"Undid {count} in {name}."

    def _rebased(self, entry: dict[str, Any], baseline: bytes) -> dict[str, Any] | None:
        """``entry`` with ``baseline`` as its before content; None when nothing differs any more."""
        after = self._bytes(entry["edit"].get("after"))
        if after == baseline:
            return None
        edit = {**entry["edit"], "before": self._side(entry["id"], baseline), "diff": diff_stats(baseline, after)}
        return {**entry, "edit": edit}

    def _side(self, file_id: str, data: bytes) -> dict[str, Any]:
        return {"uri": file_id, "content": content_ref(self.content, data, "text/plain; charset=utf-8")}

    def _after_turn_undone(self, session: str, turn_id: str, entry: dict[str, Any]) -> None:
        """The file is back to before the turn: the review list's entry ends there now."""
        pending_uri = session_changeset(session)
        pending = self._entry(pending_uri, entry["id"])
        if pending is None:
            return
        turn_before = entry["edit"].get("before")
        # Back to before the turn: that content, or no file at all when the turn created it.
        back = {"after": turn_before} if turn_before is not None else {"before": {"uri": entry["id"]}}
        original = pending["edit"].get("before")
        diff = diff_stats(self._bytes(original), self._bytes(back.get("after")))
        folded = fold(pending, back, None, diff, undo=True)
        if folded is not None:
            folded["_meta"]["turns"] = [t for t in folded["_meta"]["turns"] if t != turn_id]
        self._put(pending_uri, entry["id"], pending, folded)

    def _restore(self, edit: dict[str, Any], folders: tuple[Path, ...] = ()) -> str | None:
        """Put one file back to ``edit.before``; a sentence saying why not, or None when done. A
        file the change created is deleted, and the folders it leaves empty inside the session's
        ``folders`` with it (the ones the turn made for it; a folder holding anything else stays)."""
        expected = self._bytes(edit.get("after"))
        original = self._bytes(edit.get("before"))
        if (edit.get("after") is not None and expected is None) or (edit.get("before") is not None and original is None):
            return "Its recorded content is no longer in the host's content store."
        uri = entry_id(edit)
        if uri is None:
            return "The change names no file."
        return self._rewrite(uri, expected, original, folders)

    def _rewrite(self, file_id: str, expected: bytes | None, data: bytes | None, folders: tuple[Path, ...] = ()) -> str | None:
        """Replace a file whose content must still be ``expected`` with ``data`` (None: absent,
        on either side); a sentence saying why not, or None when done."""
        try:
            path = self._resolve_uri(file_id)
        except RpcError as error:
            return error.message
        try:
            current = read_regular(path)
        except FileNotFoundError:
            current = None
        except NotARegularFile as error:
            return f"It is now a {error.kind}, not a regular file, so it was left alone."
        except OSError as error:
            return f"It cannot be read ({error.strerror or type(error).__name__})."
        if current != expected:
            if expected is None:
                return "It was deleted by the agent and has been created again since."
            if current is None:
                return "It has been deleted since the agent wrote it."
            return ("Its content changed since the agent wrote it (by you, another program or a later turn); "
                    "review it yourself, or undo the later turns first.")
        try:
            if data is None:
                path.unlink()
                _remove_empty_folders(path.parent, folders)
            else:
                write_atomically(path, data)
        except OSError as error:
            return f"It could not be written ({error.strerror or type(error).__name__})."
        return None

    # -- sessions and subscriptions ------------------------------------------------------------

    def session_disposed(self, session: str) -> None:
        for uri, _ in list(self.store.channels("changeset")):
            owner = self._owner(uri)
            if owner is not None and owner[0] == session:
                self.store.dispatch(uri, builders.changeset_cleared())
                self.store.remove(uri)

    def materialize(self, uri: Any) -> bool:
        """Create the (empty) changeset of a session, or of one of its turns, on first
        subscription; True if made."""
        owner = self._owner(uri)
        if owner is None or self.store.kind(owner[0]) != "session" or uri in self.store:
            return False
        if owner[1] is None:
            self._ensure(uri, SESSION_OPERATIONS)
            return True
        if not any(owner[1] in self._turn_ids(chat) for chat in self._chats(owner[0])):
            return False
        self._ensure(uri, TURN_OPERATIONS)
        return True

    # -- state helpers -------------------------------------------------------------------------

    def _chats(self, session: str) -> list[str]:
        """The session's chats (its default chat first): a turn of any of them, a sub-agent's
        included, has a changeset."""
        catalogue = [entry.get("resource") for entry in (self.store.state(session) or {}).get("chats") or ()
                     if isinstance(entry, dict)]
        return [chat for chat in dict.fromkeys([default_chat_uri(session), *catalogue])
                if isinstance(chat, str) and self.store.kind(chat) == "chat"]

    def _turn_ids(self, chat: str) -> list[Any]:
        state = self.store.state(chat) or {}
        return [*self.store.turn_ids(chat), (state.get("activeTurn") or {}).get("id")]

    def _owner(self, uri: Any) -> tuple[str, str | None] | None:
        """``changeset_owner`` with the session named by its internal URI (``<provider>:/<id>``,
        the changeset URI only holds the id); a session this host does not hold keeps the
        ``ahp-session:/<id>`` form, which names no channel."""
        owner = changeset_owner(uri)
        if owner is None:
            return None
        suffix = ":/" + owner[0].split(":/", 1)[1]
        session = next((name for name, _ in self.store.channels("session") if name.endswith(suffix)), owner[0])
        return session, owner[1]

    def _ensure(self, uri: str, operations: list[dict[str, Any]]) -> None:
        if uri not in self.store:
            self.store.create(uri, "changeset", {"status": "ready", "files": [], "operations": operations})

    def _entry(self, uri: str, file_id: str) -> dict[str, Any] | None:
        files = (self.store.state(uri) or {}).get("files") or []
        return next((entry for entry in files if entry.get("id") == file_id), None)

    def _put(self, uri: str, file_id: str, previous: dict[str, Any] | None, entry: dict[str, Any] | None) -> None:
        if uri not in self.store:
            return
        if entry is None:
            if previous is not None:
                self.store.dispatch(uri, builders.changeset_file_removed(file_id=file_id))
        elif entry != previous:
            self.store.dispatch(uri, builders.changeset_file_set(file=entry))

    def _publish_catalogue(self, session: str) -> None:
        state = self.store.state(session)
        if state is None or session_changeset(session) not in self.store:
            return
        changesets = catalogue(session, (self.store.state(session_changeset(session)) or {}).get("files") or [])
        if state.get("changesets") != changesets:
            self.store.dispatch(session, builders.session_changesets_changed(changesets=changesets))

    def _bytes(self, side: Any) -> bytes | None:
        if not isinstance(side, dict):
            return None
        return self.content.get(side["content"]["uri"])


_OUTSIDE_EDITS = ("It was also edited outside the agent between the agent's changes, and undoing them together would "
                  "undo those edits too; undo the turns one at a time instead.")


def _lines_text(hunk: blocks.Hunk, side: str) -> str:
    start, end = (hunk.before_start, hunk.before_end) if side == "before" else (hunk.after_start, hunk.after_end)
    return f"{start + 1}" if end - start <= 1 else f"{start + 1}-{end}"


def _count(n: int) -> str:
    return "1 file" if n == 1 else f"{n} files"


def _name(uri: str) -> str:
    return uri.rsplit("/", 1)[-1]


def _working_folders(state: dict[str, Any]) -> tuple[Path, ...]:
    """The session's working directories as resolved paths (local ``file:`` ones)."""
    folders = []
    for uri in state.get("workingDirectories") or ():
        if isinstance(uri, str) and uri.startswith("file:"):
            folders.append(Path(unquote(urlparse(uri).path)).resolve())
    return tuple(folders)


def _remove_empty_folders(folder: Path, inside: tuple[Path, ...]) -> None:
    """Remove ``folder`` and its parents while they are empty and strictly inside one of ``inside``
    (never a working directory itself, nor anything outside them)."""
    folder = folder.resolve()
    while any(root in folder.parents for root in inside):
        try:
            folder.rmdir()  # only an empty one
        except OSError:
            return
        folder = folder.parent
