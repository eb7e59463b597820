"""Which AHP versions the client offers, and how it mirrors the version a host answers in.

Contract:

* ``PROTOCOL_VERSIONS`` is the one list a client offers by default, newest first: the wire
  versions whose state *is* the model (``ahp.state``). Adding a version the model serves
  unchanged (1.0.0) is one entry here.
* ``LEGACY_VERSIONS`` is the oldest dialect (0.2.0), offered only by callers that read the host's
  0.2.0 projection (its tests, which ask for it by name); its states are folded with the 0.2.0
  reference reducers (``ahp.dialects.v0_2.state``). Our own clients (the terminal, the pytest
  plugin) speak ``PROTOCOL_VERSIONS``.
* ``mirror_model(version)`` says how to fold a negotiated version's states: the reducers, what a
  channel URI names, and the holder that keeps streamed text as runs. A version of the model's
  line (0.9.x, 1.x) folds with ``ahp.state``; 0.2.x with the 0.2.0 reducers; anything else raises
  ``ValueError`` (a host that echoed a version nobody offered).
* ``unsupported_message`` turns the host's -32005 answer into a sentence that says what the host
  serves, what this client speaks and what to do.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ahp.dialects.negotiation import accepts
from ahp.dialects.v0_2.state import channel_kind as legacy_channel_kind
from ahp.dialects.v0_2.state import reduce as legacy_reduce
from ahp.dialects.v0_2.state.appends import AppendingState as LegacyAppendingState
from ahp.state import channel_kind as model_channel_kind
from ahp.state import reduce as model_reduce
from ahp.state.appends import AppendingState

__all__ = ["LEGACY", "LEGACY_VERSIONS", "MODEL", "PROTOCOL_VERSIONS", "MirrorModel", "is_model_version", "mirror_model",
           "unsupported_message"]

PROTOCOL_VERSIONS: tuple[str, ...] = ("1.0.0", "0.9.0")
"""Offered in ``initialize`` by default, newest first; the host picks the highest it serves."""

LEGACY_VERSIONS: tuple[str, ...] = ("0.2.0",)
"""The oldest dialect, for callers that still read 0.2.0 shapes (``session/turnStarted`` ...)."""

Reducer = Callable[[str, dict[str, Any], dict[str, Any], int], dict[str, Any]]


@dataclass(frozen=True)
class MirrorModel:
    """How one wire version's channel states are folded."""

    reduce: Reducer
    """``reduce(kind, state, action, now) -> state``."""
    channel_kind: Callable[[str], Any]
    """``channel_kind(uri)``: the channel kind the URI names, None when it names none."""
    holder: type[AppendingState]
    """Keeps one channel's state with streamed text appends held back as a run."""


MODEL = MirrorModel(model_reduce, model_channel_kind, AppendingState)
"""The model's own reducers (``ahp.state``): 0.9.0 and every version that serves it unchanged."""

LEGACY = MirrorModel(legacy_reduce, legacy_channel_kind, LegacyAppendingState)
"""The 0.2.0 dialect's own reducers, for the callers that still read its shapes."""


def is_model_version(version: str) -> bool:
    """Whether ``version``'s states are the model's (its line is one of ``PROTOCOL_VERSIONS``)."""
    return any(accepts(baseline, version) for baseline in PROTOCOL_VERSIONS)


def mirror_model(version: str) -> MirrorModel:
    """The folding of the negotiated ``version``; ``ValueError`` for a version nobody offered."""
    if is_model_version(version):
        return MODEL
    if any(accepts(baseline, version) for baseline in LEGACY_VERSIONS):
        return LEGACY
    raise ValueError(f"the host answered in AHP {version}, which this client did not offer")


def unsupported_message(url: str, offered: Sequence[str], data: Any) -> str:
    """What to tell a user when the host at ``url`` serves none of ``offered`` (-32005)."""
    served = data.get("supportedVersions") if isinstance(data, dict) else None
    serves = (f"serves AHP {', '.join(str(v) for v in served)}" if isinstance(served, list) and served
              else "serves none of them")
    return (f"The host at {url} {serves}, but this client speaks AHP {', '.join(offered)}. "
            "Update the host (agent-host serves the current version), or use a client of the host's version.")
