"""The session's permission mode in the interactive chat: Shift+Tab, ``/mode`` and the status line.

The mode is the session config property ``permissionMode`` (``default``, ``accept-edits``,
``plan``, ``full-auto``), held by the host: switching it dispatches ``session/configChanged``, so
every client of the session (VS Code included) sees the change, and a change made elsewhere shows
here at the next redraw (the status line reads the client's mirror). Before the session exists
(it is created with the first message), the chosen mode is kept and the session is created in it
(``createSession`` with ``config.permissionMode``, ``chat._messages``), as ``--permission-mode`` does.

* Shift+Tab (the prompt_toolkit terminal) steps default → accept-edits → plan → default; full-auto
  is entered only on purpose (``/mode full-auto`` or ``--permission-mode full-auto``), and
  Shift+Tab from it goes back to default.
* ``/mode`` shows the mode and what each one does; ``/mode MODE`` switches to it (the line
  terminal's way, since it has no Shift+Tab).
* The status line above the input says the mode when it is not the default.
"""

from __future__ import annotations

import chat._session as actions
from ahp.protocol import builders
from chat._core import ChatCore

__all__ = ["Modes"]


class Modes:
    """The permission mode of the chat's session, on its shared ``core``."""

    def __init__(self, core: ChatCore) -> None:
        self.core = core

    def install_key(self) -> None:
        """Shift+Tab cycles the mode, and the status line says it (where the terminal has both)."""
        self.core.terminal.on_mode_key(self._cycle, self._status)

    def current(self) -> str | None:
        """The session's mode; before it exists, the one it will be created in."""
        if self.core.session:
            return actions.permission_mode(self.core.state())
        return self.core.new_session_mode or "default"

    def _status(self) -> str:
        return actions.mode_status(self.current())

    def _cycle(self) -> None:
        current = self.current()
        if current is None:
            self.core.problem("this session has no permission modes (its host runs no tools, or it predates them)")
            return
        self.switch(actions.next_mode(current), quiet=True)

    def switch(self, mode: str, *, quiet: bool = False) -> None:
        """Switch the session to ``mode`` (before it exists: the mode it will be created in)."""
        if not self.core.session:
            self.core.new_session_mode = mode
        elif actions.permission_mode(self.core.state()) is None:
            self.core.problem("this session has no permission modes (its host runs no tools, or it predates them)")
            return
        else:  # a refusal is reported with the host's reason, like every refused action
            self.core.client.dispatch(self.core.session, builders.session_config_changed(config={actions.PERMISSION_MODE: mode}))
        if not quiet:
            self.core.note(f"(permission mode: {mode}: {actions.MODE_DESCRIPTIONS[mode]})")

    async def command(self, args: str) -> None:
        """``/mode`` shows the modes; ``/mode MODE`` switches to one."""
        wanted = args.strip()
        if not wanted:
            current = self.current()
            if current is None:
                self.core.problem("this session has no permission modes (its host runs no tools, or it predates them)")
                return
            for mode in actions.PERMISSION_MODES:
                mark = "●" if mode == current else " "
                self.core.write(f" {mark} {mode:<13} {self.core.style.dim(actions.MODE_DESCRIPTIONS[mode])}\n")
            self.core.note("(/mode MODE switches; Shift+Tab cycles default, accept-edits and plan)")
            return
        if wanted not in actions.PERMISSION_MODES:
            self.core.problem(f"no permission mode {wanted!r}; choose one of {', '.join(actions.PERMISSION_MODES)}")
            return
        self.switch(wanted)
