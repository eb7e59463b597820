"""``/diff``, ``/undo`` and ``/rewind``: the host's changesets and the session's turns, from the chat.

Everything here is done with AHP operations any client has (PROTOCOL.md §11 and the session
actions), nothing the chat keeps of its own:

* ``/diff`` subscribes to the session changeset (``summary.changesets``, the entry whose
  ``uriTemplate`` has no ``{turnId}``: the files the session's tools changed that are not yet kept
  or undone), reads each file's ``before`` and ``after`` content with ``resourceRead`` and prints
  them as unified diffs (highlighted with rich in a colour terminal). ``/diff N``: what turn N
  changed (its turn changeset, the template with ``{turnId}`` filled in).
* ``/undo`` finds the newest turn whose turn changeset still holds changes, shows them, asks, and
  runs that changeset's ``revert`` operation (``invokeChangesetOperation``). The host's conflict
  rules apply as they are: a file changed since the agent wrote it is left alone and named; when
  nothing could be undone the host answers -32011 and the chat shows its message. Again steps back
  one more turn.
* ``/rewind [N [both|conversation|files]]`` goes back to before turn N: ``files`` reverts the turn
  changesets of turns N to the last, newest first (so each revert finds the content the later
  turn started from); ``conversation`` dispatches ``chat/truncated`` keeping the turns before N
  (none for N = 1) and puts turn N's message back in the input line to edit and send again;
  ``both`` does files, then the conversation. Without arguments it lists the turns and asks.
  Turn numbers are those ``/history`` and ``/fork`` show.

Nothing runs while a turn is running (its changes are not final); the commands say so.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import chat._session as actions
from ahp.protocol import builders
from chat._core import ChatCore
from chat._dialogs import Dialogs
from chat._markdown import render_edit
from chat.render import clean, render_unified_diff
from chat.views import render_change_list
from client import AhpClientError, AhpError

__all__ = ["Changes", "REWIND_MODES"]

REWIND_MODES = {"both": ("files", "conversation"), "conversation": ("conversation",), "files": ("files",)}
"""What each ``/rewind`` mode puts back."""

_CONFLICT = -32011
_TURN_LIST = 20


class Changes:
    """The handlers of ``/diff``, ``/undo`` and ``/rewind`` (``chat._command_table``), on the
    chat's shared ``core``; the ``dialogs`` ask which turn and how, and show each file's changes."""

    def __init__(self, core: ChatCore, dialogs: Dialogs) -> None:
        self.core = core
        self.dialogs = dialogs

    # -- reading changesets ----------------------------------------------------------------------

    def _turns(self) -> list[dict[str, Any]]:
        return [t for t in (self.core.state() or {}).get("turns") or () if isinstance(t, dict)]

    def _catalogue(self) -> tuple[str | None, str | None]:
        """``(session changeset URI, per-turn template)`` from the session's summary."""
        session_uri = template = None
        for entry in ((self.core.state() or {}).get("summary") or {}).get("changesets") or ():
            uri = entry.get("uriTemplate") if isinstance(entry, dict) else None
            if isinstance(uri, str):
                if "{turnId}" in uri:
                    template = template or uri
                else:
                    session_uri = session_uri or uri
        return session_uri, template

    def _turn_changeset(self, turn_id: str) -> str | None:
        _, template = self._catalogue()
        return template.replace("{turnId}", quote(turn_id, safe="")) if template else None

    async def _files(self, uri: str) -> list[dict[str, Any]]:
        """The file entries of the changeset ``uri`` now (subscribed for the read, then let go)."""
        await self.core.client.subscribe(uri)
        try:
            return [f for f in (self.core.client.state(uri) or {}).get("files") or () if isinstance(f, dict)]
        finally:
            try:
                await self.core.client.unsubscribe(uri)
            except AhpClientError:
                pass

    def _idle_session(self, what: str) -> bool:
        """True when there is a session with no turn running; otherwise says why ``what`` waits."""
        if not self.core.session:
            self.core.note(f"no session yet: nothing to {what}")
            return False
        if (self.core.state() or {}).get("activeTurn"):
            self.core.note(f"a turn is running: wait for it (or Ctrl-C to cancel it) before you {what}")
            return False
        return True

    def _turn_number(self, text: str, turns: list[dict[str, Any]]) -> int | None:
        if not text.isdigit() or not 1 <= int(text) <= len(turns):
            self.core.note(f"pick a turn from 1 to {len(turns)} (/history shows them)" if turns else "this session has no turns yet")
            return None
        return int(text)

    # -- /diff -----------------------------------------------------------------------------------

    async def diff(self, args: str) -> None:
        args = args.strip()
        if not self.core.session:
            self.core.note("no session yet: nothing has changed")
            return
        session_uri, _ = self._catalogue()
        if args:
            turns = self._turns()
            number = self._turn_number(args, turns)
            if number is None:
                return
            uri = self._turn_changeset(turns[number - 1]["id"])
            title = f"Turn {number} changed"
        else:
            uri, title = session_uri, "This session's changes not yet kept or undone"
        files = await self._files(uri) if uri else []
        if not files:
            self.core.note("(no file changes" + (f" in turn {args})" if args else " to review in this session)"))
            return
        self.core.write(self.core.style.bold(title) + "\n" + render_change_list(files, self.dialogs.display_path, self.core.style))
        for entry in files:
            await self._show_diff(entry)

    async def _show_diff(self, entry: dict[str, Any]) -> None:
        edit = entry.get("edit") or {}
        path = self.dialogs.display_path(str(entry.get("id", "")))
        try:
            old = await self.dialogs.read_ref(edit.get("before"))
            new = await self.dialogs.read_ref(edit.get("after"))
        except AhpError as error:
            self.core.note(f"(cannot show the changes to {clean(path)}: {error.message})")
            return
        if self.core.rich:
            self.core.write(render_edit(path, old, new, self.core.width(), self.core.theme))
        else:
            self.core.write(render_unified_diff(path, old, new, self.core.style))

    # -- /undo -----------------------------------------------------------------------------------

    async def undo(self, args: str) -> None:
        args = args.strip()
        if not self._idle_session("undo"):
            return
        turns = self._turns()
        for number in range(len(turns), 0, -1):
            uri = self._turn_changeset(turns[number - 1]["id"])
            files = await self._files(uri) if uri else []
            if files:
                break
        else:
            self.core.note("nothing to undo: no turn of this session has file changes left to undo")
            return
        assert uri is not None  # the loop broke on a turn with files, so with a changeset
        message = _first_line(actions.message_text(turns[number - 1]))
        self.core.write(self.core.style.bold(f"Turn {number}") + f" ({message}) changed:\n" + render_change_list(files, self.dialogs.display_path, self.core.style))
        self.core.ask("Undo these changes? Files changed since are left alone. [y/N] ")
        answer = await self.dialogs.line(lambda: True)
        if answer is None or answer.strip().lower() not in ("y", "yes"):
            self.core.note("(nothing undone)")
            return
        await self._revert(number, uri)

    async def _revert(self, number: int, uri: str) -> bool:
        """Run the turn changeset's ``revert``; True when something was undone."""
        try:
            result = await self.core.client.request("invokeChangesetOperation", {"channel": uri, "operationId": "revert"})
        except AhpError as error:
            if error.code != _CONFLICT:
                raise
            self.core.problem(f"turn {number}: {error.message}")
            return False
        self.core.note(f"(turn {number}) " + clean((result or {}).get("message") or "Undone."))
        return True

    # -- /rewind ---------------------------------------------------------------------------------

    async def rewind(self, args: str) -> None:
        args = args.strip()
        if not self._idle_session("rewind"):
            return
        turns = self._turns()
        if not turns:
            self.core.note("this session has no turns yet: nothing to rewind")
            return
        words = args.split()
        if len(words) > 2 or (len(words) == 2 and words[1] not in REWIND_MODES):
            self.core.note("usage: /rewind [N [both|conversation|files]]")
            return
        if words:
            number = self._turn_number(words[0], turns)
            if number is None:
                return
        else:
            number = await self._pick_turn(turns)
            if number is None:
                return
        mode = words[1] if len(words) == 2 else await self._pick_mode(number)
        if mode is None:
            return
        parts = REWIND_MODES[mode]
        if "files" in parts:
            await self._rewind_files(turns, number)
        if "conversation" in parts:
            self._rewind_conversation(turns, number)

    async def _pick_turn(self, turns: list[dict[str, Any]]) -> int | None:
        start = max(0, len(turns) - _TURN_LIST)
        self.core.write(self.core.style.bold("Rewind to before which turn?") + "\n")
        if start:
            self.core.note(f"  ({start} earlier turns: /rewind N)")
        for index in range(start, len(turns)):
            text = _first_line(actions.message_text(turns[index]))
            self.core.write(f"  {index + 1:>3}) {text}\n")
        picked = await self.dialogs.pick(f"Turn [1-{len(turns)}] (Enter cancels): ", len(turns))
        if picked is None:
            self.core.note("(nothing rewound)")
        return picked

    async def _pick_mode(self, number: int) -> str | None:
        choices = [("both", "files and conversation"), ("conversation", "conversation only (files stay as they are)"),
                   ("files", "files only (the conversation stays)")]
        self.core.write(f"Go back to before turn {number}:\n" + "".join(f"  {i}) {label}\n" for i, (_, label) in enumerate(choices, 1)))
        picked = await self.dialogs.pick("Choose [1-3] (Enter cancels): ", len(choices))
        if picked is None:
            self.core.note("(nothing rewound)")
            return None
        return choices[picked - 1][0]

    async def _rewind_files(self, turns: list[dict[str, Any]], number: int) -> None:
        changed = False
        for later in range(len(turns), number - 1, -1):  # newest first
            uri = self._turn_changeset(turns[later - 1]["id"])
            if uri and await self._files(uri):
                changed = True
                await self._revert(later, uri)
        if not changed:
            self.core.note(f"(no file changes to undo since turn {number})")

    def _rewind_conversation(self, turns: list[dict[str, Any]], number: int) -> None:
        assert self.core.chat is not None
        self.core.client.dispatch(self.core.chat, builders.chat_truncated(turn_id=turns[number - 2]["id"] if number > 1 else None))
        text = actions.message_text(turns[number - 1])
        self.core.oldest_shown = 0
        where = "its message is back in the input line" if self.core.terminal.prefills else f"its message was: {clean(text)}"
        self.core.note(f"(the conversation now ends before turn {number}; {where})")
        self.core.prefill = text


def _first_line(text: Any, limit: int = 70) -> str:
    line = clean(text).strip().split("\n", 1)[0] if text else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
