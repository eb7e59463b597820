"""Host configuration: a TOML file, then environment variables, then command-line flags.

Every key is declared here; an unknown key or a bad value is a ``ConfigError`` that names the
file, the key, the value and what is expected, so a typo never silently changes behaviour.
Precedence (later wins): built-in defaults < config file < ``AGENT_HOST_*`` environment < flags.
Secrets (the connection token, provider keys) are never logged or echoed back.
"""

from __future__ import annotations

import ipaddress
import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from host.errors import ConfigError

__all__ = ["HostConfig", "ServerConfig", "load_config", "is_loopback", "default_data_dir"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ServerConfig(_Section):
    host: str = "127.0.0.1"
    """Address to bind. Anything but loopback requires an explicit token."""
    port: int = Field(default=8765, ge=0, le=65535)
    """TCP port; 0 picks a free one."""
    token: str | None = None
    """Connection token; when unset, one is generated at start and printed with the URL."""
    allowed_origins: list[str] = Field(default_factory=list)
    """Browser origins allowed to open the WebSocket (exact match, e.g. "http://localhost:3000")."""
    max_frame_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    """Largest inbound WebSocket message; larger ones close the connection with 1009."""
    data_dir: str | None = None
    """Where the journal lives; default: $XDG_DATA_HOME/agent-host."""
    replay_buffer: int = Field(default=10_000, ge=0)
    """How many recent actions a reconnecting client can be replayed."""
    snapshot_every: int = Field(default=5_000, ge=1)
    """Write a full snapshot after this many journal entries."""


class SessionDefaults(_Section):
    default_directory: str | None = None
    """Working directory offered to clients (InitializeResult.defaultDirectory); default: cwd."""
    offline_agent: bool = True
    """Offer the built-in offline agent."""
    offline_delay: float = Field(default=0.01, ge=0)
    """Seconds between the offline agent's streamed words."""


class HostConfig(_Section):
    server: ServerConfig = Field(default_factory=ServerConfig)
    sessions: SessionDefaults = Field(default_factory=SessionDefaults)
    source: str | None = Field(default=None, exclude=True)
    """The file this was read from, for messages."""

    def data_path(self) -> Path:
        return Path(self.server.data_dir).expanduser() if self.server.data_dir else default_data_dir()


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "agent-host"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_ENV = {
    "AGENT_HOST_TOKEN": ("server", "token"),
    "AGENT_HOST_HOST": ("server", "host"),
    "AGENT_HOST_PORT": ("server", "port"),
    "AGENT_HOST_DATA_DIR": ("server", "data_dir"),
}


def load_config(path: str | Path | None = None, *, overrides: dict[str, dict[str, Any]] | None = None,
                environ: dict[str, str] | None = None) -> HostConfig:
    """Read, merge and validate; raises ``ConfigError`` with a message a person can act on."""
    raw: dict[str, Any] = {}
    source = str(path) if path is not None else "<defaults>"
    if path is not None:
        try:
            raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"config file {path} does not exist; copy config.example.toml to start one") from None
        except tomllib.TOMLDecodeError as error:
            raise ConfigError(f"{path} is not valid TOML: {error}") from None
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"cannot read config file {path}: {error}") from None
    env = os.environ if environ is None else environ
    for variable, (section, key) in _ENV.items():
        if env.get(variable):
            raw.setdefault(section, {})[key] = env[variable]
            source = f"{source} + ${variable}"
    for section, values in (overrides or {}).items():
        for key, value in values.items():
            if value is not None:
                raw.setdefault(section, {})[key] = value
    try:
        config = HostConfig.model_validate(raw)
    except ValidationError as error:
        raise ConfigError(_describe(error, source, raw)) from None
    config.source = source
    return config


def _describe(error: ValidationError, source: str, raw: dict[str, Any]) -> str:
    lines = []
    for item in error.errors():
        loc = ".".join(str(part) for part in item["loc"])
        if item["type"] == "extra_forbidden":
            lines.append(f"unknown key {loc!r} (check the spelling against config.example.toml)")
            continue
        value: Any = raw
        for part in item["loc"]:
            value = value.get(part) if isinstance(value, dict) else None
        expected = {
            "int_parsing": "a whole number",
            "int_type": "a whole number",
            "bool_parsing": "true or false",
            "bool_type": "true or false",
            "string_type": "a string",
            "list_type": "a list",
            "greater_than_equal": f"at least {item.get('ctx', {}).get('ge')}",
            "less_than_equal": f"at most {item.get('ctx', {}).get('le')}",
            "float_parsing": "a number",
            "model_type": "a table",
        }.get(item["type"], "a different value")
        shown = "<hidden>" if loc.endswith("token") else repr(value)
        lines.append(f"{loc} = {shown} is not valid: expected {expected}")
    return f"invalid configuration ({source}): " + "; ".join(lines)
