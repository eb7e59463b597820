"""What a slash command's body may hold that runs before its prompt reaches the model.

Claude Code's commands and skills embed shell commands as ``!`cmd``` spans and ```` ```! ````
fenced blocks: the turn runs each (as a shell tool call, under the session's confirmation rules
and the turn's grants) and puts its output in their place; an untrusted folder's commands get a
note in their place instead. The pattern lives with the other body rules in ``plugins.bodies``;
this module is the turn machinery's one door to it.
"""

from __future__ import annotations

from plugins.bodies import BANG_COMMAND, bang_command, replace_bang_commands

__all__ = ["BANG_COMMAND", "bang_command", "replace_bang_commands"]
