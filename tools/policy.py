"""The confirmation policy: whether a tool call runs, needs the user, or is refused.

Pure: no I/O, no clock, no randomness. The host owns persistence and passes everything
in through `PolicyState`; functions return new values and never mutate their inputs.

Rules are strings `tool` or `tool(pattern)`, each with an effect `allow`, `ask` or
`deny`. The tool part may use `*` wildcards (`mcp__github__*`). The pattern depends on
what the tool's `subject_kind` says its subject is:
* `"command"` (shell): `git status:*` matches `git status` followed by anything;
  without `:*` the command must be exactly those words. Words are compared after shell
  quote removal, so spacing and quoting styles do not matter.
* `"path"` (file tools): a glob over the path relative to the working directory
  (`src/**`, `*.md`); absolute patterns match absolute paths. A path that leaves the
  working directory lexically (`../x`) matches no relative pattern.
A rule with a pattern never matches a tool without a subject.

`decide(tool, args, state)` applies, in order:
1. a matching `deny` rule → deny (nothing overrides it, not even auto-approve);
2. permission mode `plan` and a tool not annotated `readOnlyHint: true` → deny (nothing but
   reading runs until the user approved the plan; allow rules and auto-approve do not apply);
3. a matching `ask` rule → ask (an explicit ask beats allow rules and auto-approve);
4. a matching allow rule (configured, "always allow" remembered for this project or
   host-wide, remembered for this session, or pre-approved for this turn by the command that
   started it: `turn_allow`, from its `allowed-tools`) → allow, `confirmed: "setting"`, and the
   decision's `source` says which of these it was;
5. permission mode `full-auto`, or the session's auto-approve switch → allow, `confirmed: "setting"`;
6. permission mode `accept-edits` and a file tool (`subject_kind` `"path"`) whose path lies
   inside the working directory or one of `edit_roots` (lexically: `..` that leaves them does
   not count) → allow, `confirmed: "setting"`; commands and other tools go on;
7. a tool annotated `readOnlyHint: true` → allow, `confirmed: "not-needed"`;
8. otherwise → ask.

Shell commands are read conservatively (`tools.shell`): an allow rule applies only
to a *plain* command line (no substitution, redirection, subshell...) and only if every
command chained with `&&`, `||`, `;`, `|`, `&` or a newline is allowed by some rule. Deny
and ask rules match if any chained command matches and, for lines that are not plain,
also if the rule's words occur anywhere in the line. Only a pattern-less `shell` allow
rule allows every command line.

`confirmation_options(tool, args, locale, project=...)` lists the AHP `ConfirmationOption`s
to offer; the "always" option names where it applies: `project` (a display path) when the
host keeps the choice for that project, otherwise it says plainly that it applies
everywhere. `apply_option(state, tool, args, option_id)` says what choosing one means:
approved or not, the new session state, and which rule strings the host must persist
(for the scope it named in the option).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol

from ._globs import glob_matches
from .errors import PolicyRuleError
from .shell.commands import RUNS_OTHER_COMMANDS
from .shell.lines import CommandLine, analyse, loose_words

__all__ = [
    "Effect",
    "PermissionMode",
    "RuleSource",
    "Rule",
    "parse_rule",
    "PolicyState",
    "Decision",
    "decide",
    "session_prefixes",
    "confirmation_options",
    "OptionEffect",
    "apply_option",
    "OPTION_ALLOW_ONCE",
    "OPTION_ALLOW_SESSION",
    "OPTION_ALLOW_ALWAYS",
    "OPTION_DENY",
    "OPTION_DENY_WITH_REASON",
]

Effect = Literal["allow", "ask", "deny"]
PermissionMode = Literal["default", "accept-edits", "plan", "full-auto"]
"""A session's permission mode (see `decide`)."""
RuleSource = Literal["configured", "project", "host", "session", "turn"]
"""Where the rule that allowed a call was kept."""

OPTION_ALLOW_ONCE = "allow-once"
OPTION_ALLOW_SESSION = "allow-session"
OPTION_ALLOW_ALWAYS = "allow-always"
OPTION_DENY = "deny"
OPTION_DENY_WITH_REASON = "deny-with-reason"


class PolicyTool(Protocol):
    """What the policy needs from a tool (every `tools.base.Tool` provides it)."""

    name: str
    title: str
    annotations: dict
    subject_kind: Literal["command", "path"] | None

    def policy_subject(self, args: dict) -> str | None: ...


