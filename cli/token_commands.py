"""``agent-host token ...``: the named tokens of a data directory, one per person.

``agent-host token create NAME --level read|full`` adds one and prints its
secret alone on stdout (what it is goes to stderr), once: it is stored only as a hash (``host.transport.tokens``). ``agent-host token list``
lists name, level and creation time (never a secret), ``agent-host token revoke NAME``
removes one; a host running on the data directory closes that token's connections within a
second. The data directory is ``--data-dir``, else the config's (``--config``, else the user's
``config.toml`` when it exists), else the default. Exit codes: 0 done, 1 the operation failed
(the message says why and what to do), 2 a configuration error.
"""

from __future__ import annotations

import argparse
import sys

from cli.config import user_config
from host.config import ConfigError, load_config
from host.transport.tokens import TokenError, TokenFile

__all__ = ["run"]


def run(args: argparse.Namespace) -> int:
    path = args.config
    if path is None and user_config().is_file():
        path = str(user_config())
    try:
        config = load_config(path, overrides={"server": {"data_dir": args.data_dir}})
    except ConfigError as error:
        print(f"agent-host: {error}", file=sys.stderr)
        return 2
    tokens = TokenFile(config.data_path())
    try:
        for line in _run(tokens, args):
            print(line)
    except TokenError as error:
        print(f"agent-host: {error}", file=sys.stderr)
        return 1
    return 0


def _run(tokens: TokenFile, args: argparse.Namespace) -> list[str]:
    if args.token_command == "create":
        secret = tokens.create(args.name, args.level)
        # The secret alone on stdout (for $(...)), what it is on stderr.
        print(f"agent-host: token {args.name!r}, level {args.level}: give it to its holder now, it is not "
              "shown again. Clients send it as 'Authorization: Bearer <token>', ?token=<token> or ?tkn=<token>.",
              file=sys.stderr)
        return [secret]
    if args.token_command == "list":
        rows = tokens.entries()
        if not rows:
            return [f"no named tokens in {tokens.path} ('agent-host token create NAME --level read|full' adds one)"]
        return [f"{t.name}\t{t.level}\t{t.created}" for t in rows]
    tokens.revoke(args.name)
    return [f"revoked token {args.name!r}; a host running on {tokens.data_dir} closes its connections"]
