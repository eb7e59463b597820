"""Which AHP version a connection speaks: the ``initialize`` negotiation, pure.

Contract:

* ``SERVED_VERSIONS`` are the baselines this host serves, newest first; each is one wire dialect
  (``host.transport.dialects``). A served baseline also serves the later releases its caret range
  takes in: a client offering ``0.7.3`` speaks the 0.7.0 dialect and gets ``0.7.3`` echoed; one
  offering ``1.2.0`` speaks the 1.0.0 dialect and gets ``1.2.0`` echoed (``^1.0.0`` is every 1.x:
  from 1.0.0 on a minor release only adds, as the 1.0.0 versioning rules say).
* Versions are plain ``MAJOR.MINOR.PATCH`` strings (no pre-release or build part, no leading
  zeros). ``negotiate`` raises ``MalformedVersion`` if any offered entry is not one: the
  reference registry treats a malformed version as an error, not as an entry to skip.
* The caret rule of the reference registry (VERSIONS.md §1): an offered version is accepted when
  some served baseline has the same major, below 1.0 the same minor, below 0.1 the same patch,
  and the offered version is not lower than that baseline. Of the accepted offers the highest
  wins, whatever the client's order; ``None`` means nothing is acceptable (the host answers
  -32005 with ``unsupported_error_data()`` and closes the connection).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "SERVED_VERSIONS",
    "MalformedVersion",
    "Negotiated",
    "accepts",
    "negotiate",
    "parse_version",
    "unsupported_error_data",
    "unsupported_message",
]

SERVED_VERSIONS: tuple[str, ...] = ("1.0.0", "0.9.0", "0.7.0", "0.2.0")
"""The served baselines, newest first: 1.0.0 and 0.9.0 (the two released baselines of the 1.0.0
registry; 0.9.0 is what VS Code 1.139.1 picks), 0.7.0 (the newest version with a complete
official schema and vector corpus), 0.2.0 (this host's first dialect)."""

_VERSION = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")

Version = tuple[int, int, int]


class MalformedVersion(ValueError):
    """An offered protocol version is not a ``MAJOR.MINOR.PATCH`` string."""

    def __init__(self, index: int, offered: object) -> None:
        super().__init__(f"protocolVersions[{index}] is {offered!r}, not a MAJOR.MINOR.PATCH version such as \"0.9.0\"")
        self.index = index
        self.offered = offered


@dataclass(frozen=True, slots=True)
class Negotiated:
    """The outcome of a successful negotiation."""

    version: str
    """The client's own string, echoed as ``InitializeResult.protocolVersion``."""
    baseline: str
    """The served baseline that accepted it: which dialect the connection speaks."""


def parse_version(text: object) -> Version | None:
    """``(major, minor, patch)``, or ``None`` when ``text`` is not a plain ``MAJOR.MINOR.PATCH``."""
    match = _VERSION.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        return None
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch)


def accepts(baseline: str, offered: str) -> bool:
    """Whether the dialect of ``baseline`` can serve a client offering ``offered`` (caret rule)."""
    base, version = parse_version(baseline), parse_version(offered)
    if base is None or version is None:
        return False
    if version[0] != base[0]:
        return False
    if base[0] == 0 and version[1] != base[1]:
        return False
    if base[0] == 0 and base[1] == 0 and version[2] != base[2]:
        return False
    return version >= base


def negotiate(offered: Iterable[object], served: Sequence[str] = SERVED_VERSIONS) -> Negotiated | None:
    """The version to speak with a client offering ``offered``; ``None`` if none is acceptable.

    Raises ``MalformedVersion`` for the first offered entry that is not a version string.
    """
    best: tuple[Version, Negotiated] | None = None
    for index, entry in enumerate(offered):
        version = parse_version(entry)
        if version is None:
            raise MalformedVersion(index, entry)
        assert isinstance(entry, str)
        baseline = next((base for base in served if accepts(base, entry)), None)
        if baseline is not None and (best is None or version > best[0]):
            best = (version, Negotiated(entry, baseline))
    return None if best is None else best[1]


def unsupported_error_data(served: Sequence[str] = SERVED_VERSIONS) -> dict[str, list[str]]:
    """``UnsupportedProtocolVersionErrorData`` for -32005: every served version."""
    return {"supportedVersions": list(served)}


def _range(baseline: str) -> str:
    """A baseline with the releases its caret range takes in, in words."""
    major, minor, _ = parse_version(baseline) or (0, 0, 0)
    if major > 0:
        return f"{baseline} (and every later {major}.x)"
    return f"{baseline} (and its later {major}.{minor}.x patches)"


def unsupported_message(offered: Sequence[object], served: Sequence[str] = SERVED_VERSIONS) -> str:
    """The -32005 message: which versions this host serves, and that none offered fits."""
    names = [_range(version) for version in served]
    listed = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
    return f"This host serves AHP {listed}; none of {list(offered)} is compatible."
