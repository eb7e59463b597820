"""Pure rendering of AHP session state into terminal text for ``agent-host chat``.

Nothing here does I/O, reads the clock or touches the network: every function takes plain AHP
state (dicts as they arrive on the wire) and a ``Style`` and returns ``str``. The interactive loop
(``chat.app``) and the one-shot mode (``chat.oneshot``) decide where the text goes.

``TurnView`` is how live streaming is drawn: it is fed successive snapshots of the same turn
(``activeTurn`` while it runs, then the finished ``Turn``) and returns only what is new since the
last call. It renders *state*, not envelopes, so it shows whatever the host produced however the
actions were batched, after a reconnect replay, or when a dialog paused drawing for a while.

Invariants:

* ``TurnView.update`` never returns text it returned before for the same part (text parts are
  tracked by how many characters were shown; tool calls by the last status shown).
* With ``Style(color=False)`` the output contains no escape sequences at all.
* Host-provided strings are printed as text; control characters other than newline and tab are
  stripped, so a hostile host cannot drive the user's terminal with escape sequences.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ahp.tool_results import content_text
from chat._command_table import help_text
from chat._session import remembered_approval, shown_directory
from chat._stream import cancelled_reason

__all__ = [
    "Style",
    "TurnView",
    "Channel",
    "clean",
    "text_of",
    "render_turn",
    "render_history",
    "render_agents",
    "render_models",
    "render_tool_line",
    "render_tool_result",
    "render_confirmation",
    "render_input_request",
    "render_question",
    "render_usage",
    "render_error",
    "render_unified_diff",
    "tool_input_text",
    "input_fields",
    "shell_command_of",
    "partial_input_summary",
    "status_word",
    "turn_status",
    "Status",
    "HELP_TEXT",
]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]")


def clean(text: Any) -> str:
    """Host text made safe for a terminal: no escape or control characters but newline and tab."""
    return _CONTROL.sub("", str(text)) if text is not None else ""


def text_of(value: Any) -> str:
    """An AHP ``StringOrMarkdown`` (a string or ``{markdown}``) as plain text."""
    if isinstance(value, Mapping):
        return clean(value.get("markdown", ""))
    return clean(value) if value is not None else ""


@dataclass(frozen=True)
class Style:
    """ANSI styling, or none at all (not a TTY, or ``NO_COLOR`` set)."""

    color: bool = False

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color and text else text

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def red(self, text: str) -> str:
        return self._wrap("31", text)

    def green(self, text: str) -> str:
        return self._wrap("32", text)

    def yellow(self, text: str) -> str:
        return self._wrap("33", text)

    def cyan(self, text: str) -> str:
        return self._wrap("36", text)

    def italic(self, text: str) -> str:
        return self._wrap("3", text)


# -- tool calls ------------------------------------------------------------------------------------


def tool_input_text(call: Mapping[str, Any]) -> str:
    """The call's input as the text a user would read or edit (raw JSON text as sent)."""
    value = call.get("toolInput")
    if value is None:
        value = call.get("partialInput")
    if value is None:
        return ""
    if isinstance(value, str):
        return clean(value)
    return clean(json.dumps(value, ensure_ascii=False))


def shell_command_of(call: Mapping[str, Any]) -> str | None:
    """The shell command when the input is ``{"command": "..."}`` (shell-like tools), else None."""
    raw = call.get("toolInput")
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return None
    if isinstance(parsed, Mapping) and isinstance(parsed.get("command"), str):
        if set(parsed) - {"command", "cwd", "timeout", "timeoutSeconds", "description"}:
            return None
        return parsed["command"]
    return None


_PARTIAL_STRING = re.compile(r'"([A-Za-z_][\w-]*)"\s*:\s*"((?:[^"\\]|\\.)*)')


