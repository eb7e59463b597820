"""Session cassettes: one recorded agent session, turn by turn, in a file people can review.

A session cassette (``version: 2``) holds every model call of one session in order, grouped by
turn, plus the title request. It is YAML written for review:

* request bodies are structured data (one message per list entry), never a folded JSON string;
* a system prompt and a tool list are stored once under ``shared`` and referenced from each
  request as ``{$shared: <name>}`` (names are given in order of first use, so re-recording the same
  session names them the same);
* machine-specific values are placeholders (``${cwd}``, ``${home}``), the ``<environment>`` block
  is ``${environment}``, and text matching the cassette's ``redact`` patterns reads ``<redacted>``;
  headers carry only what the SDKs need to parse the answer (no keys, dates or request ids);
* a response body is kept as the provider's text (a server-sent event stream reads line by line),
  or as structured data when it is JSON; a call the client cancelled says ``cancelled: true``.

``Normaliser`` turns a request body into that form; the same normaliser, built for the replaying
session's folder, turns what a replay sends into the form it is compared in (``request_diff``),
so a cassette recorded in one folder replays in another. Nothing here does I/O except
``read_cassette`` and ``write_cassette``.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "VERSION", "REDACTED", "DEFAULT_REDACT", "Normaliser", "SessionCassette", "Call", "CassetteFormatError",
    "read_cassette", "write_cassette", "request_diff", "is_session_cassette", "kept_headers",
]

VERSION = 2
"""The format this module reads and writes (``version: 1`` is a vcrpy cassette, ``providers.cassette``)."""
FORMAT = "agent-host session cassette"
REDACTED = "<redacted>"
DEFAULT_REDACT = (
    r"sk-[A-Za-z0-9_\-]{16,}",
    r"(?<![A-Za-z0-9_])(?:[A-Z0-9_]*(?:API_?KEY|SECRET|TOKEN|PASSWORD)|api_?key)\s*[=:]\s*(?P<secret>[^\s\"'\\<]+)",
)
"""Patterns always filtered from what is recorded: provider-style keys and ``NAME_KEY=value`` lines
(a ``.env`` file the agent read); a config adds its own (``[recording] redact``). A pattern with a
group named ``secret`` has only that group replaced, so the name stays readable."""

_ENVIRONMENT = re.compile(r"<environment>.*?</environment>", re.DOTALL)
_KEPT_HEADERS = frozenset({"content-type", "retry-after", "retry-after-ms", "x-should-retry", "content-encoding"})
_VOLATILE_KEYS = frozenset({"user", "metadata", "prompt_cache_key", "safety_identifier"})
"""Top-level request keys that identify a run, not what the model is asked."""
_SHARED_KEYS = ("system", "instructions", "tools")
_HEADER = (
    "# An agent-host session cassette: every model call of one session, turn by turn (see the README,\n"
    "# \"Recorded sessions as tests\"). ${cwd} is the session's folder, ${home} the user's home;\n"
    "# <redacted> and <filtered> mark secrets that were not stored.\n"
)


class CassetteFormatError(ValueError):
    """A file is not a session cassette this host can read; the message says why."""


def kept_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The response headers a cassette keeps: what the SDKs read to parse and retry, nothing volatile."""
    return {name.lower(): value for name, value in headers if name.lower() in _KEPT_HEADERS}


