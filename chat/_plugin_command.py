"""``/plugin``: the user's Claude Code marketplaces and plugins, as Claude Code's ``/plugin`` offers them.

``/plugin`` shows the marketplaces and plugins the host lists in its root config
(``ahp.claude_plugins``) and, for this session, the plugins that wait for its folder to be trusted.
``/plugin marketplace add SOURCE`` (``owner/repo``, a git URL, a folder on the host's machine),
``/plugin marketplace list``, ``/plugin marketplace update NAME``, ``/plugin marketplace remove NAME``,
``/plugin install NAME[@MARKETPLACE]``, ``/plugin enable ID`` and ``/plugin disable ID`` change it
with ``root/configChanged`` and wait for the host's outcome (a marketplace's name and plugins, or
why it could not be added; a plugin installed, or why not). A change counts from the next turn of
every session. Nothing here reaches the host's files: any client can do the same.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ahp import claude_plugins as wire
from ahp.workspace_trust import WAITING
from chat.render import Style, clean

__all__ = ["plugin_command", "render_plugin_view"]

USAGE = ("usage: /plugin, /plugin marketplace add SOURCE|list|update NAME|remove NAME, "
         "/plugin install NAME[@MARKETPLACE], /plugin enable ID, /plugin disable ID")
_WHERE = {"here": "installed", "claude-code": "Claude Code's install", "in place": "in its marketplace folder", None: "not installed"}
_ORIGIN = {"here": "added here", "claude-code": "Claude Code's", "settings": "declared in settings"}


def _marketplace_lines(config: Any, style: Style) -> list[str]:
    lines = []
    for item in wire.marketplaces(config):
        name = clean(item.get("name") or "?")
        if item.get("error"):
            lines.append(f"  {style.red('✗')} {clean(item.get('source'))}: {clean(item['error'])}")
            continue
        plugins = item.get("plugins") or []
        lines.append(f"  {name}  {style.dim(clean(item.get('source')))}  "
                     f"({_ORIGIN.get(str(item.get('origin')), clean(item.get('origin')))}; {len(plugins)} plugins)")
    return lines


def render_plugin_view(config: Any, session: Mapping[str, Any] | None, style: Style) -> str:
    """``/plugin``: marketplaces, plugins (on or off, where installed, problems) and what of this
    session waits for trust."""
    lines = ["Marketplaces" + style.dim(" (/plugin marketplace add owner/repo):")]
    lines += _marketplace_lines(config, style) or ["  none yet"]
    lines.append("Plugins" + style.dim(" (/plugin install NAME@MARKETPLACE, /plugin enable|disable ID):"))
    rows = wire.plugin_rows(config)
    for row in rows:
        mark = style.green("●") if row.get("enabled") else style.dim("○")
        version = f" {clean(row['version'])}" if row.get("version") else ""
        line = f"  {mark} {clean(row.get('id'))}{version}  {style.dim(_WHERE.get(row.get('installed'), ''))}"
        if row.get("problem"):
            line += "  " + style.red(clean(row["problem"]))
        lines.append(line)
    if not rows:
        lines.append("  none yet")
    waiting = [c for c in (session or {}).get("customizations") or ()
               if str(c.get("id", "")).startswith("claude-plugin:") and str((c.get("load") or {}).get("message", "")).startswith(WAITING)]
    if waiting:
        lines.append("Waiting for you to trust this folder (/trust add):")
        lines += [f"  ◌ {clean(str(c['id']).removeprefix('claude-plugin:'))}" for c in waiting]
    return "\n".join(lines) + "\n"


def _plugin_id(config: Any, name: str) -> str | None:
    if "@" in name:
        return name
    found = [f"{name}@{item['name']}" for item in wire.marketplaces(config) if name in (item.get("plugins") or ())]
    return found[0] if len(found) == 1 else None


async def plugin_command(args: str, *, config: Callable[[], Any], session: Mapping[str, Any] | None,
                         change: Callable[[dict[str, Any]], Awaitable[str | None]],
                         wait: Callable[[Callable[[], bool]], Awaitable[bool]],
                         write: Callable[[str], None], note: Callable[[str], None], problem: Callable[[str], None],
                         style: Style) -> None:
    """Run ``/plugin ARGS``. ``change(values)`` dispatches a root config change and returns the
    host's refusal (None: accepted); ``wait(predicate)`` waits for the root config to satisfy it
    (False: it did not in time)."""
    words = args.split()
    if not words:
        write(render_plugin_view(config(), session, style))
        return
    verb, rest = words[0], words[1:]
    if verb == "marketplace" and rest:
        await _marketplace(rest, config=config, change=change, wait=wait, write=write, note=note, problem=problem, style=style)
        return
    if verb in ("install", "enable", "disable") and len(rest) == 1:
        plugin_id = _plugin_id(config(), rest[0])
        if plugin_id is None:
            problem(f"no single marketplace lists {rest[0]!r}: name it as NAME@MARKETPLACE (/plugin lists them)")
            return
        refused = await change({wire.ENABLED_KEY: wire.with_enabled(wire.enabled_plugins(config()), plugin_id, verb != "disable")})
        if refused:
            problem(f"the host refused it: {refused}")
            return
        if verb == "disable":
            note(f"(disabled {plugin_id}: from the next turn of every session)")
            return

        def settled() -> bool:
            row = next((r for r in wire.plugin_rows(config()) if r.get("id") == plugin_id), None)
            return row is not None and row.get("enabled") is True and (row.get("installed") is not None or bool(row.get("problem")))

        if not await wait(settled):
            note(f"({plugin_id}: the host is still working on it; /plugin shows how it ends)")
            return
        row = next(r for r in wire.plugin_rows(config()) if r.get("id") == plugin_id)
        if row.get("problem"):
            problem(f"{plugin_id}: {clean(row['problem'])}")
        else:
            note(f"({'installed and ' if verb == 'install' else ''}enabled {plugin_id}"
                 f"{' ' + clean(row['version']) if row.get('version') else ''}: from the next turn of every session)")
        return
    note(USAGE)


async def _marketplace(words: list[str], *, config: Callable[[], Any], change: Callable[[dict[str, Any]], Awaitable[str | None]],
                       wait: Callable[[Callable[[], bool]], Awaitable[bool]], write: Callable[[str], None],
                       note: Callable[[str], None], problem: Callable[[str], None], style: Style) -> None:
    verb, rest = words[0], words[1:]
    current = wire.marketplaces(config())
    if verb == "list" and not rest:
        write("\n".join(_marketplace_lines(config(), style) or ["  no marketplaces yet"]) + "\n")
        return
    if verb == "add" and len(rest) == 1:
        source = rest[0]
        refused = await change({wire.MARKETPLACES_KEY: wire.with_marketplace([i for i in current if not i.get("error")], source)})
        if refused:
            problem(f"the host refused it: {refused}")
            return
        outcome: dict[str, Any] = {}

        def settled() -> bool:
            for item in wire.marketplaces(config()):
                if item.get("source") == source and (item.get("name") or item.get("error")):
                    outcome.update(item)
                    return True
            return False

        if not await wait(settled):
            note(f"(still fetching {source}; /plugin marketplace list shows how it ends)")
        elif outcome.get("error"):
            problem(clean(outcome["error"]))
        else:
            names = ", ".join(clean(n) for n in outcome.get("plugins") or []) or "none"
            note(f"(added the marketplace {clean(outcome['name'])}: {names}; /plugin install NAME@{clean(outcome['name'])})")
        return
    if verb in ("remove", "update") and len(rest) == 1:
        name = rest[0]
        if not any(item.get("name") == name for item in current):
            problem(f"there is no marketplace {name!r}; /plugin marketplace list shows them")
            return
        changed = wire.without_marketplace(current, name) if verb == "remove" else wire.with_marketplace_updated(current, name)
        refused = await change({wire.MARKETPLACES_KEY: changed})
        if refused:
            problem(f"the host refused it: {refused}")
            return
        if verb == "remove":
            await wait(lambda: not any(item.get("name") == name for item in wire.marketplaces(config())) or
                       any(item.get("name") == name and item.get("origin") != "here" for item in wire.marketplaces(config())))
            if any(item.get("name") == name for item in wire.marketplaces(config())):
                note(f"({name} is not one added here: Claude Code's own and settings' marketplaces stay)")
            else:
                note(f"(removed the marketplace {name} and the plugins installed from it)")
        else:
            await wait(lambda: any(item.get("name") == name for item in wire.marketplaces(config())))
            note(f"(updated {name})")
        return
    note(USAGE)
