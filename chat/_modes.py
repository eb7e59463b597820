"""The session's permission mode in the interactive chat: Shift+Tab, ``/mode`` and the status line.

The mode is the session config property ``permissionMode`` (``default``, ``accept-edits``,
``plan``, ``full-auto``), held by the host: switching it dispatches ``session/configChanged``, so
every client of the session (VS Code included) sees the change, and a change made elsewhere shows
here at the next redraw (the status line reads the client's mirror). Before the session exists
(it is created with the first message), the chosen mode is kept and the session is created in it
(``createSession`` with ``config.permissionMode``), as ``--permission-mode`` does.

* Shift+Tab (the prompt_toolkit terminal) steps default → accept-edits → plan → default; full-auto
  is entered only on purpose (``/mode full-auto`` or ``--permission-mode full-auto``), and
  Shift+Tab from it goes back to default.
* ``/mode`` shows the mode and what each one does; ``/mode MODE`` switches to it (the line
  terminal's way, since it has no Shift+Tab).
* The status line above the input says the mode when it is not the default.
"""

from __future__ import annotations

from ahp.dialects.v0_2 import builders
from chat import _session as actions
from chat._core import ChatCore

__all__ = ["Modes"]


class Modes(ChatCore):
    def _install_mode_key(self) -> None:
        self.terminal.on_mode_key(self._cycle_mode, self._mode_line)

    def _current_mode(self) -> str | None:
        """The session's mode; before it exists, the one it will be created in."""
        if self.session:
            return actions.permission_mode(self._state())
        return self._new_session_mode or "default"

    def _mode_line(self) -> str:
        return actions.mode_status(self._current_mode())

    def _cycle_mode(self) -> None:
        current = self._current_mode()
        if current is None:
            self._problem("this session has no permission modes (its host runs no tools, or it predates them)")
            return
        self._switch_mode(actions.next_mode(current), quiet=True)

    def _switch_mode(self, mode: str, *, quiet: bool = False) -> None:
        if not self.session:
            self._new_session_mode = mode
        elif actions.permission_mode(self._state()) is None:
            self._problem("this session has no permission modes (its host runs no tools, or it predates them)")
            return
        else:  # a refusal is reported with the host's reason, like every refused action
            self.client.dispatch(self.session, builders.session_config_changed(config={actions.PERMISSION_MODE: mode}))
        if not quiet:
            self._note(f"(permission mode: {mode}: {actions.MODE_DESCRIPTIONS[mode]})")

    async def _cmd_mode(self, args: str) -> None:
        wanted = args.strip()
        if not wanted:
            current = self._current_mode()
            if current is None:
                self._problem("this session has no permission modes (its host runs no tools, or it predates them)")
                return
            for mode in actions.PERMISSION_MODES:
                mark = "●" if mode == current else " "
                self._write(f" {mark} {mode:<13} {self.style.dim(actions.MODE_DESCRIPTIONS[mode])}\n")
            self._note("(/mode MODE switches; Shift+Tab cycles default, accept-edits and plan)")
            return
        if wanted not in actions.PERMISSION_MODES:
            self._problem(f"no permission mode {wanted!r}; choose one of {', '.join(actions.PERMISSION_MODES)}")
            return
        self._switch_mode(wanted)