def partial_input_summary(call: Mapping[str, Any], limit: int = 80) -> str:
    """What a tool call's input streamed so far says, readably: the string fields of the partial
    JSON (``command: ls -la``), not its raw text (``{"comm``)."""
    raw = call.get("partialInput") or call.get("toolInput") or ""
    if not isinstance(raw, str):
        raw = json.dumps(raw, ensure_ascii=False)
    fields: list[str] = []
    for key, value in _PARTIAL_STRING.findall(raw):
        try:
            value = json.loads(f'"{value}"')
        except ValueError:
            value = value.rstrip("\\")
            try:
                value = json.loads(f'"{value}"')
            except ValueError:
                pass
        fields.append(value if key in ("command", "path", "pattern", "query", "url") and len(fields) == 0 else f"{key}: {value}")
    return _short(clean(" · ".join(fields)), limit)


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _name(call: Mapping[str, Any]) -> str:
    return clean(call.get("displayName") or call.get("toolName") or "tool")


def status_word(status: str) -> str:
    """The user-facing word for a tool call status."""
    return {
        "streaming": "preparing",
        "pending-confirmation": "waiting for your confirmation",
        "running": "running",
        "pending-result-confirmation": "waiting for you to accept the result",
        "completed": "done",
        "cancelled": "cancelled",
    }.get(status, status)


def _content_text(content: Any, limit: int | None = None, *, strip: bool = True) -> str:
    """Tool result/running content items as plain text, shortened by ``_shorten`` past ``limit``."""
    text = clean(content_text(content))
    if strip:
        text = text.strip()
    return text if limit is None else _shorten(text, limit)


def _output_and_marks(content: Any) -> tuple[str, list[str]]:
    """A running or finished call's content split into its output (the text items, which grow as
    the tool runs) and the one-line marks of its other items (``[terminal TITLE]``, an edited
    file...), so output streamed live is recognised in the result however the items are ordered."""
    items = [item for item in content or () if isinstance(item, Mapping)]
    output = clean(content_text([item for item in items if item.get("type") == "text"]))
    marks = [clean(content_text([item])) for item in items if item.get("type") != "text"]
    return output, [mark for mark in marks if mark]


def _subagent_lines(content: Any) -> str:
    """A running call's sub-agents, each on a line saying where to watch it: the sub-agent's own chat
    (``ToolResultSubagentContent.resource``), which ``/chat`` opens."""
    lines = []
    for item in content or ():
        if isinstance(item, Mapping) and item.get("type") == "subagent" and item.get("resource"):
            title = clean(str(item.get("title") or "sub-agent"))
            lines.append(f"{title} is working: /chat {clean(str(item['resource']))} to watch it\n")
    return "".join(lines)


_RESULT_LINES = 8


def _shorten(text: str, limit: int, lines: int = _RESULT_LINES) -> str:
    """At most ``lines`` whole lines and about ``limit`` characters, cut at a line or word end,
    with a note of what was left out (never half a word)."""
    kept = text.splitlines()
    if len(text) <= limit and len(kept) <= lines:
        return text
    out: list[str] = []
    size = 0
    for line in kept[:lines]:
        if size + len(line) > limit:
            room = max(0, limit - size)
            cut = line[:room].rsplit(" ", 1)[0] if " " in line[:room] else ""
            if cut:
                out.append(cut + " …")
            break
        out.append(line)
        size += len(line) + 1
    hidden = len(kept) - len(out)
    note = f"… ({hidden} more line{'s' if hidden != 1 else ''})" if hidden > 0 else ""
    return "\n".join(out + ([note] if note else []))


def render_tool_result(call: Mapping[str, Any], style: Style) -> str:
    """The short result block shown under a finished tool call (may be empty)."""
    text = _content_text(call.get("content"), 400)
    if not text:
        return ""
    return "\n".join(style.dim("    " + line) for line in text.splitlines()) + "\n"