_RULE = re.compile(r"^\s*([^\s()]+)\s*(?:\((.*)\))?\s*$", re.DOTALL)


@dataclass(frozen=True)
class Rule:
    """One parsed rule; `str(rule)` gives back its canonical text."""

    tool: str
    """Tool name, `*` wildcards allowed."""
    pattern: str | None = None
    """Argument pattern, or None for every call of the tool."""
    effect: Effect = "allow"
    """What a match means."""

    def __str__(self) -> str:
        return self.tool if self.pattern is None else f"{self.tool}({self.pattern})"


def parse_rule(text: str, effect: Effect = "allow") -> Rule:
    """Parse `tool` or `tool(pattern)`; raises `PolicyRuleError` naming the bad rule."""
    if effect not in ("allow", "ask", "deny"):
        raise PolicyRuleError(f"Rule effect must be allow, ask or deny, not {effect!r}.")
    match = _RULE.match(text) if isinstance(text, str) else None
    if not match:
        raise PolicyRuleError(f"Cannot parse rule {text!r}: expected 'tool' or 'tool(pattern)'.")
    tool, pattern = match.group(1), match.group(2)
    if pattern is not None:
        pattern = pattern.strip()
        if pattern in ("", "*", "**", ":*"):
            pattern = None  # "everything" is spelled without a pattern
    return Rule(tool, pattern, effect)


def _parse_all(texts: Iterable[str | Rule], effect: Effect) -> tuple[Rule, ...]:
    return tuple(t if isinstance(t, Rule) else parse_rule(t, effect) for t in texts)


@dataclass(frozen=True)
class PolicyState:
    """Everything the policy decides from; the host keeps one per session."""

    rules: tuple[Rule, ...] = ()
    """Configured allow/ask/deny rules (user or project settings)."""
    always_allow: tuple[Rule, ...] = ()
    """Persisted "always allow" rules of this session's project; the host stores them."""
    session_allow: tuple[Rule, ...] = ()
    """Approvals remembered for this session only."""
    auto_approve: bool = False
    """The per-session switch that approves everything no rule asks about or denies."""
    working_directory: str | None = None
    """Used to relate absolute paths to relative path patterns."""
    host_allow: tuple[Rule, ...] = ()
    """Persisted "always allow" rules that apply in every project (host-wide)."""
    permission_mode: PermissionMode = "default"
    """The session's permission mode (see `decide`)."""
    edit_roots: tuple[str, ...] = ()
    """Absolute folders besides the working directory whose files `accept-edits` edits without asking."""
    turn_allow: tuple[Rule, ...] = ()
    """Allow rules for one turn only: what the slash command that started it pre-approves."""
    turn_granted_by: str = "the command"
    """Who granted `turn_allow` (`/commit`), named in the decision's reason."""

    @classmethod
    def from_settings(
        cls,
        *,
        allow: Iterable[str] = (),
        ask: Iterable[str] = (),
        deny: Iterable[str] = (),
        always_allow: Iterable[str] = (),
        auto_approve: bool = False,
        working_directory: str | None = None,
    ) -> PolicyState:
        """Build a state from rule strings (raises `PolicyRuleError` on a malformed one)."""
        rules = _parse_all(deny, "deny") + _parse_all(ask, "ask") + _parse_all(allow, "allow")
        return cls(rules, _parse_all(always_allow, "allow"), (), auto_approve, working_directory)

    def with_auto_approve(self, enabled: bool) -> PolicyState:
        """The same state with the auto-approve switch set."""
        return replace(self, auto_approve=enabled)


@dataclass(frozen=True)
class Decision:
    """The outcome of `decide`."""

    outcome: Literal["allow", "ask", "deny"]
    """Run it, ask the user, or refuse."""
    confirmed: Literal["not-needed", "setting"] | None = None
    """For `allow`: the AHP `confirmed` value to put on `toolCallReady`."""
    reason: str | None = None
    """Why: the matching rule or the default that applied (shown on deny)."""
    rule: Rule | None = None
    """The rule that decided, if one did."""
    source: RuleSource | None = None
    """For an allow rule: a configured rule, one remembered for this project or host-wide,
    one remembered for this session, or one the turn's command pre-approved."""


# --- matching ---------------------------------------------------------------------

def _pattern_words(pattern: str) -> tuple[tuple[str, ...], bool]:
    prefix = pattern.endswith(":*")
    body = pattern[:-2] if prefix else pattern
    parsed = analyse(body)
    words = parsed.segments[0] if parsed.plain and len(parsed.segments) == 1 else tuple(body.split())
    return words, prefix


