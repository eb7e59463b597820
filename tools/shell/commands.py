"""What well-known commands do, in one table: who runs other commands, who writes where.

Used by ``tools.shell.writes`` (to find a command's write targets behind ``sudo``/``xargs``...)
and by ``tools.policy`` (a rule remembered for ``sudo …`` or ``bash …`` must not become a
prefix that allows anything after it).

Data only; no logic beyond set unions.
"""

from __future__ import annotations

__all__ = [
    "WRAPPERS", "SHELLS", "INTERPRETERS", "RUNS_OTHER_COMMANDS",
    "WRITES_ALL_OPERANDS", "WRITES_DESTINATION", "WRITES_AFTER_MODE", "OPTIONS_WITH_VALUES",
]

WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "-S"}),
    "nohup": frozenset(),
    "time": frozenset(),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "nice": frozenset({"-n"}),
    "ionice": frozenset({"-c", "-n", "-p"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "timeout": frozenset({"-s", "-k"}),
    "xargs": frozenset({"-I", "-i", "-n", "-P", "-d", "-L", "-l", "-s", "-E", "-e", "-a"}),
}
"""Prefix commands that run the rest of their words as a command → their options taking a value."""

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "fish"})
"""Shells: ``-c SCRIPT`` is a command line of its own."""

INTERPRETERS = frozenset({"python", "python3", "node", "perl", "ruby", "php"})
"""Interpreters that run code given on the command line."""

RUNS_OTHER_COMMANDS = frozenset(WRAPPERS) | SHELLS | INTERPRETERS | {
    "eval", "su", "watch", "find", "parallel", "ssh", "busybox",
}
"""Commands whose arguments can be any other command: never remembered as a prefix rule."""

WRITES_ALL_OPERANDS = frozenset({"rm", "rmdir", "mkdir", "touch", "unlink", "shred", "tee", "truncate", "mv"})
"""Every operand is written (created, changed or removed)."""

WRITES_DESTINATION = frozenset({"cp", "ln", "install", "rsync"})
"""The last operand (or ``-t DIR``) is written."""

WRITES_AFTER_MODE = frozenset({"chmod", "chown", "chgrp"})
"""Every operand after the mode/owner is changed (all of them with ``--reference``)."""

OPTIONS_WITH_VALUES: dict[str, frozenset[str]] = {
    "cp": frozenset({"-S", "--suffix"}),
    "mv": frozenset({"-S", "--suffix"}),
    "ln": frozenset({"-S", "--suffix"}),
    "install": frozenset({"-S", "-m", "-o", "-g", "--suffix", "--mode", "--owner", "--group"}),
    "rsync": frozenset({"-e", "--rsh", "--exclude", "--include", "--filter", "-f"}),
    "mkdir": frozenset({"-m", "--mode"}),
    "touch": frozenset({"-d", "-t", "-r", "--date", "--reference"}),
    "truncate": frozenset({"-s", "-r", "--size", "--reference"}),
    "shred": frozenset({"-n", "-s", "--iterations", "--size", "--random-source"}),
    "chown": frozenset({"--reference"}),
    "chgrp": frozenset({"--reference"}),
    "chmod": frozenset({"--reference"}),
}
"""Options of writing commands that take a value (so the value is not mistaken for a file)."""
