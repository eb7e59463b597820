"""What a slash command's body may hold that runs before its prompt reaches the model.

Claude Code's commands embed shell commands as ``!`cmd``` lines: the turn runs each (as a shell
tool call, under the session's confirmation rules) and puts its output in their place; an
untrusted folder's commands get a note in their place instead. One pattern, for both, kept here
so that reading a command body does not load the turn machinery.
"""

from __future__ import annotations

import re

__all__ = ["BANG_COMMAND"]

BANG_COMMAND = re.compile(r"!`([^`\n]+)`")
"""A shell command inside a slash command's body, run before the prompt reaches the model."""
