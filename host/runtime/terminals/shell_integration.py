"""How a user's shell is started so it reports its commands (shell integration). Pure: it only
builds an argv and an environment.

Contract: ``integrated(shell, env, nonce)`` returns ``(argv, env)`` to start ``shell``
interactively. For the three shells below ``env`` gains ``AHP_TERMINAL_NONCE=<nonce>``: the rc
file moves it into an unexported shell variable before it reads the user's own, and ends every
mark with it, so the host believes only marks that carry it (``host.runtime.terminals.output``); no
program the shell starts finds it in its environment.

* ``bash``: ``bash --rcfile host/runtime/terminals/rc/bash.rc -i``. The rc file reads the user's
  ``~/.bashrc`` (bash itself still reads ``/etc/bash.bashrc``), then adds ``PS0`` /
  ``PROMPT_COMMAND`` hooks that print OSC 633 marks: ``E`` with the command line (from the
  history, so a line the history leaves out, e.g. with ``HISTCONTROL=ignorespace``, is reported
  as the previous one), ``C`` when it runs, ``D;<exit code>`` when it finished, ``P;Cwd=`` and
  ``A`` / ``B`` around the prompt.
* ``zsh``: ``ZDOTDIR`` points at ``host/runtime/terminals/rc/zsh`` (``AHP_USER_ZDOTDIR`` keeps the user's
  own, which the rc files restore after reading the user's ``.zshenv`` and ``.zshrc``); the same
  marks come from ``preexec`` / ``precmd`` hooks.
* ``fish``: ``fish -i -C 'source host/runtime/terminals/rc/integration.fish'`` (``-C`` runs after the
  user's own ``config.fish``); the marks come from ``fish_preexec`` / ``fish_postexec`` /
  ``fish_prompt`` event handlers.
* Anything else (``sh``, ``dash``, ...): started unchanged (``<shell>`` with no arguments), so
  without command detection: they have no hook that runs before a command.

The host (``host.runtime.terminals.service``) turns the marks into ``terminal/commandExecuted`` /
``terminal/commandFinished`` / ``terminal/cwdChanged`` and removes them from the output.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["integrated", "NONCE_VARIABLE", "RC_DIRECTORY"]

RC_DIRECTORY = Path(__file__).resolve().parent / "rc"


NONCE_VARIABLE = "AHP_TERMINAL_NONCE"


def integrated(shell: str, env: Mapping[str, str], nonce: str) -> tuple[list[str], dict[str, str]]:
    name = os.path.basename(shell)
    environment = dict(env)
    environment.pop(NONCE_VARIABLE, None)  # a host started from one of our terminals: not its nonce
    if name in ("bash", "zsh", "fish"):
        environment[NONCE_VARIABLE] = nonce
    if name == "bash":
        return [shell, "--rcfile", str(RC_DIRECTORY / "bash.rc"), "-i"], environment
    if name == "zsh":
        environment["AHP_USER_ZDOTDIR"] = environment.get("ZDOTDIR") or environment.get("HOME") or os.path.expanduser("~")
        environment["ZDOTDIR"] = str(RC_DIRECTORY / "zsh")
        return [shell, "-i"], environment
    if name == "fish":
        return [shell, "-i", "-C", "source " + _fish_quoted(str(RC_DIRECTORY / "integration.fish"))], environment
    return [shell], environment


def _fish_quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
