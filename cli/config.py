"""The configuration a command runs with: ``--config`` (else the user's ``config.toml`` where a
command reads it without one) and what the command lays over it. Errors are ``host.config``'s
``ConfigError``, whose message names the key and what to fix."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from host.config import ConfigError, HostConfig, is_loopback, load_config

__all__ = ["load", "user_config"]


def load(args: argparse.Namespace, server: dict[str, Any], recording: bool | None = None,
         cluster: str | None = None) -> HostConfig:
    """The config of ``--config`` with ``server`` (and ``recording``, and ``--cluster``'s URL) laid
    over it; ``ConfigError`` for a bad file, and for a host reachable from the network without a token."""
    config = load_config(args.config, overrides={"server": server, "recording": {"enabled": recording},
                                                 "cluster": {"url": cluster}})
    if not is_loopback(config.server.host) and not config.server.token:
        raise ConfigError(
            f"refusing to listen on {config.server.host} without a token: pass --token-file, "
            "server.token in the config file, or AGENT_HOST_TOKEN"
        )
    return config


def user_config() -> Path:
    """The config the one-command mode and ``agent-host plugin`` read without ``--config``: ``$XDG_CONFIG_HOME/agent-host/config.toml``."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "agent-host" / "config.toml"