def render_tool_line(call: Mapping[str, Any], style: Style, *, turn_state: str | None = None) -> str:
    """One line for the call in its current state (with a short result block when finished);
    ``turn_state`` is how its turn ended, which says why a call it cut short did not finish."""
    status = call.get("status", "")
    name = style.bold(_name(call))
    message = text_of(call.get("invocationMessage"))
    detail = _short(message or tool_input_text(call))
    if status == "streaming":
        return style.cyan("⚙ ") + f"{name} {style.dim('preparing…')}\n"
    if status == "pending-confirmation":
        return style.yellow("? ") + f"{name} {detail} {style.yellow('(waiting for confirmation)')}\n"
    if status == "running":
        option = call.get("selectedOption") or {}
        how = f" ({clean(option.get('label'))})" if option.get("label") else ""
        line = style.cyan("▶ ") + f"{name} {detail}{style.dim(how)}\n"
        return line + render_tool_result(call, style)
    if status == "pending-result-confirmation":
        return style.yellow("? ") + f"{name} {text_of(call.get('pastTenseMessage')) or detail} {style.yellow('(review the result)')}\n" + render_tool_result(call, style)
    if status == "completed":
        why = remembered_note(call)
        why = style.dim(f" ({clean(why)})") if why else ""
        if call.get("success", True):
            past = _short(text_of(call.get("pastTenseMessage"))) or detail
            return style.green("✓ ") + f"{name} {past}{why}\n" + render_tool_result(call, style)
        error = (call.get("error") or {}).get("message") or text_of(call.get("pastTenseMessage")) or "failed"
        return style.red("✗ ") + f"{name} failed: {clean(error)}{why}\n" + render_tool_result(call, style)
    if status == "cancelled":
        reason = cancelled_reason(call, turn_state)
        why = f": {clean(call['reasonMessage'])}" if call.get("reasonMessage") else ""
        return style.dim(f"⊘ {_name(call)} {reason}{why}") + "\n"
    return f"• {name} {clean(status)}\n"


def remembered_note(call: Mapping[str, Any]) -> str | None:
    """Why nobody was asked, when a remembered "Always allow" choice let the call run."""
    approval = remembered_approval(call)
    if approval is None:
        return None
    project = approval.get("project")
    where = f"for {shown_directory(project)}" if isinstance(project, str) else "host-wide"
    return f"allowed without asking by a choice remembered {where}: {approval['rule']}"


def input_fields(call: Mapping[str, Any], limit: int = 160) -> list[str]:
    """The call's input as a person reads it: one ``key: value`` line per field of a JSON object
    (each value on one line, shortened), or the raw text when it is not an object."""
    raw = call.get("toolInput")
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        parsed = None
    if not isinstance(parsed, Mapping):
        text = tool_input_text(call)
        return [_short(text, 400)] if text else []
    lines = []
    for key, value in parsed.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        lines.append(f"{clean(key)}: {_short(clean(shown), limit)}")
    return lines


def render_confirmation(call: Mapping[str, Any], style: Style, *, preview: str = "") -> tuple[str, list[dict[str, Any]]]:
    """The confirmation prompt text and the numbered choices it offers (in display order).

    What the call would do comes first: its title and message, the command, or ``preview`` (the
    diff of the files it edits, which says more than its input) or else its input field by field;
    the choices follow, right above where the answer is typed. Choices are the host's ``options``
    (grouped with dividers where ``group`` changes) or, when the host offers none, a plain
    approve/deny pair without option ids.
    """
    lines = [style.yellow("? ") + style.bold(text_of(call.get("confirmationTitle")) or f"Allow {_name(call)}?")]
    message = text_of(call.get("invocationMessage"))
    if message:
        lines.append("  " + message)
    command = shell_command_of(call)
    if command is not None:
        lines.append("  $ " + style.bold(clean(command)))
    elif preview:
        lines.append(preview.rstrip("\n"))
    else:
        lines.extend("  " + style.dim(line) for line in input_fields(call))
    options = [o for o in call.get("options") or () if isinstance(o, Mapping)]
    if not options:
        options = [{"label": "Allow", "kind": "approve"}, {"label": "Deny", "kind": "deny"}]
    choices: list[dict[str, Any]] = []
    previous_group: Any = None
    for index, option in enumerate(options, 1):
        group = option.get("group")
        if choices and group != previous_group:
            lines.append(style.dim("  ──"))
        previous_group = group
        label = clean(option.get("label") or option.get("id") or "")
        marker = style.green(f"{index})") if option.get("kind") == "approve" else style.red(f"{index})")
        lines.append(f"  {marker} {label}")
        choices.append(dict(option))
    if call.get("editable"):
        lines.append("  e) edit the " + ("command" if command is not None else "input") + " first")
    return "\n".join(lines) + "\n", choices


