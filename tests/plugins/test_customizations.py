"""The sample fixtures project onto exactly the AHP trees in samples/expected/*.json.

Per samples/README.md: ids are left out of the expected files, uris there are relative to the
fixture root, children order is not significant, and a field shown as false may be absent.
"""

from __future__ import annotations

import base64
import functools
import itertools
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from plugins import (
    WORKSPACE_DIRECTORIES,
    directory_customization,
    load_directory,
    load_plugin,
    loading_plugin_customization,
    plugin_customization,
    uri_id,
)

from .conftest import SAMPLES

REPO_SCHEMA = Path(__file__).parents[2] / "ahp" / "dialects" / "v0_2" / "wire" / "spec" / "ahp-0.2.0.schema.json"


def _expected(name: str) -> dict[str, Any]:
    return json.loads((SAMPLES / "expected" / f"{name}.json").read_text())


def _public(item: dict[str, Any]) -> dict[str, Any]:
    """Expected-file entries carry notes in keys starting with '_'."""
    return {k: v for k, v in item.items() if not k.startswith("_")}


def _resolve(root: Path, relative: str) -> str:
    return (root if relative == "." else root / relative).resolve().as_uri()


def _normalise_child(child: dict[str, Any], root: Path | None = None) -> dict[str, Any]:
    """Drop ids and false flags (false may be absent); resolve relative uris when root is given."""
    out = {k: v for k, v in _public(child).items() if k != "id" and v is not False}
    if root is not None:
        out["uri"] = _resolve(root, out["uri"])
    return out


def _key(child: dict[str, Any]) -> tuple[str, str, str]:
    return child["type"], child["uri"], child["name"]


def _assert_children(actual: list[dict[str, Any]], expected: list[dict[str, Any]], root: Path) -> None:
    got = sorted((_normalise_child(c) for c in actual), key=_key)
    want = sorted((_normalise_child(c, root) for c in expected), key=_key)
    assert got == want


@functools.cache
def _customization_validator() -> Any:
    schema = json.loads(REPO_SCHEMA.read_text())
    wrapper = {"$ref": "#/$defs/Customization", "$defs": schema["$defs"]}
    return jsonschema.validators.validator_for(schema)(wrapper)


def _assert_valid_customization(wire: dict[str, Any]) -> None:
    if not REPO_SCHEMA.is_file():
        pytest.skip("the vendored AHP schema (ahp/dialects/v0_2/wire/spec) is not present")
    _customization_validator().validate(wire)


@pytest.mark.parametrize("fixture", ["sample-toolkit", "sample-degraded", "sample-broken"])
def test_plugin_fixture_loads_to_its_expected_tree(fixture: str) -> None:
    expected = _expected(fixture)["container"]
    root = SAMPLES / fixture
    plugin = load_plugin(root)
    wire = plugin_customization(plugin)

    assert wire["type"] == expected["type"]
    assert wire["uri"] == _resolve(root, expected["uri"])
    assert wire["name"] == expected["name"]
    assert wire["enabled"] is expected["enabled"]
    assert isinstance(wire["id"], str) and wire["id"]

    parse_time = expected["loadSequence"][1]
    assert wire["load"]["kind"] == parse_time["kind"]
    for fragment in parse_time.get("messageMustMention", []):
        assert fragment in wire["load"]["message"]

    if isinstance(expected["children"], str):  # "absent (the host did not parse the contents)..."
        assert "children" not in wire
    else:
        _assert_children(wire["children"], expected["children"], root)
    _assert_valid_customization(wire)


def test_loading_placeholder_comes_first_and_has_no_children() -> None:
    root = SAMPLES / "sample-toolkit"
    wire = loading_plugin_customization(root, name="sample-toolkit", id="c1")
    assert wire == {"type": "plugin", "id": "c1", "uri": root.absolute().as_uri(), "name": "sample-toolkit",
                    "enabled": True, "load": {"kind": "loading"}}


def test_toolkit_icon_is_the_logo_as_an_svg_data_uri() -> None:
    wire = plugin_customization(load_plugin(SAMPLES / "sample-toolkit"))
    (icon,) = wire["icons"]
    assert icon["contentType"] == "image/svg+xml"
    prefix = "data:image/svg+xml;base64,"
    assert icon["src"].startswith(prefix)
    assert base64.b64decode(icon["src"][len(prefix):]) == (SAMPLES / "sample-toolkit/assets/logo.svg").read_bytes()