@dataclass(frozen=True)
class Normaliser:
    """Replaces the machine's values with placeholders and secrets with ``<redacted>``, in any JSON value."""

    places: tuple[tuple[str, str], ...] = ()
    """(real value, placeholder) pairs, longest value first (the folder before the home it is in)."""
    redact: tuple[str, ...] = DEFAULT_REDACT

    @classmethod
    def for_folder(cls, cwd: str | None, home: str | None, redact: Sequence[str] = DEFAULT_REDACT) -> Normaliser:
        pairs = [(value, name) for value, name in ((cwd, "${cwd}"), (home, "${home}")) if value and len(value) > 1]
        pairs.sort(key=lambda pair: -len(pair[0]))
        return cls(tuple(pairs), tuple(redact))

    def text(self, value: str) -> str:
        value = _ENVIRONMENT.sub("<environment>${environment}</environment>", value)
        for real, name in self.places:
            value = value.replace(real, name)
        for pattern in self.redact:
            value = _redact(re.compile(pattern), value)
        return value

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(item) for item in value]
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        return value

    def body(self, raw: bytes | str | None) -> Any:
        """A request body as structured, normalised data (JSON), else its normalised text."""
        if not raw:
            return None
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        try:
            data = json.loads(text)
        except ValueError:
            return self.text(text)
        if isinstance(data, dict):
            data = {key: item for key, item in data.items() if key not in _VOLATILE_KEYS}
        return self.value(data)

    def restore(self, text: str) -> str:
        """A recorded response with the placeholders put back as this machine's values."""
        for real, name in self.places:
            text = text.replace(name, real)
        return text


@dataclass
class Call:
    """One model call: what was sent (normalised) and what came back."""

    method: str
    path: str
    body: Any
    status: int
    headers: dict[str, str]
    response: str | Any
    """The response body: the provider's text, or structured data when it was JSON."""
    cancelled: bool = False

    def response_bytes(self, normaliser: Normaliser) -> bytes:
        text = self.response if isinstance(self.response, str) else json.dumps(self.response)
        return normaliser.restore(text).encode("utf-8")


@dataclass
class SessionCassette:
    """One session's model calls, turn by turn (see the module docstring)."""

    kind: str
    """The agent kind (SDK) that made the calls: openai, openai-chat or anthropic."""
    base_url: str | None
    turns: list[list[Call]] = field(default_factory=list)
    title: Call | None = None
    redact: tuple[str, ...] = DEFAULT_REDACT
    cancelled: set[int] = field(default_factory=set)
    """Turns (numbered from 1) the client cancelled while they ran."""

    # -- writing -------------------------------------------------------------------------------

    def to_yaml(self) -> str:
        shared: dict[str, Any] = {}
        names: dict[str, str] = {}

        def share(kind: str, value: Any) -> Any:
            if value in (None, "", []):
                return value
            key = json.dumps(value, sort_keys=True)
            name = names.get(key)
            if name is None:
                name = names[key] = f"{kind}-{sum(1 for n in shared if n.startswith(kind + '-')) + 1}"
                shared[name] = value
            return {"$shared": name}

        def call(entry: Call) -> dict[str, Any]:
            body = entry.body
            if isinstance(body, dict):
                body = dict(body)
                for key in _SHARED_KEYS:
                    if key in body:
                        body[key] = share("tools" if key == "tools" else "system", body[key])
                messages = body.get("messages")
                if isinstance(messages, list) and messages and isinstance(messages[0], dict) and messages[0].get("role") in ("system", "developer"):
                    body["messages"] = [share("system", messages[0]), *messages[1:]]
            out: dict[str, Any] = {"request": {"method": entry.method, "path": entry.path, "body": body},
                                   "response": {"status": entry.status, "headers": entry.headers}}
            out["response"]["json" if not isinstance(entry.response, str) else "body"] = entry.response
            if entry.cancelled:
                out["cancelled"] = True
            return out

        turns = [{"turn": number, **({"cancelled": True} if number in self.cancelled else {}), "calls": [call(c) for c in calls]}
                 for number, calls in enumerate(self.turns, 1)]
        title = call(self.title) if self.title is not None else None
        document: dict[str, Any] = {"format": FORMAT, "version": VERSION, "kind": self.kind, "base_url": self.base_url,
                                    "redact": list(self.redact), "shared": shared, "turns": turns}
        if title is not None:
            document["title"] = title
        return _HEADER + yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=10_000)

    # -- reading -------------------------------------------------------------------------------

    @classmethod
    def from_yaml(cls, text: str, source: str = "<cassette>") -> SessionCassette:
        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise CassetteFormatError(f"{source} is not valid YAML: {error}") from None
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise CassetteFormatError(f"{source} is not an agent-host session cassette (no 'format: {FORMAT}' line)")
        if document.get("version") != VERSION:
            raise CassetteFormatError(
                f"{source} is a version {document.get('version')!r} session cassette; this host reads version {VERSION}: record it again"
            )
        shared = document.get("shared") or {}

        def resolve(value: Any) -> Any:
            if isinstance(value, dict) and set(value) == {"$shared"}:
                name = value["$shared"]
                if name not in shared:
                    raise CassetteFormatError(f"{source}: {{$shared: {name}}} names nothing under 'shared'")
                return copy.deepcopy(shared[name])
            if isinstance(value, dict):
                return {key: resolve(item) for key, item in value.items()}
            if isinstance(value, list):
                return [resolve(item) for item in value]
            return value

        def call(entry: Mapping[str, Any], where: str) -> Call:
            try:
                request, response = entry["request"], entry["response"]
                return Call(
                    method=request.get("method", "POST"), path=request["path"], body=resolve(request.get("body")),
                    status=int(response["status"]), headers=dict(response.get("headers") or {}),
                    response=response["json"] if "json" in response else response.get("body", ""),
                    cancelled=bool(entry.get("cancelled")),
                )
            except (KeyError, TypeError, ValueError) as error:
                raise CassetteFormatError(f"{source}: {where} is not a recorded call ({error!r} missing or wrong)") from None

        entries = document.get("turns") or []
        turns = [[call(c, f"turn {i} call {j}") for j, c in enumerate(t.get("calls") or [], 1)] for i, t in enumerate(entries, 1)]
        cancelled = {i for i, t in enumerate(entries, 1) if t.get("cancelled")}
        title = call(document["title"], "title") if document.get("title") else None
        return cls(kind=str(document.get("kind")), base_url=document.get("base_url"), turns=turns, title=title,
                   redact=tuple(document.get("redact") or DEFAULT_REDACT), cancelled=cancelled)


