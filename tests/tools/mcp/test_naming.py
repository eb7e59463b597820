"""Namespaced, provider-safe, bounded and collision-free MCP tool names."""

from __future__ import annotations

import re

from tools.mcp import MAX_TOOL_NAME, allocate_names, namespaced_name

_PROVIDER_SAFE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def test_plain_names_are_prefixed_with_server() -> None:
    assert namespaced_name("github", "create_issue") == "mcp__github__create_issue"


def test_characters_providers_reject_become_underscores() -> None:
    assert namespaced_name("my.server", "files/read v2") == "mcp__my_server__files_read_v2"
    assert namespaced_name("", "") == "mcp__" + "_" + "__" + "_"


def test_long_names_are_truncated_stably_with_a_hash_suffix() -> None:
    long_a = namespaced_name("server", "x" * 100 + "a")
    long_b = namespaced_name("server", "x" * 100 + "b")
    assert len(long_a) == MAX_TOOL_NAME and _PROVIDER_SAFE.match(long_a)
    assert long_a != long_b and long_a[:57] == long_b[:57]
    assert namespaced_name("server", "x" * 100 + "a") == long_a


def test_collisions_are_resolved_the_same_way_whatever_the_order() -> None:
    pairs = [("my.server", "t"), ("my_server", "t"), ("other", "t")]
    first = allocate_names(pairs)
    second = allocate_names(list(reversed(pairs)))
    assert first == second
    assert first[("my.server", "t")] == "mcp__my_server__t"  # sorts first, keeps the plain name
    assert first[("my_server", "t")].startswith("mcp__my_server__t_") and len(set(first.values())) == 3
    assert all(_PROVIDER_SAFE.match(name) for name in first.values())


def test_names_already_taken_by_other_tools_are_avoided() -> None:
    names = allocate_names([("a", "b")], taken={"mcp__a__b"})
    assert names[("a", "b")] != "mcp__a__b" and names[("a", "b")].startswith("mcp__a__b_")
