"""The workspace trust rule (``ahp.workspace_trust``): which source trusts a folder, and how a
client's forwarded workspace trust (VS Code's ``workspaceTrust``) reads."""

from __future__ import annotations

from typing import Any

import pytest

from ahp.workspace_trust import (
    BY_CLIENT,
    BY_CLIENT_OFF,
    BY_CONFIG,
    BY_LIST,
    FOLLOW_ALL,
    FOLLOW_FOLDERS,
    FOLLOW_NONE,
    FORWARDED_KEY,
    ForwardedTrust,
    forwarded_trust,
    forwarded_value_problem,
    trust_request,
    trust_source,
    uri_folder,
)


def config(value: Any) -> dict[str, Any]:
    return {"schema": {}, "values": {FORWARDED_KEY: value}}


@pytest.mark.parametrize(("uri", "folder"), [
    ("file:///home/me/project", "/home/me/project"),
    ("file:///home/me/my%20project/", "/home/me/my project"),
    ("file://localhost/srv/x", "/srv/x"),
    ("file:///a/b/../c", None),  # refused, not read as /a/c: see the next test
    ("vscode-remote://ssh-remote+box/home/me", None),
    ("file://otherhost/share", None),
    ("file:relative/path", None),
    ("file:///x?query", None),
    ("not a uri", None),
])
def test_a_file_uri_names_its_folder_and_anything_else_names_none(uri: str, folder: str | None) -> None:
    assert uri_folder(uri) == folder


@pytest.mark.parametrize("uri", ["file:///tmp/../", "file:///tmp/..", "file:///home/me/./p", "file:///tmp/%2E%2E/",
                                 "file:///tmp/..%2Fetc", "file://localhost/srv/../"])
def test_a_uri_with_dot_segments_names_no_folder_and_the_value_is_refused_saying_why(uri: str) -> None:
    assert uri_folder(uri) is None
    problem = forwarded_value_problem({"enabled": True, "trustedUris": ["file:///home/me/ok", uri]})
    assert problem is not None and "without '.' or '..'" in problem and uri in problem
    # Were it kept, nothing would be trusted through it: not "/", not every folder.
    assert trust_source("/home/me/elsewhere", forwarded=ForwardedTrust(True, ())) is None


def test_vscodes_forwarded_value_reads_as_its_folders() -> None:
    value = {"enabled": True, "trustedUris": ["file:///home/me/a", "file:///home/me/b%20c"]}
    assert forwarded_trust(config(value)) == ForwardedTrust(True, ("/home/me/a", "/home/me/b c"))
    assert forwarded_trust(config({"enabled": False, "trustedUris": []})) == ForwardedTrust(False, ())


@pytest.mark.parametrize("value", [None, "yes", {"enabled": "yes", "trustedUris": []}, {"enabled": True},
                                   {"enabled": True, "trustedUris": ["https://example.com/x"]}])
def test_no_value_or_a_malformed_one_forwards_nothing(value: Any) -> None:
    assert forwarded_trust(config(value)) is None
    assert forwarded_trust({"values": {}}) is None and forwarded_trust(None) is None


@pytest.mark.parametrize(("value", "words"), [
    ({"trustedUris": []}, "enabled"),
    ({"enabled": True, "trustedUris": "file:///x"}, "trustedUris"),
    ({"enabled": True, "trustedUris": ["file:///ok", "vscode-remote://box/x"]}, "file: URIs"),
    ({"enabled": True, "trustedUris": [3]}, "file: URIs"),
    ({"enabled": True, "trustedUris": ["file:///x"] * 1001}, "at most 1000"),
])
def test_a_malformed_forwarded_value_says_what_is_wrong(value: Any, words: str) -> None:
    problem = forwarded_value_problem(value)
    assert problem is not None and words in problem


def test_the_host_sources_come_first_and_a_forwarded_list_only_adds() -> None:
    vscode = ForwardedTrust(True, ("/work/vscode",))
    assert trust_source("/etc/x", configured=["/etc"], listed=["/etc"], forwarded=vscode) == BY_CONFIG
    assert trust_source("/home/me/p/sub", listed=["/home/me/p"], forwarded=vscode) == BY_LIST
    # What the host's list trusts stays trusted whatever a client forwards (even an empty list).
    assert trust_source("/home/me/p", listed=["/home/me/p"], forwarded=ForwardedTrust(True, ())) == BY_LIST
    assert trust_source("/work/vscode/inner", forwarded=vscode) == BY_CLIENT
    assert trust_source("/work/vscode", forwarded=vscode) == BY_CLIENT
    assert trust_source("/work/vscode-other", forwarded=vscode) is None  # a sibling with the same prefix
    assert trust_source("/work", forwarded=vscode) is None  # the folder above
    assert trust_source("/work/vscode") is None  # nothing forwarded: the client vouches for nothing


def test_a_switched_off_client_trust_trusts_every_folder_unless_the_host_follows_only_folders() -> None:
    off = ForwardedTrust(False, ("/work/vscode",))
    assert trust_source("/anywhere", forwarded=off) == BY_CLIENT_OFF
    assert trust_source("/anywhere", forwarded=off, follow=FOLLOW_FOLDERS) is None
    assert trust_source("/work/vscode/x", forwarded=off, follow=FOLLOW_FOLDERS) == BY_CLIENT
    assert trust_source("/work/vscode/x", listed=["/work"], forwarded=off, follow=FOLLOW_ALL) == BY_LIST


def test_ignoring_client_trust_leaves_only_the_hosts_own_sources() -> None:
    for forwarded in (ForwardedTrust(True, ("/p",)), ForwardedTrust(False, ())):
        assert trust_source("/p", forwarded=forwarded, follow=FOLLOW_NONE) is None
        assert trust_source("/p", listed=["/p"], forwarded=forwarded, follow=FOLLOW_NONE) == BY_LIST


def test_the_question_ends_with_its_note() -> None:
    question = trust_request("workspace-trust:1", "/p", ["hook x"], note="Trust it in VS Code.")
    assert question["message"].endswith("\nTrust it in VS Code.")
    assert "None" not in trust_request("workspace-trust:1", "/p", ["hook x"])["message"]