def _command_matches(words: tuple[str, ...], pattern: str) -> bool:
    wanted, prefix = _pattern_words(pattern)
    if not wanted:
        return False
    return words[: len(wanted)] == wanted if prefix else words == wanted


def _loose_contains(command: str, pattern: str) -> bool:
    wanted, _ = _pattern_words(pattern)
    tokens = loose_words(command)
    size = len(wanted)
    return size > 0 and any(tuple(tokens[i : i + size]) == wanted for i in range(len(tokens) - size + 1))


def _relative_subject(path: str, working_directory: str | None) -> str | None:
    normal = posixpath.normpath(path)
    if posixpath.isabs(normal):
        if working_directory:
            root = posixpath.normpath(working_directory)
            if normal == root:
                return "."
            if normal.startswith(root.rstrip("/") + "/"):
                return normal[len(root.rstrip("/")) + 1 :]
        return None
    return None if normal == ".." or normal.startswith("../") else normal


def _in_folders(path: str, state: PolicyState) -> bool:
    """Whether a file tool's path lies in the working directory or an edit root (lexically)."""
    if not posixpath.isabs(path):
        return state.working_directory is not None and _relative_subject(path, None) is not None
    return any(_relative_subject(path, root) is not None for root in (state.working_directory, *state.edit_roots) if root)


def _path_matches(path: str, pattern: str, working_directory: str | None) -> bool:
    if pattern.startswith("/"):
        return glob_matches(pattern, posixpath.normpath(path if posixpath.isabs(path) else posixpath.join(working_directory or "/", path)))
    relative = _relative_subject(path, working_directory)
    return relative is not None and glob_matches(pattern, relative)


def _tool_matches(rule: Rule, tool: PolicyTool) -> bool:
    return fnmatch.fnmatchcase(tool.name, rule.tool)


def _kind(tool: PolicyTool) -> str | None:
    return getattr(tool, "subject_kind", None)


def _subject(tool: PolicyTool, args: dict) -> str | None:
    getter = getattr(tool, "policy_subject", None)
    subject = getter(args) if getter is not None else None
    return subject if isinstance(subject, str) else None


def _matches_any_part(rule: Rule, tool: PolicyTool, args: dict, line: CommandLine | None, state: PolicyState) -> bool:
    """Deny/ask matching: over-inclusive."""
    if not _tool_matches(rule, tool):
        return False
    if rule.pattern is None:
        return True
    subject = _subject(tool, args)
    if subject is None:
        return False
    if _kind(tool) == "command" and line is not None:
        if any(_command_matches(words, rule.pattern) for words in line.segments):
            return True
        return not line.plain and _loose_contains(subject, rule.pattern)
    if _kind(tool) == "path":
        return _path_matches(subject, rule.pattern, state.working_directory)
    return fnmatch.fnmatchcase(subject, rule.pattern)


def _allowing_rule(rules: Iterable[Rule], tool: PolicyTool, args: dict, line: CommandLine | None, state: PolicyState) -> Rule | None:
    """Allow matching: under-inclusive. Returns one responsible rule."""
    candidates = [r for r in rules if r.effect == "allow" and _tool_matches(r, tool)]
    for rule in candidates:
        if rule.pattern is None:
            return rule
    subject = _subject(tool, args)
    if subject is None:
        return None
    if _kind(tool) == "command" and line is not None:
        if not line.plain or not line.segments:
            return None
        first: Rule | None = None
        for words in line.segments:
            match = next((r for r in candidates if r.pattern is not None and _command_matches(words, r.pattern)), None)
            if match is None:
                return None
            first = first or match
        return first
    for rule in candidates:
        if rule.pattern is None:
            continue
        if _kind(tool) == "path":
            if _path_matches(subject, rule.pattern, state.working_directory):
                return rule
        elif fnmatch.fnmatchcase(subject, rule.pattern):
            return rule
    return None


_ALLOW_SOURCES: tuple[tuple[RuleSource, str, str], ...] = (
    ("configured", "configured rule", "rules"),
    ("project", "rule remembered for this project", "always_allow"),
    ("host", "host-wide remembered rule", "host_allow"),
    ("session", "session approval", "session_allow"),
    ("turn", "allowed-tools of {by}:", "turn_allow"),
)