def render_unified_diff(path: str, before: str | None, after: str | None, style: Style) -> str:
    """A unified diff of one file edit (creation when ``before`` is None, deletion when ``after`` is)."""
    old = (before or "").splitlines(keepends=True)
    new = (after or "").splitlines(keepends=True)
    lines = difflib.unified_diff(
        old, new, fromfile="/dev/null" if before is None else f"a/{path}", tofile="/dev/null" if after is None else f"b/{path}"
    )
    out: list[str] = []
    for line in lines:
        line = clean(line.rstrip("\n"))
        if line.startswith(("+++", "---")):
            out.append(style.bold(line))
        elif line.startswith("+"):
            out.append(style.green(line))
        elif line.startswith("-"):
            out.append(style.red(line))
        elif line.startswith("@@"):
            out.append(style.cyan(line))
        else:
            out.append(line)
    return "\n".join(out) + ("\n" if out else "")


# -- input requests ----------------------------------------------------------------------------------


def render_input_request(request: Mapping[str, Any], style: Style) -> str:
    """The header of an input request (its message and URL)."""
    lines = [style.yellow("? ") + style.bold(text_of(request.get("message")) or "The agent asks for input")]
    if request.get("url"):
        lines.append("  open: " + clean(request["url"]))
    lines.append(style.dim("  (type /decline or /cancel at any question to refuse)"))
    return "\n".join(lines) + "\n"


def render_question(question: Mapping[str, Any], style: Style) -> str:
    """One question with its options, bounds and default, ending with the answer prompt."""
    kind = question.get("kind", "text")
    title = clean(question.get("title") or "")
    head = f"{style.bold(title)}: " if title else ""
    lines = [f"  {head}{text_of(question.get('message'))}"]
    hints: list[str] = []
    if kind in ("single-select", "multi-select"):
        for index, option in enumerate(question.get("options") or (), 1):
            star = " (recommended)" if option.get("recommended") else ""
            description = f" — {clean(option['description'])}" if option.get("description") else ""
            lines.append(f"    {index}) {clean(option.get('label', option.get('id', '')))}{style.dim(star + description)}")
        if kind == "multi-select":
            hints.append("numbers separated by commas")
        else:
            hints.append("a number")
        if question.get("allowFreeformInput"):
            hints.append("or your own text")
    elif kind == "boolean":
        hints.append("y/n")
    elif kind in ("number", "integer"):
        hints.append("a whole number" if kind == "integer" else "a number")
    if kind in ("number", "integer", "multi-select") or (kind == "text" and question.get("format")):
        bounds = []
        if question.get("format"):
            bounds.append(clean(question["format"]))
        if question.get("min") is not None:
            bounds.append(f"min {question['min']:g}" if isinstance(question["min"], (int, float)) else "")
        if question.get("max") is not None:
            bounds.append(f"max {question['max']:g}" if isinstance(question["max"], (int, float)) else "")
        hints.extend(b for b in bounds if b)
    default = question.get("defaultValue")
    if default is not None:
        shown = ("y" if default else "n") if isinstance(default, bool) else clean(default)
        hints.append(f"Enter = {shown}")
    elif not question.get("required"):
        hints.append("Enter to skip")
    hint = f" [{', '.join(hints)}]" if hints else ""
    lines.append(f"  {style.dim(hint.strip())}> " if hint else "  > ")
    return "\n".join(lines)


# -- turns and sessions ------------------------------------------------------------------------------


def render_usage(usage: Mapping[str, Any] | None, style: Style) -> str:
    """``[12 in · 80 out · model]`` or empty when the turn reported no usage."""
    if not usage:
        return ""
    parts = []
    if usage.get("inputTokens") is not None:
        parts.append(f"{usage['inputTokens']} in")
    if usage.get("outputTokens") is not None:
        parts.append(f"{usage['outputTokens']} out")
    if usage.get("cacheReadTokens"):
        parts.append(f"{usage['cacheReadTokens']} cached")
    if usage.get("model"):
        parts.append(clean(usage["model"]))
    return style.dim("[" + " · ".join(parts) + "]") + "\n" if parts else ""


