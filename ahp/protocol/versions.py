"""Protocol version constants and negotiation for AHP.

Contract:
- ``PROTOCOL_VERSION`` is the version this host implements; ``SUPPORTED_PROTOCOL_VERSIONS``
  lists, most preferred first, the exact strings the host will echo in
  ``InitializeResult.protocolVersion``.
- Versions are SemVer ``MAJOR.MINOR.PATCH`` strings. Two versions are compatible when the
  MAJOR matches and is >= 1, or when both are ``0.x`` with the same MINOR (0.x minors
  may break; patches are additive).
- ``negotiate_protocol_version`` is pure: it returns the version string to echo, or
  ``None`` when nothing offered is compatible (the caller answers -32005).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

PROTOCOL_VERSION = "0.2.0"
SUPPORTED_PROTOCOL_VERSIONS: tuple[str, ...] = (PROTOCOL_VERSION,)

_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:[-+].*)?$")


def parse_version(version: str) -> tuple[int, int, int] | None:
    """Return ``(major, minor, patch)`` for a SemVer string, or ``None`` if malformed."""
    match = _SEMVER.match(version) if isinstance(version, str) else None
    if match is None:
        return None
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch)


def is_compatible(offered: str, supported: str = PROTOCOL_VERSION) -> bool:
    """Whether a peer speaking ``offered`` can talk to a host speaking ``supported``."""
    a, b = parse_version(offered), parse_version(supported)
    if a is None or b is None:
        return False
    if a[0] != b[0]:
        return False
    return a[0] >= 1 or a[1] == b[1]


def negotiate_protocol_version(offered: Iterable[str]) -> str | None:
    """Pick the version to echo for a client's ``protocolVersions`` list.

    An exact match with a supported version wins (the highest one offered); otherwise
    the highest compatible offer (e.g. a future ``0.2.1``) is echoed verbatim, since the
    client named it and patch releases are additive.
    """
    candidates = [v for v in offered if isinstance(v, str) and parse_version(v) is not None]
    exact = [v for v in candidates if v in SUPPORTED_PROTOCOL_VERSIONS]
    if exact:
        return max(exact, key=parse_version)
    compatible = [v for v in candidates if any(is_compatible(v, s) for s in SUPPORTED_PROTOCOL_VERSIONS)]
    if compatible:
        return max(compatible, key=parse_version)
    return None
