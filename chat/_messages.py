"""What the user sends from the interactive chat: a message that starts a turn, a steering message
for the running turn, or one queued for after it, each with its attachments.

The session is created on first use (in ``--permission-mode``'s mode, or the one switched to
before). A new session's folder may ask to be trusted: that question (a dialog,
``chat._dialogs``) is answered before the session's first message is sent, so the message runs
with the user's choice. Attachments are the message's ``@paths`` and pasted image paths
(``chat._answers``), then the images ``/paste-image`` took from the clipboard for it (taken once).
"""

from __future__ import annotations

import time
from typing import Any

import chat._session as actions
from chat._answers import attachments_in, session_directory
from chat._core import ChatCore
from chat._dialogs import Dialogs
from chat._images import model_sees_images
from chat.render import clean
from client import ROOT_CHANNEL, AhpError

__all__ = ["Messages"]


class Messages:
    """Sending on the chat's ``core``; the ``dialogs`` answer a new folder's trust question first."""

    def __init__(self, core: ChatCore, dialogs: Dialogs) -> None:
        self.core = core
        self.dialogs = dialogs
        self.pasted_images: list[dict[str, Any]] = []
        """Images ``/paste-image`` took from the clipboard, sent with the next message."""

    async def ensure_session(self) -> bool:
        """Create the session if there is none yet; False (and says why) when the host refuses."""
        core = self.core
        if core.session:
            return True
        try:
            core.session = await core.client.create_session(
                provider=core.provider, model=core.model, working_directory=core.cwd.as_uri(),
                config={actions.PERMISSION_MODE: core.new_session_mode} if core.new_session_mode else None,
            )
        except AhpError as error:
            core.problem(f"cannot create a session: {error.message}")
            return False
        summary = (core.state() or {}).get("summary") or {}
        model = (summary.get("model") or {}).get("id")
        core.provider = summary.get("provider", core.provider)
        core.note(f"(new session · agent {clean(core.provider)}" + (f" · model {clean(model)}" if model else "") + ")")
        core.oldest_shown = 0
        return True

    async def send(self, text: str, attachments: list[dict[str, Any]] | None = None) -> None:
        """Start a turn with ``text`` (and ``attachments`` besides those the text names)."""
        core = self.core
        created = core.session is None
        if not await self.ensure_session():
            return
        if created:
            await self.dialogs.settle_trust()
        assert core.session is not None
        state = core.state() or {}
        if state.get("lifecycle") == "failed":
            error = state.get("creationError") or {}
            core.problem(f"this session could not start: {error.get('message', 'unknown error')}; /new starts another")
            return
        all_attachments = self._attachments(text) + list(attachments or [])
        action = actions.turn_started(text, all_attachments)
        core.turn_since[action["turnId"]] = time.monotonic()
        assert core.chat is not None
        core.start_seq = core.client.dispatch(core.chat, action)
        core.current_turn = action["turnId"]
        core.own_turns.add(action["turnId"])

    def send_pending(self, kind: str, text: str) -> None:
        """Send ``text`` as a ``steering`` message for the running turn or a ``queued`` one."""
        core = self.core
        if not core.session:
            return
        action = actions.pending_message(kind, text, self._attachments(text))
        if kind == "steering":
            core.steer(action, text)
            core.note("(steering the running turn)")
        else:
            assert core.chat is not None
            core.client.dispatch(core.chat, action)
            core.note("(queued for after the turn)")

    def _attachments(self, text: str) -> list[dict[str, Any]]:
        """The message's attachments: its ``@paths`` and pasted image paths, then the images
        ``/paste-image`` took from the clipboard for it (taken once)."""
        core = self.core
        sees, model = self.sees_images()
        attachments, problems = attachments_in(text, session_directory(core.state(), core.cwd), vision=sees, model=model)
        attachments += self.pasted_images
        self.pasted_images = []
        for problem in problems:
            core.note(f"(not attached: {problem})")
        for attachment in attachments:
            if attachment.get("type") == "simple":
                continue  # an image the model cannot see: said above
            kind = " (image)" if attachment.get("displayKind") == "image" else ""
            core.note(f"(attached {attachment['label']}{kind})")
        return attachments

    def sees_images(self) -> tuple[bool | None, str]:
        """Whether the session's model takes images (None: the host does not say), and its name."""
        core = self.core
        agents = (core.client.state(ROOT_CHANNEL) or {}).get("agents") or ()
        state = core.state()
        if state is None and core.provider:  # no session yet: the agent and model it will be created with
            state = {"summary": {"provider": core.provider, "model": core.model}}
        return model_sees_images(agents, state)
