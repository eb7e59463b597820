"""Protocol version constants and negotiation (PROTOCOL.md sections 4 and 12)."""

from __future__ import annotations

import pytest

from ahp.protocol import (
    PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
    is_compatible,
    negotiate_protocol_version,
    parse_version,
)


def test_this_host_speaks_0_2_0():
    assert PROTOCOL_VERSION == "0.2.0"
    assert SUPPORTED_PROTOCOL_VERSIONS == ("0.2.0",)


@pytest.mark.parametrize(
    ("offered", "chosen"),
    [
        (["0.2.0"], "0.2.0"),
        (["0.3.0", "0.2.0"], "0.2.0"),
        (["0.2.1", "0.2.0"], "0.2.0"),  # an exact match wins over a newer patch
        (["0.2.1"], "0.2.1"),  # same 0.MINOR: compatible, echo the client's string
        (["0.1.0"], None),
        (["1.0.0"], None),
        (["two", 2, None], None),
        ([], None),
    ],
)
def test_negotiation_picks_a_supported_or_compatible_version(offered, chosen):
    assert negotiate_protocol_version(offered) == chosen


def test_compatibility_rules():
    assert is_compatible("0.2.7", "0.2.0")
    assert not is_compatible("0.3.0", "0.2.0")
    assert is_compatible("1.4.0", "1.0.0")
    assert not is_compatible("2.0.0", "1.0.0")
    assert parse_version("0.2") is None
    assert parse_version("0.2.0-beta.1") == (0, 2, 0)