def decide(tool: PolicyTool, args: dict, state: PolicyState) -> Decision:
    """Whether `tool` may run with `args` (see the module docstring for the order)."""
    args = args if isinstance(args, dict) else {}
    subject = _subject(tool, args)
    line = analyse(subject) if _kind(tool) == "command" and subject is not None else None

    for rule in state.rules:
        if rule.effect == "deny" and _matches_any_part(rule, tool, args, line, state):
            return Decision("deny", reason=f"Denied by the rule {rule}.", rule=rule)
    read_only = bool((getattr(tool, "annotations", None) or {}).get("readOnlyHint", False))
    if state.permission_mode == "plan" and not read_only:
        return Decision("deny", reason="The session is in plan mode: only read-only tools run until the user approves a plan "
                                       "(propose one with propose_plan).")
    for rule in state.rules:
        if rule.effect == "ask" and _matches_any_part(rule, tool, args, line, state):
            return Decision("ask", reason=f"The rule {rule} asks for confirmation.", rule=rule)
    for source, said, rules in _ALLOW_SOURCES:
        allowing = _allowing_rule(getattr(state, rules), tool, args, line, state)
        if allowing is not None:
            said = said.format(by=state.turn_granted_by)
            return Decision("allow", "setting", f"Allowed by the {said} {allowing}.", allowing, source)
    if state.permission_mode == "full-auto":
        return Decision("allow", "setting", "The session is in full-auto mode.")
    if state.auto_approve:
        return Decision("allow", "setting", "Auto-approve is on for this session.")
    if state.permission_mode == "accept-edits" and _kind(tool) == "path" and subject is not None and _in_folders(subject, state):
        return Decision("allow", "setting", "The session accepts edits in its folders.")
    if read_only:
        return Decision("allow", "not-needed", "The tool only reads.")
    if line is not None and not line.plain:
        return Decision("ask", reason=f"The command needs confirmation because {line.reason}.")
    return Decision("ask", reason="This tool needs confirmation.")


# --- remembering approvals ----------------------------------------------------------

# Commands whose first argument is a subcommand worth keeping in a remembered prefix.
_SUBCOMMAND_TOOLS = frozenset({
    "git", "npm", "npx", "yarn", "pnpm", "bun", "cargo", "go", "docker", "podman", "kubectl",
    "helm", "pip", "pip3", "uv", "poetry", "make", "dotnet", "gh", "brew", "apt", "apt-get",
    "systemctl", "terraform", "mvn", "gradle", "deno", "conda", "rustup", "just",
})
# Commands that run other commands: remembering their first word would allow anything.
def _segment_rule_pattern(words: tuple[str, ...]) -> str:
    first = words[0]
    if "=" in first.split("/")[0] or first in RUNS_OTHER_COMMANDS or "/" in first:
        return shlex.join(words)  # exactly this command, nothing more
    if first in _SUBCOMMAND_TOOLS and len(words) > 1:
        if words[1].startswith("-"):
            return shlex.join(words)  # `git -C elsewhere …`: a prefix would be too broad
        return shlex.join(words[:2]) + ":*"
    return shlex.join(words[:1]) + ":*"


def session_prefixes(command: str) -> list[str] | None:
    """Shell rule patterns an approval of `command` would remember, or None if not plain."""
    line = analyse(command)
    if not line.plain or not line.segments:
        return None
    patterns: list[str] = []
    for words in line.segments:
        pattern = _segment_rule_pattern(words)
        if pattern not in patterns:
            patterns.append(pattern)
    return patterns


def _remembered_rules(tool: PolicyTool, args: dict) -> list[Rule] | None:
    """The allow rules "in this session"/"always" would add; None when nothing safe exists."""
    if _kind(tool) == "command":
        subject = _subject(tool, args)
        prefixes = session_prefixes(subject) if subject is not None else None
        return [Rule(tool.name, p, "allow") for p in prefixes] if prefixes else None
    return [Rule(tool.name, None, "allow")]


# --- options ----------------------------------------------------------------------

_LABELS: dict[str, dict[str, str]] = {
    "en": {
        OPTION_ALLOW_ONCE: "Allow once",
        OPTION_ALLOW_SESSION: "Allow {what} in this session",
        OPTION_ALLOW_ALWAYS: "Always allow {what} in {project}",
        "everywhere": "Always allow {what} everywhere (host-wide)",
        OPTION_DENY: "Deny",
        OPTION_DENY_WITH_REASON: "Deny with a reason…",
        "commands": "`{prefixes}` commands",
        "exact": "`{command}`",
    },
}


