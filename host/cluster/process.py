"""The cluster log of one ``agent-host serve --cluster`` process, made from its ``[cluster]`` config.

``open_cluster_log`` is the one place the host's configuration meets ``host.cluster``: the NATS URL
and credentials file, and the name this process holds sessions' leases as. That name is stable per
machine and data directory unless ``[cluster] name`` says otherwise, so a process restarted on its
data directory (after a crash, or kill -9) takes its sessions back at once instead of waiting for
their leases to lapse; two processes never share a data directory (``cli.serve`` locks it), so they
never share a name by default.
"""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path
from typing import Any

from host.cluster.ordered_log import ClusterLog
from host.config import ClusterConfig
from host.errors import ConfigError

__all__ = ["open_cluster_log", "process_name"]


def process_name(config: ClusterConfig, data_dir: Path) -> str:
    """What this process is called in the cluster: ``[cluster] name``, else ``<machine>-<8 hex of
    the data directory's path>``."""
    if config.name:
        return config.name
    digest = hashlib.sha256(str(data_dir.resolve()).encode()).hexdigest()[:8]
    return f"{socket.gethostname()}-{digest}"


def open_cluster_log(config: ClusterConfig, data_dir: Path) -> ClusterLog:
    """The log on ``config.url``, not connected yet: its ``open`` (``AgentHost.open``) connects,
    ``LogUnavailable`` when it cannot be reached, saying so."""
    assert config.url is not None
    options: dict[str, Any] = {}
    if config.credentials:
        credentials = Path(config.credentials).expanduser()
        if not credentials.is_file():
            raise ConfigError(f"cluster.credentials: {credentials} is not a file; give the path of the NATS "
                              ".creds file the server's operator issued, or remove the key")
        options["user_credentials"] = str(credentials)
    return ClusterLog(config.url, holder=process_name(config, data_dir), timeout=config.timeout, **options)
