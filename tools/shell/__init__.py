"""Reading shell command lines before they run: one lexer, one table of command knowledge.

Nothing here executes anything; it is what the host knows about a command line so it can ask the
user well (confirmation rules) and warn them (writes outside the working directory).

* ``tools.shell.lexer``: the one POSIX command-line lexer (words, operators, redirections,
  substitutions, heredocs), recording in order everything a prefix rule cannot see through.
* ``tools.shell.commands``: the one table of what well-known commands do: which run other
  commands (``sudo``, ``xargs``, ``bash -c``...), and which write to which of their arguments.
* ``tools.shell.lines``: ``analyse`` (simple commands, and whether the line is *plain*) and
  ``loose_words``, for the confirmation rules in ``tools.policy``.
* ``tools.shell.writes``: ``outside_writes`` / ``describe_findings`` / ``write_targets``, for the ``shell`` tool.
"""

from .lines import CommandLine, analyse, loose_words
from .writes import Finding, describe_findings, outside_writes, write_targets

__all__ = ["CommandLine", "analyse", "loose_words", "Finding", "outside_writes", "describe_findings", "write_targets"]
