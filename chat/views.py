"""Views of a session for the chat's ``/tools``, ``/mcp``, ``/plugins``, ``/context`` and ``/cost``,
and of the host's remembered approvals for ``/permissions``.

Pure, like ``render``: each function takes the session state as the host sent it (and, where
needed, the host's ``AgentInfo`` list) and returns text. They read only what is in the state and
say so when a field is absent (an older host, a session without usage yet) instead of failing:

* ``/tools`` — ``serverTools``, grouped as built-in or by the MCP server that provides them
  (``_meta.mcpServer``);
* ``/mcp`` — the children of the ``mcp-servers`` container with the tools each publishes; a
  server named in the container's degraded/error message is shown with that message, once (a
  server the host is restarting as restarting, not failed); what the host publishes in a server's
  ``_meta`` (its prompts as slash commands, resource counts, tools not offered and why, and the last
  ``MCP_LOG_SHOWN`` lines it logged; ``/mcp log NAME`` shows every published line of one server);
* ``/plugins`` — every other customization container with its load state, problems and what it
  contributes (skills, commands, agents, ...), and its notes (``_meta.notes``: what the host read
  leniently or ignored, which does not change the load state), leaving out workspace folders with
  nothing in them;
* ``/context`` — input tokens of the last model request against the model's
  ``maxContextWindow``, and the compactions the host reported (its ``systemNotification`` parts);
* ``/cost`` — tokens per session: totals and per model, from each turn's ``usage``;
* ``/diff``, ``/undo``, ``/rewind`` — a changeset's files, one line each: created, deleted or
  changed, lines added and removed, and the host's ``_meta.conflict`` sentence when an operation
  left the file alone.
* ``/permissions`` — the root config's ``rememberedApprovals`` (``REMEMBERED``): each *Always
  allow* choice, numbered for ``/permissions revoke N``, with its scope (a project's directory, or
  every project) and when it was given; ``without_remembered(values, n)`` is the list a revocation
  sends back.
* ``/trust`` — the folders the host trusts (``RootState.config``, ``ahp.workspace_trust``) and
  whether this session's folder is one; a server or plugin waiting for trust says so in ``/mcp``
  and ``/plugins``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ahp.workspace_trust import (
    BY_CLIENT,
    BY_CLIENT_OFF,
    SOURCE_WORDS,
    WAITING,
    forwarded_trust,
    trust_source,
    trusted_folders,
)
from chat._session import shown_directory
from chat.render import Style, clean, text_of

__all__ = [
    "render_tools", "render_mcp", "render_mcp_log", "MCP_LOG_SHOWN", "render_plugins", "render_context", "render_cost", "render_permissions", "remembered_scope",
    "without_remembered", "render_change_list", "render_trust", "MCP_CONTAINER", "REMEMBERED",
]

REMEMBERED = "rememberedApprovals"
"""The root config property in which the host lists its remembered "Always allow" choices."""

MCP_CONTAINER = "mcp-servers"
"""The id of the container the host lists a session's MCP servers in."""

MCP_LOG_SHOWN = 5
"""Log lines of each server ``/mcp`` shows (``/mcp log NAME`` shows all the host published)."""

_COMPACTED = "Compacted the conversation"


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _containers(state: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in state.get("customizations") or () if isinstance(c, Mapping)]


