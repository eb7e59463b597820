"""The interactive chat's slash commands (but for those of sessions: ``chat._sessions``; ``/diff``,
``/undo``, ``/rewind``: ``chat._changes``; and ``/mode``: ``chat._modes``): agents and models, the
title, the queue, compaction, remembered approvals (``/permissions``, listed and revoked through
the root config the host shares with every client), help and quit; any other ``/name args`` is a
command, skill or prompt the host offers through ``completions`` (project ``.claude/commands``,
plugin ``plugin:cmd``, ...) and is sent as a message with its attachment.

A command is matched by its name, the first word; the rest of the line is its arguments. The
client asks the host's ``completions`` for ``/name`` alone (the word at the cursor of the whole
line would be the last argument) and sends the whole line as typed: the host expands the
command's body with ``$ARGUMENTS`` and ``$1``.. (``plugins.model``) before the model sees it.
``/compact [FOCUS]`` is sent as a message too: the host's model agents compact the session's
older turns when a turn's text is ``/compact`` (``host.runtime.agents.turn``). ``/init [FOCUS]``
is a normal turn whose message is ``INIT_PROMPT``: the agent studies the project and writes an
``AGENTS.md`` (or improves the one there), through the usual confirmation of its edits. ``/trust`` lists the folders
the host trusts and changes that list with ``root/configChanged`` (``/trust add|revoke [FOLDER]``,
``ahp.workspace_trust``). ``/mode [MODE]`` shows or switches the session's permission mode
(``chat._modes``). ``/plugin`` lists and changes the user's Claude Code marketplaces and plugins
(``chat._plugin_command``). ``/paste-image`` takes the clipboard's image (``wl-paste`` or ``xclip``)
for the next message, as image files named with ``@path`` or pasted as paths are (``chat._images``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import chat._session as actions
from ahp.protocol import builders
from ahp.text_offsets import utf16_length
from ahp.workspace_trust import CONFIG_KEY, trusted_folders, with_folder, without_folder
from chat._answers import AnswerError, model_selection, session_directory
from chat._core import ChatCore, ChatExit
from chat._images import ImageError, clipboard_image, image_attachment
from chat._messages import Messages
from chat._plugin_command import plugin_command
from chat._sessions import Sessions
from chat.render import (
    HELP_TEXT,
    clean,
    render_agents,
    render_models,
)
from chat.views import (
    REMEMBERED,
    remembered_scope,
    render_context,
    render_cost,
    render_mcp,
    render_mcp_log,
    render_permissions,
    render_plugins,
    render_tools,
    render_trust,
    without_remembered,
)
from client import ROOT_CHANNEL, AhpClientError, AhpError

__all__ = ["Commands", "INIT_PROMPT"]

INIT_PROMPT = """\
Study this project and write an AGENTS.md file at the root of the working directory: the guide a \
coding agent, or a new contributor, needs to work here well. If an AGENTS.md is already there, \
read it first and improve it in place (edit it rather than writing it anew): keep what is still \
true, correct what is not, add what is missing; do not start over.

Look around before you write: the README and other docs, the build and package files \
(pyproject.toml, package.json, Makefile, Cargo.toml, go.mod and the like), the CI configuration, \
how the tests are laid out, and any other instruction files (CLAUDE.md, .cursorrules, \
.cursor/rules/, .github/copilot-instructions.md), whose useful content belongs in AGENTS.md.

Then write it with these sections, in this order, each only where the project gives you something \
true to say:
1. What the project is, in two or three sentences.
2. The commands to set it up, build it, lint it and run the tests, and how to run a single test, \
exactly as they are typed.
3. The layout: the main folders and what lives in each, and the architecture that only shows when \
several files are read together.
4. The conventions a newcomer would get wrong: style, naming, error handling, how tests are \
written, commit messages.
5. Anything else that is surprising or easy to break.