def test_toolkit_leaves_out_lsp_skill_resources_and_unknown_hook_events() -> None:
    wire = plugin_customization(load_plugin(SAMPLES / "sample-toolkit"))
    uris = [c["uri"] for c in wire["children"]]
    assert not any(u.endswith(".lsp.json") or u.endswith("references/style.md") for u in uris)
    assert all(c["name"] != "SomeFutureEvent" for c in wire["children"])
    assert len(wire["children"]) == 12


def test_degraded_plugin_message_also_names_a_server_that_failed_at_run_time() -> None:
    expected = _expected("sample-degraded")["container"]["loadSequence"][2]
    plugin = load_plugin(SAMPLES / "sample-degraded")
    runtime = plugin.state.with_problems(["MCP server 'ghost': command 'sample-degraded-missing-binary' not found"])
    wire = plugin_customization(plugin, state=runtime)
    assert wire["load"]["kind"] == expected["kind"]
    for fragment in expected["messageMustMention"]:
        assert fragment in wire["load"]["message"]
    assert [c["name"] for c in wire["children"] if c["type"] == "mcpServer"] == ["ghost"]


def test_workspace_directories_load_to_their_expected_containers() -> None:
    expected = _expected("workspace-dirs")["containers"]
    workspace = SAMPLES / "workspace-dirs"
    specs = {spec.relative: spec for spec in WORKSPACE_DIRECTORIES}
    for want in expected:
        wire = directory_customization(load_directory(workspace, specs[want["uri"]]))
        for key in ("type", "contents", "writable", "enabled", "load"):
            assert wire[key] == want[key], key
        assert wire["uri"] == _resolve(workspace, want["uri"])
        assert wire["name"]
        _assert_children(wire["children"], want["children"], workspace)
        _assert_valid_customization(wire)


def test_injected_minter_makes_ids_deterministic_and_unique() -> None:
    counter = itertools.count(1)
    plugin = load_plugin(SAMPLES / "sample-toolkit")
    first = plugin_customization(plugin, mint_id=lambda key: f"id-{next(counter)}")
    assert first["id"] == "id-13"  # twelve children are minted before the container
    assert sorted(c["id"] for c in first["children"]) == sorted(f"id-{n}" for n in range(1, 13))
    stable = plugin_customization(plugin, mint_id=uri_id)
    ids = [c["id"] for c in stable["children"]]
    assert len(set(ids)) == len(ids)
    assert plugin_customization(plugin, mint_id=uri_id) == stable


def test_container_id_can_be_kept_across_republication() -> None:
    wire = plugin_customization(load_plugin(SAMPLES / "sample-toolkit"), id="plugin-1", enabled=False,
                                client_id="client-a")
    assert (wire["id"], wire["enabled"], wire["clientId"]) == ("plugin-1", False, "client-a")


def test_client_plugin_uris_map_back_to_the_published_uri() -> None:
    wire = plugin_customization(load_plugin(SAMPLES / "sample-toolkit"), uri="virtual://client/toolkit")
    assert wire["uri"] == "virtual://client/toolkit"
    assert "virtual://client/toolkit/skills/db-reset/SKILL.md" in [c["uri"] for c in wire["children"]]


def test_what_was_read_leniently_or_ignored_travels_as_notes_and_a_long_list_says_how_many_more(tmp_path: Path) -> None:
    from plugins import NOTES_LIMIT

    root = tmp_path / "chatty"
    (root / "commands").mkdir(parents=True)
    for i in range(NOTES_LIMIT + 3):
        (root / "commands" / f"c{i:02d}.md").write_text(f"---\ndescription: C\nargument-hint: [x{i}]\n---\nBody.\n")
    wire = plugin_customization(load_plugin(root))
    assert wire["load"] == {"kind": "loaded"}
    notes = wire["_meta"]["notes"]
    assert notes[0] == "plugin chatty ==> commands/c00.md ==> frontmatter ==> argument-hint: YAML read this as a list; kept as the text '[x0]'"
    assert len(notes) == NOTES_LIMIT + 1 and notes[-1] == "... and 3 more notes"
    _assert_valid_customization(wire)