def _redact(pattern: re.Pattern[str], text: str) -> str:
    if "secret" not in pattern.groupindex:
        return pattern.sub(REDACTED, text)

    def keep_name(match: re.Match[str]) -> str:
        start, end = match.span("secret")
        return text[match.start():start] + REDACTED + text[end:match.end()]

    return pattern.sub(keep_name, text)


def is_session_cassette(path: Path) -> bool:
    """Whether ``path`` starts like a session cassette (read without parsing the whole file)."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        head = handle.read(2048)
    return f"format: {FORMAT}" in head


def read_cassette(path: Path) -> SessionCassette:
    return SessionCassette.from_yaml(path.read_text(encoding="utf-8"), str(path.name))


def write_cassette(path: Path, cassette: SessionCassette) -> None:
    """Write atomically: a reader (or a crash) never sees half a cassette."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(cassette.to_yaml(), encoding="utf-8")
    partial.replace(path)


def request_diff(recorded: Call, method: str, path: str, body: Any, *, limit: int = 60) -> str | None:
    """A readable unified diff of what differs between a recorded request and the one sent now, or None."""
    if (recorded.method, recorded.path, recorded.body) == (method, path, body):
        return None
    before = _lines(recorded.method, recorded.path, recorded.body)
    after = _lines(method, path, body)
    diff = list(difflib.unified_diff(before, after, "recorded", "sent now", n=2, lineterm=""))
    if len(diff) > limit:
        diff = [*diff[:limit], f"... ({len(diff) - limit} more diff lines)"]
    return "\n".join(diff)


def _lines(method: str, path: str, body: Any) -> list[str]:
    text = yaml.dump({"request": f"{method} {path}", "body": body}, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=10_000)
    return text.splitlines()


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks, so a prompt or a stream reads (and diffs) line by line."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _represent_str)
