"""Where ``agent-host chat`` finds the host: flags, then the environment, then a client config file.

Precedence (first wins): the ``URL`` argument / ``--token`` flag (a ``?token=`` in the URL
argument counts as given on the command line: it is the form ``agent-host serve`` prints), then
``AGENT_HOST_URL`` / ``AGENT_HOST_TOKEN``, then the client config file. The config file is TOML with optional keys
``url``, ``token``, ``agent`` and ``model`` (strings), and how the terminal looks and behaves:
``theme`` (``auto``, ``dark`` or ``light``; flag ``--theme``), ``editing_mode`` (``emacs`` or
``vi``; flag ``--editing-mode``), ``notify`` (``auto``, ``bell``, ``osc9``, ``osc777`` or ``off``;
``chat._notify``) and ``notify_after`` (seconds, a number). It lives at
``$AGENT_HOST_CLIENT_CONFIG`` or ``$XDG_CONFIG_HOME/agent-host/client.toml`` (``~/.config/...``).
A missing default file is fine; a broken or unknown key, or a value not among a key's choices, is
a ``ChatSettingsError`` that names the file, the key and the value.

The token never appears in messages shown to the user (``display_url`` strips it).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = [
    "ChatSettings", "ChatSettingsError", "resolve_settings", "display_url", "split_token", "default_config_path",
    "THEMES", "EDITING_MODES", "NOTIFY",
]

DEFAULT_URL = "ws://127.0.0.1:8765/"
THEMES = ("auto", "dark", "light")
EDITING_MODES = ("emacs", "vi")
NOTIFY = ("auto", "bell", "osc9", "osc777", "off")
NOTIFY_AFTER = 30.0
_CHOICES: dict[str, tuple[str, ...] | None] = {
    "url": None, "token": None, "agent": None, "model": None,
    "theme": THEMES, "editing_mode": EDITING_MODES, "notify": NOTIFY,
}
_NUMBERS = {"notify_after"}
_KEYS = set(_CHOICES) | _NUMBERS


class ChatSettingsError(Exception):
    """The client configuration is unusable; the message says what to fix."""


@dataclass(frozen=True)
class ChatSettings:
    url: str
    """The WebSocket URL without any token in it."""
    token: str | None
    """Sent as ``Authorization: Bearer``; None when the host needs none."""
    agent: str | None = None
    """Default agent (``AgentInfo.provider``) for new sessions."""
    model: str | None = None
    """Default model id for new sessions."""
    theme: str = "auto"
    """Colours for a ``dark`` or ``light`` terminal background; ``auto`` asks the terminal (``chat._theme``)."""
    editing_mode: str = "emacs"
    """Keys of the input line: ``emacs`` (prompt_toolkit's default) or ``vi``."""
    notify: str = "auto"
    """How the chat calls for attention when it waits for the user or a turn ends unwatched (``chat._notify``)."""
    notify_after: float = NOTIFY_AFTER
    """Seconds a turn runs before its end is announced, where the terminal does not report focus."""


def default_config_path(environ: Mapping[str, str]) -> Path:
    explicit = environ.get("AGENT_HOST_CLIENT_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "agent-host" / "client.toml"


def _load_file(environ: Mapping[str, str]) -> dict[str, Any]:
    path = default_config_path(environ)
    explicit = bool(environ.get("AGENT_HOST_CLIENT_CONFIG"))
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if explicit:
            raise ChatSettingsError(f"AGENT_HOST_CLIENT_CONFIG names {path}, which does not exist") from None
        return {}
    except (OSError, UnicodeDecodeError) as error:
        raise ChatSettingsError(f"cannot read {path}: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ChatSettingsError(f"{path} is not valid TOML: {error}") from None
    for key, value in data.items():
        if key not in _KEYS:
            raise ChatSettingsError(f"{path}: unknown key {key!r} (expected one of: {', '.join(sorted(_KEYS))})")
        if key in _NUMBERS:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ChatSettingsError(f"{path}: {key} must be a number of seconds (0 or more), not {value!r}")
            continue
        if not isinstance(value, str):
            raise ChatSettingsError(f"{path}: {key} must be a string, not {value!r}")
        choices = _CHOICES[key]
        if choices is not None and value not in choices:
            raise ChatSettingsError(f"{path}: {key} must be one of {', '.join(choices)}, not {value!r}")
    return data


def split_token(url: str) -> tuple[str, str | None]:
    """The URL without its ``token`` query parameter, and that token."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    token = next((v for k, v in query if k == "token"), None)
    rest = urlencode([(k, v) for k, v in query if k != "token"])
    return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", rest, parts.fragment)), token


def display_url(url: str) -> str:
    """The URL as safe to print: any token in it is dropped."""
    return split_token(url)[0]


def resolve_settings(
    url: str | None,
    token: str | None,
    *,
    agent: str | None = None,
    model: str | None = None,
    theme: str | None = None,
    editing_mode: str | None = None,
    environ: Mapping[str, str] | None = None,
    shared: Callable[[], str | None] | None = None,
) -> ChatSettings:
    """Combine flags, environment and config file into the settings to connect and draw with.
    ``shared`` gives the URL (token included) of the shared host running on the user's data
    directory, if any: used when neither flag, environment nor file names a host, before the default."""
    environ = os.environ if environ is None else environ
    file = _load_file(environ)
    found = None if url or environ.get("AGENT_HOST_URL") or file.get("url") or shared is None else shared()
    chosen = url or environ.get("AGENT_HOST_URL") or file.get("url") or found or DEFAULT_URL
    if urlsplit(chosen).scheme not in ("ws", "wss"):
        raise ChatSettingsError(f"the host URL must start with ws:// or wss://, not {display_url(chosen)!r}")
    bare, url_token = split_token(chosen)
    return ChatSettings(
        url=bare,
        token=token
        or (url_token if url or found else None)  # a pasted (or found) URL's own token beats older defaults
        or environ.get("AGENT_HOST_TOKEN")
        or file.get("token")
        or url_token,
        agent=agent or file.get("agent"),
        model=model or file.get("model"),
        theme=theme or file.get("theme") or "auto",
        editing_mode=editing_mode or file.get("editing_mode") or "emacs",
        notify=file.get("notify") or "auto",
        notify_after=float(file.get("notify_after", NOTIFY_AFTER)),
    )