def _error_of(turn: Mapping[str, Any]) -> Any:
    """The error a turn ended with: its last part's, when that is an error part."""
    parts = turn.get("responseParts") or ()
    last = parts[-1] if parts else None
    return last.get("error") if isinstance(last, Mapping) and last.get("kind") == "error" else None


def render_error(error: Mapping[str, Any] | None, style: Style) -> str:
    """A turn or session error as one line a person can act on (never the stack)."""
    error = error or {}
    message = clean(error.get("message") or "the turn failed")
    kind = clean(error.get("errorType") or "")
    return style.red("error: ") + message + (style.dim(f" ({kind})") if kind else "") + "\n"


def render_turn(turn: Mapping[str, Any], style: Style, *, number: int | None = None,
                draw: Callable[[list[tuple[Channel, str]]], str] | None = None) -> str:
    """A finished turn as history: the user's message, then the whole answer and its outcome.
    ``draw`` turns the turn's pieces (``TurnView.update_split``) into text the way a live turn is
    drawn (markdown rendered, in a colour terminal); without it they are printed as they are."""
    label = f"#{number} " if number is not None else ""
    message = turn.get("message") or {}
    out = style.bold(f"{label}you: ") + clean(message.get("text", "")) + "\n"
    for attachment in message.get("attachments") or ():
        out += style.dim(f"  @{clean(attachment.get('label') or attachment.get('uri') or '')}") + "\n"
    chunks = TurnView(style).update_split(turn)
    out += draw(chunks) if draw is not None else "".join(text for _, text in chunks)
    return out


def render_history(turns: Sequence[Mapping[str, Any]], style: Style, *, first_number: int = 1,
                   draw: Callable[[list[tuple[Channel, str]]], str] | None = None) -> str:
    """Several finished turns, numbered from ``first_number`` (numbers are what ``/fork`` takes)."""
    return "".join(render_turn(t, style, number=first_number + i, draw=draw) + "\n" for i, t in enumerate(turns))


def render_agents(agents: Sequence[Mapping[str, Any]], style: Style, *, current: str | None = None) -> str:
    """The host's agents (``AgentInfo``) with their models."""
    if not agents:
        return "This host offers no agents.\n"
    lines = []
    for agent in agents:
        mark = "*" if agent.get("provider") == current else " "
        lines.append(f"{mark} {style.bold(clean(agent.get('provider', '')))} — {clean(agent.get('displayName', ''))}")
        if agent.get("description"):
            lines.append("    " + style.dim(clean(agent["description"])))
    return "\n".join(lines) + "\n"


def render_models(models: Sequence[Mapping[str, Any]], style: Style, *, current: Mapping[str, Any] | None = None) -> str:
    """An agent's models with their options (from each model's ``configSchema``)."""
    if not models:
        return "This agent lists no models.\n"
    current_id = (current or {}).get("id")
    chosen = (current or {}).get("config") or {}
    lines = []
    for model in models:
        mark = "*" if model.get("id") == current_id else " "
        lines.append(f"{mark} {style.bold(clean(model.get('id', '')))} — {clean(model.get('name', ''))}")
        schema = model.get("configSchema") or {}
        for key, prop in (schema.get("properties") or {}).items():
            values = prop.get("enum")
            allowed = "|".join(clean(v) for v in values) if values else clean(prop.get("type", "string"))
            now = chosen.get(key) if model.get("id") == current_id else None
            now = now if now is not None else prop.get("default")
            suffix = f" (now {clean(now)})" if now is not None else ""
            lines.append(f"      {clean(key)}={allowed}{style.dim(' ' + clean(prop.get('title', '')) + suffix)}")
    lines.append(style.dim("  /model ID [option=value ...] switches model; options apply from the next turn"))
    return "\n".join(lines) + "\n"


HELP_INTRO = """\
Type a message and press Enter to send it. While the agent answers, what you type steers the
running turn; start the line with >> (or use /queue) to queue it for after the turn instead.
@path attaches a file from the working directory (@server:uri an MCP server's resource);
@image.png, or an image file's path pasted, sends the image. Ctrl-C cancels the running turn;
Ctrl-C when idle, or Ctrl-D, exits. Up and Ctrl-R recall earlier messages. In a terminal that can
draw, Alt-Enter (or Esc Enter) adds a line, a paste stays one message until Enter, Tab completes
/commands and @paths, and Ctrl-C on a line being typed clears it.

"""
HELP_TEXT = HELP_INTRO + help_text()
"""What ``/help`` shows before the host's own commands: how to type, then the client's commands
(``chat._command_table``)."""