def _labels(locale: str | None) -> dict[str, str]:
    if locale:
        for candidate in (locale, locale.split("-")[0].split("_")[0]):
            if candidate in _LABELS:
                return _LABELS[candidate]
    return _LABELS["en"]


def _what(tool: PolicyTool, rules: list[Rule], labels: dict[str, str]) -> str:
    if _kind(tool) != "command":
        return getattr(tool, "title", None) or tool.name
    shown = []
    for rule in rules:
        pattern = rule.pattern or ""
        shown.append(pattern[:-2] if pattern.endswith(":*") else pattern)
    if all((r.pattern or "").endswith(":*") for r in rules):
        return labels["commands"].format(prefixes="`, `".join(shown))
    return labels["exact"].format(command="`, `".join(shown))


def confirmation_options(tool: PolicyTool, args: dict, locale: str | None = None, *, project: str | None = None) -> list[dict]:
    """The AHP `ConfirmationOption`s for a call that needs the user, in display order.

    "Allow once" has no `group`: it is the primary choice, as in VS Code's own agent host (whose
    options are "Allow Once" without a group, "Allow in this Session" in group 1 and "Skip" in
    group 2); the remembered approvals are group 1 and the denials group 2.

    `project` is how the host shows the project an "always" choice is kept for; None means
    the host keeps it host-wide, and the label says so.

    "Deny with a reason…" is offered to every client: the options are part of the chat's state,
    the same for all that watch it, and AHP has no capability saying which clients can collect a
    reason (the terminal and AG-UI can; VS Code 1.139.1 shows the option but sends no
    `reasonMessage`). Chosen without a reason it is a plain deny, and the model is told what
    "Deny" tells it."""
    labels = _labels(locale)
    options: list[dict] = [{"id": OPTION_ALLOW_ONCE, "label": labels[OPTION_ALLOW_ONCE], "kind": "approve"}]
    remembered = _remembered_rules(tool, args if isinstance(args, dict) else {})
    if remembered:
        what = _what(tool, remembered, labels)
        options.append({"id": OPTION_ALLOW_SESSION, "label": labels[OPTION_ALLOW_SESSION].format(what=what), "kind": "approve", "group": 1})
        always = labels[OPTION_ALLOW_ALWAYS] if project else labels["everywhere"]
        options.append({"id": OPTION_ALLOW_ALWAYS, "label": always.format(what=what, project=project), "kind": "approve", "group": 1})
    options.append({"id": OPTION_DENY, "label": labels[OPTION_DENY], "kind": "deny", "group": 2})
    options.append({"id": OPTION_DENY_WITH_REASON, "label": labels[OPTION_DENY_WITH_REASON], "kind": "deny", "group": 2})
    return options


@dataclass(frozen=True)
class OptionEffect:
    """What choosing a confirmation option means."""

    approved: bool
    """Run the call (`toolCallConfirmed.approved`)."""
    state: PolicyState
    """The session state afterwards (with any session approval added)."""
    persist: tuple[str, ...] = field(default_factory=tuple)
    """Rule strings the host must add to its stored "always allow" list."""
    wants_reason: bool = False
    """The user chose to explain a denial: use the action's `reasonMessage`/`userSuggestion`."""


def apply_option(state: PolicyState, tool: PolicyTool, args: dict, option_id: str) -> OptionEffect:
    """Apply the option the user picked; raises `PolicyRuleError` for an unknown id."""
    args = args if isinstance(args, dict) else {}
    if option_id == OPTION_ALLOW_ONCE:
        return OptionEffect(True, state)
    if option_id == OPTION_DENY:
        return OptionEffect(False, state)
    if option_id == OPTION_DENY_WITH_REASON:
        return OptionEffect(False, state, wants_reason=True)
    if option_id in (OPTION_ALLOW_SESSION, OPTION_ALLOW_ALWAYS):
        rules = _remembered_rules(tool, args)
        if not rules:
            # Offered options never include these for such calls; treat a stale id as "once".
            return OptionEffect(True, state)
        if option_id == OPTION_ALLOW_SESSION:
            added = tuple(r for r in rules if r not in state.session_allow)
            return OptionEffect(True, replace(state, session_allow=state.session_allow + added))
        added = tuple(r for r in rules if r not in state.always_allow)
        return OptionEffect(True, replace(state, always_allow=state.always_allow + added), tuple(str(r) for r in added))
    raise PolicyRuleError(f"Unknown confirmation option {option_id!r}.")


