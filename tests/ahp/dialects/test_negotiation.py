"""Version negotiation: what a client offering a list of versions gets."""

from __future__ import annotations

import pytest

from ahp.dialects.negotiation import (
    SERVED_VERSIONS,
    MalformedVersion,
    Negotiated,
    accepts,
    negotiate,
    parse_version,
    unsupported_error_data,
    unsupported_message,
)

VSCODE_1_139_1 = ["0.9.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"]
"""What VS Code 1.139.1 offers (vscode-1.139.1/with-this-host-0.2.0.jsonl)."""


@pytest.mark.parametrize(
    ("offered", "version", "baseline"),
    [
        (VSCODE_1_139_1, "0.9.0", "0.9.0"),
        (list(reversed(VSCODE_1_139_1)), "0.9.0", "0.9.0"),  # the highest accepted wins, not the first
        (["0.2.0"], "0.2.0", "0.2.0"),  # a 0.2.0-only client keeps 0.2.0
        (["0.7.0"], "0.7.0", "0.7.0"),
        (["0.7.3"], "0.7.3", "0.7.0"),  # a later patch of a served minor is echoed as offered
        (["0.7.3", "0.7.0"], "0.7.3", "0.7.0"),
        (["0.2.1", "0.2.0"], "0.2.1", "0.2.0"),
        (["0.3.0", "0.2.1"], "0.2.1", "0.2.0"),
        (["0.9.12", "0.2.0"], "0.9.12", "0.9.0"),
        (["0.6.0", "0.2.0"], "0.2.0", "0.2.0"),  # 0.6 is another 0.MINOR line: not served
        (["0.2.0", "0.7.0", "0.9.0"], "0.9.0", "0.9.0"),
        # 1.0.0 on: the highest offer within ^1.0.0 or ^0.9.0 wins, echoed exactly as offered.
        (["1.0.0"], "1.0.0", "1.0.0"),
        (["1.0.0", "0.9.0"], "1.0.0", "1.0.0"),
        (["0.9.0", "1.0.0"], "1.0.0", "1.0.0"),  # whatever the client's order
        (["1.0.0", "0.9.0", "0.8.0", "0.7.0", "0.6.0"], "1.0.0", "1.0.0"),  # ahp-py's offer
        (["1.3.7", "1.0.0"], "1.3.7", "1.0.0"),  # a later 1.x is served by the 1.0.0 dialect, echoed
        (["1.0.2"], "1.0.2", "1.0.0"),
        (["2.0.0", "1.0.0"], "1.0.0", "1.0.0"),  # 2.x is another major: not served
        (["0.9.3", "0.10.0"], "0.9.3", "0.9.0"),  # 0.10 is another 0.MINOR line
        (["0.2.0", "1.0.0"], "1.0.0", "1.0.0"),
    ],
)
def test_a_served_version_is_chosen(offered: list[str], version: str, baseline: str) -> None:
    assert negotiate(offered) == Negotiated(version, baseline)


@pytest.mark.parametrize(
    "offered",
    [
        [],
        ["0.6.0", "0.5.2", "0.5.1"],  # VS Code's list without its first two entries
        ["0.1.0"],
        ["0.8.0"],
        ["0.10.0"],
        ["2.0.0"],  # another major
        ["2.1.0", "0.8.0", "0.6.0"],
        ["9.0.0", "0.1.0"],
    ],
)
def test_nothing_acceptable_gives_none(offered: list[str]) -> None:
    assert negotiate(offered) is None


@pytest.mark.parametrize(
    ("offered", "index"),
    [
        (["0.9"], 0),
        (["0.9.0", "latest"], 1),
        (["0.9.0-beta.1"], 0),  # no pre-release parts
        (["1.0.0-rc.1", "0.9.0"], 0),
        (["1.0"], 0),
        (["01.0.0"], 0),
        (["0.9.0+build.7"], 0),  # no build metadata
        (["v0.9.0"], 0),
        ([" 0.9.0"], 0),
        (["0.09.0"], 0),  # no leading zeros
        (["0.2.0", 2], 1),
        ([None], 0),
        ([""], 0),
    ],
)
def test_a_malformed_offer_is_an_error_naming_it(offered: list[object], index: int) -> None:
    with pytest.raises(MalformedVersion) as error:
        negotiate(offered)
    assert error.value.index == index
    assert repr(offered[index]) in str(error.value)
    assert f"protocolVersions[{index}]" in str(error.value)


@pytest.mark.parametrize(
    ("baseline", "offered", "accepted"),
    [
        ("0.9.0", "0.9.0", True),
        ("0.9.0", "0.9.4", True),
        ("0.9.1", "0.9.0", False),  # lower than the baseline
        ("0.9.0", "0.10.0", False),
        ("0.9.0", "1.9.0", False),
        ("1.0.0", "1.4.2", True),  # from 1.0 the major is the line
        ("1.2.0", "1.1.0", False),
        ("1.0.0", "2.0.0", False),
        ("0.0.3", "0.0.3", True),  # below 0.1 every patch is its own line
        ("0.0.3", "0.0.4", False),
    ],
)
def test_the_caret_rule(baseline: str, offered: str, accepted: bool) -> None:
    assert accepts(baseline, offered) is accepted


def test_served_versions_and_the_unsupported_answer_list_every_one() -> None:
    assert SERVED_VERSIONS == ("1.0.0", "0.9.0", "0.7.0", "0.2.0")
    assert unsupported_error_data() == {"supportedVersions": ["1.0.0", "0.9.0", "0.7.0", "0.2.0"]}
    message = unsupported_message(["0.6.0"])
    for version in SERVED_VERSIONS:
        assert version in message
    assert "'0.6.0'" in message
    assert "1.0.0 (and every later 1.x)" in message  # ^1.0.0 takes in minors, ^0.9.0 only patches
    assert "0.9.0 (and its later 0.9.x patches)" in message


def test_parse_version() -> None:
    assert parse_version("0.9.0") == (0, 9, 0)
    assert parse_version("10.20.30") == (10, 20, 30)
    assert parse_version("0.9") is None
    assert parse_version(9) is None