@dataclass(frozen=True)
class Status:
    """What the live status line says while a turn runs: a label, since when, how many tokens."""

    label: str
    since: float
    """``time.monotonic()`` when the turn was sent or first seen."""
    tokens: int | None = None


def turn_status(turn: Mapping[str, Any], since: float) -> Status:
    """The live status of a running turn: what it is doing, since when, tokens so far."""
    label = "Waiting for the model"
    for part in reversed(list(turn.get("responseParts") or ())):
        if not isinstance(part, Mapping):
            continue
        kind = part.get("kind")
        if kind == "toolCall":
            call = part.get("toolCall") or {}
            status = call.get("status")
            if status == "streaming":
                summary = partial_input_summary(call, 60)
                label = f"Preparing {_name(call)}" + (f": {summary}" if summary else "")
            elif status == "running":
                label = f"Running {_name(call)}"
            elif status in ("pending-confirmation", "pending-result-confirmation"):
                label = "Waiting for you"
            else:
                label = "Thinking"
            break
        if kind == "markdown" and part.get("content"):
            label = "Answering"
            break
        if kind == "reasoning":
            label = "Thinking"
            break
    tokens = (turn.get("usage") or {}).get("outputTokens")
    if not isinstance(tokens, int):
        written = sum(len(str(p.get("content") or "")) for p in turn.get("responseParts") or ()
                      if isinstance(p, Mapping) and p.get("kind") in ("markdown", "reasoning"))
        tokens = written // 4 or None  # about four characters a token, until the host reports usage
    return Status(label, since, tokens)


# -- live turns --------------------------------------------------------------------------------------


Channel = str
"""Where a piece of rendered output belongs: ``answer`` (the reply text) or ``activity``."""


