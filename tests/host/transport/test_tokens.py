"""host.transport.tokens: the named tokens of a data directory, as a host and the token command
see them: hashed at rest in a private file, matched by secret, revoked by name."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from host.transport.tokens import TOKENS_FILE, Grant, TokenError, TokenFile


def test_a_secret_is_never_stored_only_its_hash_in_a_file_only_its_owner_reads(tmp_path: Path) -> None:
    tokens = TokenFile(tmp_path / "data")
    secret = tokens.create("alice", "read")
    path = tmp_path / "data" / TOKENS_FILE
    text = path.read_text()
    assert secret not in text and secret[4:] not in text and secret[4:20] not in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "data").stat().st_mode) == 0o700
    [entry] = json.loads(text)["tokens"]
    assert (entry["name"], entry["level"], len(entry["sha256"])) == ("alice", "read", 64)


def test_a_host_matches_each_secret_to_its_token_and_level(tmp_path: Path) -> None:
    writer, host = TokenFile(tmp_path), TokenFile(tmp_path)  # the token command, the running host
    read = writer.create("alice", "read")
    full = writer.create("bob", "full")
    assert read != full and read.startswith("aht_") and len(read) > 40
    assert host.match(read) == Grant("alice", "read", host.match(read).digest)  # type: ignore[union-attr]
    assert host.match(full).level == "full"  # type: ignore[union-attr]
    for wrong in (None, "", read + "x", read[:-1], "aht_" + "A" * 43, "test-token"):
        assert host.match(wrong) is None


def test_revoking_stops_the_secret_matching_and_ends_what_it_granted_also_when_the_name_comes_back(tmp_path: Path) -> None:
    writer, host = TokenFile(tmp_path), TokenFile(tmp_path)
    secret = writer.create("alice", "full")
    grant = host.match(secret)
    assert grant is not None and host.still_valid(grant)
    writer.revoke("alice")
    assert host.match(secret) is None and not host.still_valid(grant)
    again = writer.create("alice", "full")  # the same name and level, another secret
    assert not host.still_valid(grant) and host.match(again) is not None and host.match(secret) is None
    assert host.still_valid(Grant(None, "full"))  # the host's own token is not in the file


@pytest.mark.parametrize("name, level, message", [
    ("bad name", "read", "not valid"),
    ("-x", "read", "not valid"),
    ("x" * 65, "read", "not valid"),
    ("ok", "admin", "not one of read, full"),
    ("ok", "scoped", "not one of read, full"),
])
def test_bad_requests_are_refused_saying_what_to_do(tmp_path: Path, name: str, level: str, message: str) -> None:
    with pytest.raises(TokenError, match=message):
        TokenFile(tmp_path).create(name, level)
    assert not (tmp_path / TOKENS_FILE).exists()


def test_a_name_is_used_once_and_revoking_an_unknown_name_lists_the_known_ones(tmp_path: Path) -> None:
    tokens = TokenFile(tmp_path)
    tokens.create("alice", "read")
    with pytest.raises(TokenError, match="exists already: revoke it first"):
        tokens.create("alice", "full")
    with pytest.raises(TokenError, match=r"no token named 'bob' \(tokens: alice\)"):
        tokens.revoke("bob")


def test_a_broken_file_accepts_no_named_token_and_the_command_says_how_to_fix_it(tmp_path: Path) -> None:
    tokens = TokenFile(tmp_path)
    secret = tokens.create("alice", "full")
    (tmp_path / TOKENS_FILE).write_text("{not json")
    assert TokenFile(tmp_path).match(secret) is None
    with pytest.raises(TokenError, match="not a token file this host wrote"):
        tokens.entries()