def _tools(state: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [t for t in state.get("serverTools") or () if isinstance(t, Mapping)]


def _server_of(tool: Mapping[str, Any]) -> str | None:
    server = (tool.get("_meta") or {}).get("mcpServer")
    return str(server) if server else None


def render_tools(state: Mapping[str, Any], style: Style) -> str:
    tools = _tools(state)
    if not tools:
        return "This session has no tools yet (MCP servers start with the first turn).\n"
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for tool in tools:
        server = _server_of(tool)
        groups[f"MCP server {server}" if server else "built-in"].append(tool)
    lines = []
    for group in sorted(groups, key=lambda g: (g != "built-in", g)):
        lines.append(style.bold(f"{group} ({len(groups[group])})"))
        for tool in groups[group]:
            description = _short(clean(tool.get("description") or tool.get("title") or ""))
            lines.append(f"  {clean(tool.get('name'))}" + (style.dim(f" — {description}") if description else ""))
    client_tools = ((state.get("activeClient") or {}).get("tools")) or ()
    if client_tools:
        lines.append(style.bold(f"from the active client ({len(client_tools)})"))
        lines.extend(f"  {clean(t.get('name'))}" for t in client_tools if isinstance(t, Mapping))
    return "\n".join(lines) + "\n"


def _load(container: Mapping[str, Any]) -> tuple[str, str]:
    load = container.get("load") or {}
    return str(load.get("kind") or "unknown"), clean(load.get("message") or "")


def _mark(kind: str, style: Style) -> str:
    return {
        "loaded": style.green("●"),
        "loading": style.yellow("…"),
        "degraded": style.yellow("▲"),
        "error": style.red("✗"),
    }.get(kind, "·")


def _log_line(entry: Any) -> str:
    if not isinstance(entry, Mapping):
        return clean(entry)
    logger = f"{clean(entry.get('logger'))}: " if entry.get("logger") else ""
    return f"[{clean(entry.get('level') or 'info')}] {logger}{clean(entry.get('text'))}"


def _server_details(meta: Any, style: Style, log_lines: int) -> list[str]:
    """What the host published about a server besides its state (see the module docstring)."""
    if not isinstance(meta, Mapping):
        return []
    lines = []
    prompts = [clean(p) for p in meta.get("prompts") or () if isinstance(p, str)]
    if prompts:
        lines.append(style.dim("prompts: ") + _short(", ".join(f"/{p}" for p in prompts), 200))
    if "resources" in meta:
        lines.append(style.dim("resources: ") + f"{meta.get('resources', 0)}, templates: {meta.get('resourceTemplates', 0)}"
                     + style.dim(" (attach one with @server:uri)"))
    for skipped in meta.get("notOffered") or ():
        if isinstance(skipped, Mapping):
            lines.append(style.yellow(f"{clean(skipped.get('tool'))} not offered: ") + _short(clean(skipped.get("reason") or ""), 200))
    log = [entry for entry in meta.get("log") or ()]
    if log and log_lines:
        kept = meta.get("logKept")
        lines.append(style.dim(f"log (last {min(log_lines, len(log))} of {kept if isinstance(kept, int) else len(log)}):"))
        lines.extend("  " + _short(_log_line(entry), 200) for entry in log[-log_lines:])
    return lines


def render_mcp_log(state: Mapping[str, Any], server: str, style: Style) -> str:
    """``/mcp log NAME``: every log line the host published for one server."""
    for container in _containers(state):
        for child in container.get("children") or ():
            if isinstance(child, Mapping) and child.get("type") == "mcpServer" and child.get("name") == server:
                log = ((child.get("_meta") or {}).get("log")) or []
                if not log:
                    return f"The MCP server {clean(server)} has logged nothing yet.\n"
                return style.bold(f"Log of the MCP server {clean(server)}") + "\n" + "\n".join(_log_line(e) for e in log) + "\n"
    return f"This session has no MCP server called {clean(server)}.\n"


def _plugin_servers(state: Mapping[str, Any], style: Style, published: Counter) -> list[str]:
    """The MCP servers plugins declare, each with the state its entry carries."""
    lines: list[str] = []
    for container in _containers(state):
        if container.get("id") == MCP_CONTAINER:
            continue
        servers = [c for c in container.get("children") or () if isinstance(c, Mapping) and c.get("type") == "mcpServer"]
        if not servers:
            continue
        lines.append(style.bold(f"MCP servers of {clean(container.get('name') or container.get('id'))}"))
        for child in servers:
            name = clean(child.get("name") or child.get("id"))
            server_state = child.get("state")
            if not isinstance(server_state, Mapping):
                server_state = {}
            kind = server_state.get("kind")
            count = published.get(name, 0)
            if kind == "error":
                status = style.red("✗ failed")
            elif kind == "ready":
                status = style.green(f"● running, {count} tool{'s' if count != 1 else ''}")
            elif kind == "starting":
                status = style.yellow("… starting")
            else:
                status = style.dim("○ not started (starts with a turn)")
            lines.append(f"  {style.bold(name)}  {status}")
            if kind == "error":
                lines.append("    " + style.red(_short(clean((server_state.get("error") or {}).get("message") or ""), 300)))
            lines.extend("    " + line for line in _server_details(child.get("_meta"), style, MCP_LOG_SHOWN))
    return lines


def render_mcp(state: Mapping[str, Any], style: Style) -> str:
    container = next((c for c in _containers(state) if c.get("id") == MCP_CONTAINER), None)
    published = Counter(_server_of(t) for t in _tools(state))
    from_plugins = _plugin_servers(state, style, published)
    if container is None and not from_plugins:
        return "This session has no MCP servers (configure [mcp.servers] or add a .mcp.json).\n"
    if container is None:
        return "\n".join(from_plugins) + "\n"
    kind, message = _load(container)
    names = [clean(c.get("name") or c.get("id")) for c in container.get("children") or () if isinstance(c, Mapping)]
    found = _problems(message, names) if kind in ("degraded", "error") else []
    waiting = [p for p in found if p.startswith(WAITING)]
    problems = [p for p in found if not p.startswith(WAITING)]
    lines = [style.bold("MCP servers") + style.dim(f" ({kind})")]
    for child in container.get("children") or ():
        if not isinstance(child, Mapping):
            continue
        name = clean(child.get("name") or child.get("id"))
        own = [p for p in problems if _names(p, [name])]
        count = published.get(name, 0)
        if own and all("needs you to sign in" in p for p in own):
            status = style.yellow("◌ waiting for you to sign in (open the link below)")
        elif own and all("; restarting in " in p for p in own):
            status = style.yellow("↻ restarting")
        elif own:
            status = style.red("✗ failed")
        elif any(f"'{name}'" in p for p in waiting):
            status = style.yellow("◌ waiting for you to trust this folder (/trust add)")
        elif count:
            status = style.green(f"● running, {count} tool{'s' if count != 1 else ''}")
        else:
            status = style.dim("○ not started (starts with a turn)")
        lines.append(f"  {style.bold(name)}  {status}")
        # A sign-in link is shown whole: cut, it could not be opened.
        lines.extend("    " + (style.yellow(clean(p)) if "needs you to sign in" in p else style.red(_short(p, 300))) for p in own)
        lines.extend("    " + line for line in _server_details(child.get("_meta"), style, MCP_LOG_SHOWN))
    unowned = [p for p in problems if not _names(p, names)]
    lines.extend("  " + style.red(_short(p, 300)) for p in unowned)
    lines.extend("  " + style.yellow(_short(p, 300)) for p in waiting)
    return "\n".join(lines + from_plugins) + "\n"


def _names(problem: str, names: Sequence[str]) -> bool:
    """Whether ``problem`` is about one of the servers ``names`` (messages quote the name)."""
    return any(f"'{name}'" in problem for name in names)


def _problems(message: str, names: Sequence[str]) -> list[str]:
    """The separate problems in a container's load message. The host joins them with "; ", and a
    problem's own text may hold "; " too ("...; restarting in 1 s"): a piece that names no server
    and is no trust notice continues the problem before it."""
    found: list[str] = []
    for line in message.splitlines():
        for piece in (part.strip() for part in line.split("; ")):
            if not piece:
                continue
            if found and names and not piece.startswith(WAITING) and not _names(piece, names) and not found[-1].startswith(WAITING):
                found[-1] += "; " + piece
            else:
                found.append(piece)
    return found


def render_trust(root: Mapping[str, Any] | None, folder: str | None, state: Mapping[str, Any] | None, style: Style) -> str:
    """``/trust``: the folders the host trusts (its root config), the workspace trust a client
    (VS Code) forwarded, and where this session's folder stands: waiting (something of it waits
    for trust), trusted (and by what), or nothing waiting (it brings nothing to run, or it is
    trusted for this session or by the host's own config)."""
    config = (root or {}).get("config")
    listed = trusted_folders(config)
    forwarded = forwarded_trust(config)
    lines = []
    if folder:
        source = trust_source(folder, listed=listed, forwarded=forwarded)
        if state is None:
            where = "no session yet"
        elif any(str((c.get("load") or {}).get("message") or "").find(WAITING) >= 0 for c in _containers(state)):
            where = style.yellow("not trusted") + " (its hooks, .mcp.json servers and plugins wait; /trust add trusts it)"
        elif source is not None:
            where = style.green("trusted") + f" by {SOURCE_WORDS[source]} (its hooks, .mcp.json servers and plugins run)"
        else:
            where = "nothing of it waits for trust"
        lines.append(f"This folder: {style.bold(clean(folder))} — {where}")
        if source in (BY_CLIENT, BY_CLIENT_OFF):
            lines.append(style.dim("  (/trust revoke does not change a client's workspace trust: change it in that client, "
                                   "or set [trust] client_trust in the host's config)"))
    if listed:
        lines.append("Folders the host trusts (each with everything below it; /trust revoke FOLDER):")
        lines.extend(f"  {clean(item)}" for item in listed)
    else:
        lines.append("The host trusts no folder yet" + style.dim(" (besides any its own config names)") + ".")
    if forwarded is not None and not forwarded.enabled:
        lines.append("A client (VS Code) forwarded its workspace trust switched off: the host trusts every folder "
                     "unless its [trust] client_trust says otherwise.")
    elif forwarded is not None:
        lines.append("Folders a client (VS Code) trusts, forwarded to the host:" if forwarded.folders
                     else "A client (VS Code) forwarded its workspace trust: it trusts no folder.")
        lines.extend(f"  {clean(item)}" for item in forwarded.folders)
    return "\n".join(lines) + "\n"


def _empty_folder(container: Mapping[str, Any]) -> bool:
    """A workspace folder with nothing in it and nothing to say: the host publishes some
    (``.github/prompts``...) even before they exist, so that clients can add files there."""
    kind, message = _load(container)
    return container.get("type") == "directory" and kind == "loaded" and not message and not container.get("children")


def _switched_off(container: Mapping[str, Any]) -> bool:
    """Whether a plugin is off: its first ``enablement`` decision (the one that applies) says so."""
    decisions = container.get("enablement")
    first = decisions[0] if isinstance(decisions, list) and decisions else None
    return isinstance(first, Mapping) and first.get("enabled") is False


def render_plugins(state: Mapping[str, Any], style: Style) -> str:
    containers = [c for c in _containers(state) if c.get("id") != MCP_CONTAINER and not _empty_folder(c)]
    if not containers:
        return "This session has no plugins or workspace customizations.\n"
    lines = []
    for container in containers:
        kind, message = _load(container)
        name = clean(container.get("name") or container.get("uri") or container.get("id"))
        counts = Counter(str(c.get("type")) for c in container.get("children") or () if isinstance(c, Mapping))
        has = ", ".join(f"{n} {t}{'s' if n != 1 else ''}" for t, n in sorted(counts.items()))
        disabled = style.dim(" (disabled)") if _switched_off(container) else ""
        lines.append(f"{_mark(kind, style)} {style.bold(name)} {style.dim(kind)}{disabled}" + (style.dim(f" — {has}") if has else ""))
        if message:
            colour = style.red if kind == "error" else style.yellow
            lines.extend("    " + colour(line) for line in message.splitlines() if line.strip())
        notes = (container.get("_meta") or {}).get("notes") if isinstance(container.get("_meta"), Mapping) else None
        if isinstance(notes, list):
            lines.extend("    " + style.dim("note: " + _short(clean(str(note)), 300)) for note in notes)
    return "\n".join(lines) + "\n"


def _turns(state: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    turns = [t for t in state.get("turns") or () if isinstance(t, Mapping)]
    active = state.get("activeTurn")
    if isinstance(active, Mapping):
        turns.append(active)
    return turns


def _notes(turn: Mapping[str, Any]) -> list[str]:
    return [
        text_of(p.get("content"))
        for p in turn.get("responseParts") or ()
        if isinstance(p, Mapping) and p.get("kind") == "systemNotification"
    ]


def _window(state: Mapping[str, Any], agents: Sequence[Mapping[str, Any]]) -> tuple[str | None, int | None]:
    summary = state.get("summary") or {}
    model_id = (summary.get("model") or {}).get("id")
    agent = next((a for a in agents if a.get("provider") == summary.get("provider")), {})
    model: Mapping[str, Any] = next((m for m in agent.get("models") or () if m.get("id") == model_id), {})
    window = model.get("maxContextWindow")
    return (clean(model_id) if model_id else None), (int(window) if isinstance(window, (int, float)) and window > 0 else None)


def _bar(fraction: float, width: int = 30) -> str:
    filled = max(0, min(width, round(fraction * width)))
    return "█" * filled + "░" * (width - filled)


def render_context(state: Mapping[str, Any], agents: Sequence[Mapping[str, Any]], style: Style) -> str:
    model_id, window = _window(state, agents)
    used = None
    for turn in reversed(_turns(state)):
        tokens = (turn.get("usage") or {}).get("inputTokens")
        if isinstance(tokens, (int, float)):
            used = int(tokens)
            break
    lines = [style.bold("Context") + style.dim(f" · model {model_id}" if model_id else "")]
    if used is None:
        lines.append("  no usage reported yet: send a message first")
    elif window:
        share = used / window
        colour = style.red if share >= 0.8 else style.yellow if share >= 0.5 else style.green
        lines.append(f"  {colour(_bar(share))} {used:,} of {window:,} tokens ({share:.0%})")
        lines.append(style.dim("  the last turn's input tokens (all its model calls) against the model's context window"))
    else:
        lines.append(f"  {used:,} input tokens in the last turn (this model's context window is not published)")
    compactions = [note for turn in _turns(state) for note in _notes(turn) if note.startswith(_COMPACTED)]
    if compactions:
        lines.append(f"  compactions: {len(compactions)}; the latest:")
        lines.append("    " + style.dim(_short(compactions[-1], 400)))
    else:
        lines.append("  compactions: none (/compact [focus] summarises older turns now)")
    return "\n".join(lines) + "\n"


def render_cost(state: Mapping[str, Any], style: Style) -> str:
    totals: Counter[str] = Counter()
    per_model: dict[str, Counter[str]] = defaultdict(Counter)
    counted = 0
    turns = _turns(state)
    for turn in turns:
        usage = turn.get("usage") or {}
        if not usage:
            continue
        counted += 1
        model = clean(usage.get("model") or "unknown model")
        for key in ("inputTokens", "outputTokens", "cacheReadTokens"):
            value = usage.get(key)
            if isinstance(value, (int, float)):
                totals[key] += int(value)
                per_model[model][key] += int(value)
    if not counted:
        return "No usage reported in this session yet.\n"

    def row(counts: Mapping[str, int]) -> str:
        cached = f" · {counts['cacheReadTokens']:,} cached" if counts.get("cacheReadTokens") else ""
        return f"{counts.get('inputTokens', 0):,} in · {counts.get('outputTokens', 0):,} out{cached}"

    lines = [style.bold("Usage in this session") + style.dim(f" ({counted} of {len(turns)} turns reported usage)")]
    lines.append(f"  total: {row(totals)}")
    if len(per_model) > 1 or next(iter(per_model)) != "unknown model":
        for model, counts in sorted(per_model.items()):
            lines.append(f"  {model}: {row(counts)}")
    lines.append(style.dim("  tokens as the provider reported them; prices are not known to the client"))
    return "\n".join(lines) + "\n"


def render_change_list(files: Sequence[Mapping[str, Any]], display_path: Callable[[str], str], style: Style) -> str:
    """A changeset's files (``ChangesetState.files``), one line each, with totals."""
    lines = []
    added = removed = 0
    for entry in files:
        edit = entry.get("edit") or {}
        diff = edit.get("diff") or {}
        plus, minus = int(diff.get("added", 0) or 0), int(diff.get("removed", 0) or 0)
        added, removed = added + plus, removed + minus
        kind = "created" if not edit.get("before") else "deleted" if not edit.get("after") else "changed"
        line = f"  {clean(display_path(str(entry.get('id', ''))))}  {style.green(f'+{plus}')} {style.red(f'-{minus}')}  {style.dim(kind)}"
        conflict = (entry.get("_meta") or {}).get("conflict")
        if conflict:
            line += "\n    " + style.yellow("! " + clean(conflict))
        lines.append(line)
    count = "1 file" if len(files) == 1 else f"{len(files)} files"
    lines.append(style.dim(f"  {count}, +{added} -{removed}"))
    return "\n".join(lines) + "\n"
# -- /permissions ---------------------------------------------------------------------------------


def remembered_scope(entry: Mapping[str, Any]) -> str:
    """Where a remembered choice applies, in words."""
    project = entry.get("project")
    if entry.get("scope") == "project" and isinstance(project, str):
        return f"this project only: {clean(shown_directory(project))}"
    return "every project (host-wide)"


def render_permissions(config: Mapping[str, Any] | None, style: Style) -> str:
    """The host's remembered approvals, numbered, from the root ``config`` (``RootConfigState``)."""
    properties = ((config or {}).get("schema") or {}).get("properties") or {}
    listed = ((config or {}).get("values") or {}).get(REMEMBERED)
    if REMEMBERED not in properties or not isinstance(listed, list):
        return "This host does not list remembered approvals.\n"
    if not listed:
        return ("No remembered approvals. Choosing \"Always allow\" when a tool call asks adds one for the project "
                "you are working in.\n")
    lines = [style.bold(f"Remembered approvals ({len(listed)})") + "\n"]
    width = min(40, max((len(clean(str(e.get("rule", "?")))) for e in listed if isinstance(e, Mapping)), default=10))
    for number, entry in enumerate(listed, 1):
        if not isinstance(entry, Mapping):
            continue
        added = entry.get("addedAt")
        when = datetime.fromtimestamp(added / 1000).strftime("%Y-%m-%d %H:%M") if isinstance(added, (int, float)) else ""
        rule = clean(str(entry.get("rule", "?")))
        lines.append(f"  {number:>2}) {rule:<{width}}  {remembered_scope(entry)}" + (style.dim(f"  added {when}") if when else "") + "\n")
    lines.append(style.dim("/permissions revoke N forgets one: the next such call asks again.") + "\n")
    return "".join(lines)


def without_remembered(config: Mapping[str, Any] | None, number: int) -> tuple[list[Any], Mapping[str, Any]] | None:
    """The list to send back to revoke choice ``number`` (1-based) and that choice; None if there is none."""
    listed = ((config or {}).get("values") or {}).get(REMEMBERED)
    if not isinstance(listed, list) or not 1 <= number <= len(listed):
        return None
    return listed[: number - 1] + listed[number:], listed[number - 1]