@dataclass
class TurnView:
    """Incremental renderer for one turn; ``update`` returns only what is new.

    ``chunks`` from ``update_split`` tag each piece with ``answer`` (markdown text) or ``activity``
    (reasoning, tool calls, usage, errors) so the one-shot mode can route them to stdout/stderr.
    """

    style: Style
    _shown_text: dict[str, int] = field(default_factory=dict)
    _shown_status: dict[str, str] = field(default_factory=dict)
    _shown_content: dict[str, str] = field(default_factory=dict)
    _last_kind: str | None = None
    _at_line_start: bool = True
    _finished: bool = False

    def update(self, turn: Mapping[str, Any]) -> str:
        """Everything new in ``turn`` since the previous call, as one string."""
        return "".join(text for _, text in self.update_split(turn))

    def update_split(self, turn: Mapping[str, Any]) -> list[tuple[Channel, str]]:
        """Like ``update``, but each piece tagged ``answer`` or ``activity``."""
        out: list[tuple[Channel, str]] = []
        state = turn.get("state")
        for index, part in enumerate(turn.get("responseParts") or ()):
            if isinstance(part, Mapping):
                self._part(index, part, out, state)
        if state is not None and not self._finished:
            self._finished = True
            self._end_line(out)
            if state == "error":
                out.append(("activity", render_error(_error_of(turn), self.style)))
            elif state == "cancelled":
                out.append(("activity", self.style.yellow("(cancelled)") + "\n"))
            usage = render_usage(turn.get("usage"), self.style)
            if usage:
                out.append(("activity", usage))
        return [(c, t) for c, t in out if t]

    @property
    def finished(self) -> bool:
        """True once a finished turn (one with ``state``) has been rendered."""
        return self._finished

    def _emit(self, out: list[tuple[Channel, str]], channel: Channel, text: str) -> None:
        if text:
            out.append((channel, text))
            self._at_line_start = text.endswith("\n")

    def _end_line(self, out: list[tuple[Channel, str]]) -> None:
        if not self._at_line_start:
            # The newline belongs to whatever stream the open line is on.
            markdown = (self._last_kind or "").startswith("markdown:")
            self._emit(out, "answer" if markdown else "activity", "\n")

    def _switch(self, kind: str, out: list[tuple[Channel, str]]) -> None:
        if self._last_kind != kind:
            self._end_line(out)
            self._last_kind = kind

    def _part(self, index: int, part: Mapping[str, Any], out: list[tuple[Channel, str]], turn_state: str | None = None) -> None:
        kind = part.get("kind")
        if kind in ("markdown", "reasoning"):
            key = f"{kind}:{part.get('id')}"
            content = clean(part.get("content") or "")
            shown = self._shown_text.get(key, 0)
            new = content[shown:]
            if not new:
                return
            self._shown_text[key] = len(content)
            if kind == "markdown":
                self._switch(f"markdown:{part.get('id')}", out)
                self._emit(out, "answer", new)
            else:
                if self._last_kind != f"reasoning:{part.get('id')}":
                    self._end_line(out)
                    self._last_kind = f"reasoning:{part.get('id')}"
                    self._emit(out, "activity", self.style.dim(self.style.italic("thinking: ")))
                self._emit(out, "activity", self.style.dim(new))
        elif kind == "toolCall":
            call = part.get("toolCall") or {}
            call_id = str(call.get("toolCallId"))
            status = str(call.get("status"))
            if self._shown_status.get(call_id) != status:
                self._shown_status[call_id] = status
                self._end_line(out)
                self._last_kind = f"tool:{call_id}"
                streamed = self._shown_content.get(call_id, "")
                if status == "running" or streamed:
                    # Output streamed while running is not shown again: the line carries none of
                    # it, and only what the final result adds to it follows.
                    self._emit(out, "activity", render_tool_line({**call, "content": None}, self.style, turn_state=turn_state))
                    if status != "running":
                        self._result_tail(call_id, call, streamed, out)
                else:
                    self._emit(out, "activity", render_tool_line(call, self.style, turn_state=turn_state))
            if status == "running":
                self._running_content(call_id, call, out)

        elif kind == "systemNotification":
            key = f"note:{index}"
            if key in self._shown_text:
                return
            self._shown_text[key] = 1
            self._end_line(out)
            self._last_kind = "note"
            self._emit(out, "activity", self.style.dim("ℹ " + text_of(part.get("content"))) + "\n")
        elif kind == "contentRef":
            key = f"ref:{part.get('uri')}"
            if key in self._shown_text:
                return
            self._shown_text[key] = 1
            self._end_line(out)
            self._last_kind = "ref"
            self._emit(out, "activity", self.style.dim(f"[{clean(part.get('uri', ''))}]") + "\n")

    def _result_tail(self, call_id: str, call: Mapping[str, Any], streamed: str, out: list[tuple[Channel, str]]) -> None:
        final, marks = _output_and_marks(call.get("content"))
        tail = final[len(streamed):] if final.startswith(streamed) else final.strip()
        tail = "\n".join(piece for piece in (_shorten(tail.strip("\n"), 400), *marks) if piece.strip())
        if tail.strip():
            self._emit(out, "activity", "\n".join(self.style.dim("    " + line) for line in tail.splitlines()) + "\n")

    def _running_content(self, call_id: str, call: Mapping[str, Any], out: list[tuple[Channel, str]]) -> None:
        text, _ = _output_and_marks(call.get("content"))  # the marks (a terminal...) follow the result
        text = _subagent_lines(call.get("content")) + text
        shown = self._shown_content.get(call_id, "")
        if text == shown:
            return
        self._shown_content[call_id] = text
        if text.startswith(shown) and self._last_kind == f"tool:{call_id}":
            new = text[len(shown):]
        else:  # replaced content, or other output came in between: show it whole again
            self._end_line(out)
            self._last_kind = f"tool:{call_id}"
            new = text
        at_start = self._at_line_start
        pieces = []
        for line in new.splitlines(keepends=True):
            pieces.append(("    " if at_start else "") + line)
            at_start = line.endswith("\n")
        self._emit(out, "activity", self.style.dim("".join(pieces)))