Keep it short and particular to this project: facts you checked in its files, no generic advice \
(such as "write clean code" or "add tests"), no commands you did not find, and no list of every \
file. When it is written, say in a few lines what it holds."""
"""What ``/init`` asks the agent (a fixed text, so that the request is the same every time)."""

_METHOD_NOT_FOUND = -32601


class Commands:
    """The handlers of the client's other slash commands (``chat._command_table``) and of the
    host's (``host_command``), on the chat's shared ``core``; the ``messages`` send what a command
    sends, and ``/agent NAME`` starts a new session (``sessions``)."""

    def __init__(self, core: ChatCore, messages: Messages, sessions: Sessions) -> None:
        self.core = core
        self.messages = messages
        self.sessions = sessions

    async def help(self, args: str) -> None:
        self.core.write(HELP_TEXT)
        if not self.core.session:
            self.core.note("(the host's commands and skills for a session are listed here once it exists)")
            return
        try:
            entries = await self._host_entries("/")
        except AhpError:  # a host without completions offers no commands
            entries = {}
        if entries:
            self.core.write("The host offers, in this session (/NAME args):\n")
            for name, item in sorted(entries.items()):
                attachment = item.get("attachment") or {}
                kind = clean((attachment.get("_meta") or {}).get("kind") or attachment.get("displayKind") or "")
                self.core.write(f"  /{clean(name):<30} {self.core.style.dim(kind)}\n")

    async def compact(self, args: str) -> None:
        """``/compact [FOCUS]``: a turn whose text the host's model agents read as "compact now"."""
        await self.messages.send("/compact" + (f" {args.strip()}" if args.strip() else ""))

    async def init(self, args: str) -> None:
        """``/init [FOCUS]``: ask the agent to write (or improve) the project's AGENTS.md. Its
        turn uses no remembered "Always allow" choice, so the write is confirmed as said (the
        session's own value comes back when the turn ends); a mode in which edits do not ask is
        named instead of promising a confirmation."""
        core = self.core
        if not await self.messages.ensure_session():
            return
        assert core.session is not None
        mode = actions.permission_mode(core.state())
        if mode in ("accept-edits", "full-auto"):
            core.note(f"(asking the agent to study the project and write AGENTS.md; in {mode} mode the write does not ask: "
                      "/diff shows it, /undo takes it back)")
        else:
            core.note("(asking the agent to study the project and write AGENTS.md; you confirm the file before it is written)")
            config = (core.state() or {}).get("config") or {}
            if actions.REMEMBERED_USE in ((config.get("schema") or {}).get("properties") or {}):
                previous = (config.get("values") or {}).get(actions.REMEMBERED_USE) or "all"
                if previous != "none":
                    seq = core.client.dispatch(core.session, builders.session_config_changed(config={actions.REMEMBERED_USE: "none"}))
                    if (await core.client.outcome(seq)).status == "accepted":
                        core.config_after_turn[actions.REMEMBERED_USE] = previous
        focus = args.strip()
        await self.messages.send(INIT_PROMPT + (f"\n\nThe user adds: {focus}" if focus else ""))

    async def reload(self, args: str) -> None:
        """``/reload``: the shared host reads its config file again (``cli.shared_host.reload_host``)."""
        if self.core.reload_config is None:
            self.core.note("(/reload works on agent-host's own shared host; restart this host to change its config)")
            return
        try:
            self.core.note(f"({await self.core.reload_config()})")
        except Exception as error:  # SharedHostError, ConfigError: their text says what to fix
            self.core.problem(str(error))

    async def paste_image(self, args: str) -> None:
        """``/paste-image``: the clipboard's image goes with the next message (``chat._images``)."""
        sees, model = self.messages.sees_images()
        if sees is False:
            self.core.problem(f"{model} cannot see images; pick a model that can with /model")
            return
        try:
            data, kind = await clipboard_image()
            label = f"clipboard image {len(self.messages.pasted_images) + 1}"
            self.messages.pasted_images.append(image_attachment(data, label, kind))
        except ImageError as error:
            self.core.problem(str(error))
            return
        self.core.note(f"({label}: {kind}, {max(1, len(data) // 1024)} KB, goes with your next message)")

    async def quit(self, args: str) -> None:
        raise ChatExit(0)

    async def queue(self, args: str) -> None:
        if not args:
            self.core.note("usage: /queue TEXT")
        elif await self.messages.ensure_session():
            self.messages.send_pending("queued", args)

    # -- views of the session ---------------------------------------------------------------------

    async def _session_view(self) -> dict[str, Any] | None:
        """The session to show (created now if there is none yet: its tools and servers exist from the start)."""
        if not await self.messages.ensure_session():
            return None
        return self.core.state() or {}

    async def tools(self, args: str) -> None:
        if (state := await self._session_view()) is not None:
            self.core.write(render_tools(state, self.core.style))

    async def mcp(self, args: str) -> None:
        """``/mcp`` lists the session's MCP servers; ``/mcp log NAME`` shows one server's log."""
        verb, _, name = args.strip().partition(" ")
        if (state := await self._session_view()) is not None:
            if verb == "log" and name.strip():
                self.core.write(render_mcp_log(state, name.strip(), self.core.style))
            elif verb:
                self.core.note("usage: /mcp, or /mcp log NAME for one server's log")
            else:
                self.core.write(render_mcp(state, self.core.style))

    async def plugins(self, args: str) -> None:
        if (state := await self._session_view()) is not None:
            self.core.write(render_plugins(state, self.core.style))

    async def plugin(self, args: str) -> None:
        """``/plugin ...``: Claude Code marketplaces and plugins through the root config (``chat._plugin_command``)."""

        async def change(values: dict[str, Any]) -> str | None:
            outcome = await self.core.client.outcome(self.core.client.dispatch(ROOT_CHANNEL, {"type": "root/configChanged", "config": values}))
            return None if outcome.status == "accepted" else str(outcome.reason)

        async def wait(predicate: Callable[[], bool]) -> bool:
            try:
                await self.core.client.wait_for(lambda m, e: predicate(), timeout=300)
            except AhpClientError:
                return False
            return True

        await plugin_command(args, config=lambda: (self.core.client.state(ROOT_CHANNEL) or {}).get("config"),
                             session=self.core.state() if self.core.session else None, change=change, wait=wait,
                             write=self.core.write, note=self.core.note, problem=self.core.problem, style=self.core.style)

    async def trust(self, args: str) -> None:
        """``/trust`` lists the trusted folders; ``/trust add [FOLDER]`` and ``/trust revoke [FOLDER]``
        change the host's list (``root/configChanged``; FOLDER defaults to this session's folder)."""
        verb, _, rest = args.partition(" ")
        state = self.core.state() if self.core.session else None
        folder = os.path.realpath(os.path.expanduser(rest.strip())) if rest.strip() else \
            os.path.realpath(session_directory(state, self.core.cwd) if state else self.core.cwd)
        root = self.core.client.state(ROOT_CHANNEL) or {}
        listed = trusted_folders(root.get("config"))
        if not verb:
            self.core.write(render_trust(root, folder, state, self.core.style))
            return
        if verb not in ("add", "revoke"):
            self.core.note("usage: /trust, /trust add [FOLDER], /trust revoke [FOLDER]")
            return
        changed = with_folder(listed, folder) if verb == "add" else without_folder(listed, folder)
        if changed == listed:
            self.core.note(f"(nothing to change: {clean(folder)} is {'already' if verb == 'add' else 'not'} in the host's list"
                           + ("" if verb == "add" else "; a folder above it, the host's own config or a client's workspace trust (VS Code's)"
                              " may trust it: /trust shows which") + ")")
            return
        outcome = await self.core.client.outcome(self.core.client.dispatch(ROOT_CHANNEL, builders.root_config_changed(config={CONFIG_KEY: changed})))
        if outcome.status != "accepted":
            self.core.problem(f"the host refused it: {outcome.reason}")
            return
        self.core.note(f"({'trusted' if verb == 'add' else 'no longer trusted'}: {clean(folder)})")

    async def context(self, args: str) -> None:
        if (state := await self._session_view()) is not None:
            self.core.write(render_context(state, self._agents(), self.core.style))

    async def cost(self, args: str) -> None:
        if (state := await self._session_view()) is not None:
            self.core.write(render_cost(state, self.core.style))

    async def permissions(self, args: str) -> None:
        """``/permissions``: the host's remembered approvals; ``/permissions revoke N`` forgets one."""
        words = args.split()
        config = (self.core.client.state(ROOT_CHANNEL) or {}).get("config")
        if not words:
            self.core.write(render_permissions(config, self.core.style))
            return
        if words[0] not in ("revoke", "rm") or len(words) != 2 or not words[1].isdigit():
            self.core.note("usage: /permissions (list) or /permissions revoke N")
            return
        found = without_remembered(config, int(words[1]))
        if found is None:
            self.core.note(f"there is no remembered approval {words[1]}; /permissions lists them")
            return
        remaining, entry = found
        seq = self.core.client.dispatch(ROOT_CHANNEL, builders.root_config_changed(config={REMEMBERED: remaining}))
        outcome = await self.core.client.outcome(seq)
        if outcome.status != "accepted":
            self.core.problem(f"the host did not revoke it: {outcome.reason}")
            return
        self.core.note(f"(revoked: {clean(str(entry.get('rule')))} for {remembered_scope(entry)}; such calls ask again)")

    def _agents(self) -> list[dict[str, Any]]:
        return list((self.core.client.state(ROOT_CHANNEL) or {}).get("agents") or [])

    async def agent(self, args: str) -> None:
        name = args.strip()
        agents = self._agents()
        if not name:
            self.core.write(render_agents(agents, self.core.style, current=self.core.provider))
            return
        if any(a.get("provider") == name for a in agents):
            self.core.provider = name
            self.core.model = None
            if self.core.session:
                await self.sessions.new("")
            else:
                self.core.note("(a new session starts with your next message)")
            self.core.note(f"(agent {name})")
            return
        # Not a host agent: maybe an agent customization offered inside this session.
        for container in (self.core.state() or {}).get("customizations") or ():
            for child in container.get("children") or ():
                if child.get("type") == "agent" and name in (child.get("name"), child.get("id"), child.get("uri")):
                    assert self.core.chat is not None
                    self.core.client.dispatch(self.core.chat, actions.model_draft(self.core.client.state(self.core.chat), "agent",
                                                                                  {"uri": child["uri"]}))
                    self.core.note(f"(agent {clean(child.get('name'))} from the next turn)")
                    return
        known = ", ".join(str(a.get("provider")) for a in agents) or "none"
        self.core.note(f"no agent {name!r} (agents: {known})")

    async def model(self, args: str) -> None:
        provider = self.core.provider
        state = self.core.state()
        if state:
            provider = state.get("summary", {}).get("provider", provider)
        if provider is None:  # no session yet and no /agent: the host will pick, any agent's model may do
            models = [m for a in self._agents() for m in a.get("models") or ()]
        else:
            agent = next((a for a in self._agents() if a.get("provider") == provider), {})
            models = agent.get("models") or []
        current = (state or {}).get("summary", {}).get("model") if state else self.core.model
        if not args.strip():
            self.core.write(render_models(models, self.core.style, current=current))
            return
        try:
            selection = model_selection(args.split(), models)
        except AnswerError as error:
            self.core.note(str(error))
            return
        if self.core.chat:
            self.core.client.dispatch(self.core.chat, actions.model_draft(self.core.client.state(self.core.chat), "model", selection))
            self.core.note(f"(model {selection['id']} from the next turn)")
        else:
            self.core.model = selection
            self.core.note(f"(model {selection['id']} for the new session)")

    async def title(self, args: str) -> None:
        if not args.strip():
            self.core.note("usage: /title TEXT")
        elif await self.messages.ensure_session():
            assert self.core.session is not None
            self.core.client.dispatch(self.core.session, builders.session_title_changed(title=args.strip()))

    async def completions(self, text: str, offset: int) -> list[dict[str, Any]]:
        """The host's completion items for ``text`` typed so far (none without a session)."""
        if not self.core.session:
            return []
        try:
            result = await self.core.client.request("completions", {"channel": self.core.session, "kind": "userMessage", "text": text, "offset": offset})
        except (AhpError, AhpClientError):
            return []
        return [i for i in (result or {}).get("items") or () if isinstance(i, dict)]

    async def _host_entries(self, typed: str) -> dict[str, dict[str, Any]]:
        """The host's ``/`` completion items for ``typed`` (``/`` + a name prefix), by command name.

        Raises ``AhpError`` when the host refuses (e.g. it does not support completions)."""
        assert self.core.session is not None
        result = await self.core.client.request(  # AHP offsets are UTF-16 code units
            "completions", {"channel": self.core.session, "kind": "userMessage", "text": typed, "offset": utf16_length(typed)}
        )
        entries: dict[str, dict[str, Any]] = {}
        for item in (result or {}).get("items") or ():
            insert = str(item.get("insertText", "")).strip() if isinstance(item, dict) else ""
            if insert.startswith("/") and insert[1:]:
                entries.setdefault(insert[1:].split()[0], item)
        return entries

    async def host_command(self, name: str, text: str) -> None:
        """``/name args``: a command or skill the host offers through ``completions``, matched by
        its name alone; the line is sent whole (the host expands the arguments)."""
        if not await self.messages.ensure_session():
            return
        try:
            entries = await self._host_entries("/" + name)
        except AhpError as error:
            if error.code == _METHOD_NOT_FOUND:
                self.core.note(f"/{name}: this host does not offer commands or skills (it does not support completions yet); /help lists the client's commands")
            else:
                self.core.problem(f"/{name}: {error.message}")
            return
        match = entries.get(name)
        if match is None:  # a bare name the host knows under its plugin (``/gitctx`` for ``styleplug:gitctx``)
            found = [item for key, item in entries.items() if key.split(":")[-1] == name]
            match = found[0] if len(found) == 1 else None
        if match is None:
            offered = ", ".join("/" + key for key in sorted(entries))
            self.core.note(f"unknown command /{name}" + (f" (did you mean: {offered})" if offered else "; /help lists commands"))
            return
        attachment = match.get("attachment")
        await self.messages.send(text, [attachment] if isinstance(attachment, dict) else None)

