"""resourceCopy, resourceMove and resourceRequest over WebSocket: the same sandbox as the other
resource* methods, failIfExists, links copied as links, roots never moved or overwritten, and
the PermissionDenied data naming the refused access."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from client import AhpClient
from client.errors import AhpError
from tests.host.resources.test_files import ATTACKS, workspace  # noqa: F401  (fixture)

ROOT = "ahp-root://"


def uri(path: Path) -> str:
    return path.as_uri()


async def call(client: AhpClient, method: str, **params):
    return await client.request(method, {"channel": ROOT, **params})


async def test_copy_a_file_and_a_tree_then_read_them_back(workspace) -> None:
    client, root, _ = workspace
    (root / "tree" / "sub").mkdir(parents=True)
    (root / "tree" / "sub" / "x.txt").write_text("x")
    (root / "tree" / "rel").symlink_to("sub/x.txt")
    assert await call(client, "resourceCopy", source=uri(root / "a.txt"), destination=uri(root / "new" / "b.txt")) == {}
    read = await call(client, "resourceRead", uri=uri(root / "new" / "b.txt"))
    assert read["data"] == "alpha"
    assert (root / "a.txt").read_text() == "alpha"
    await call(client, "resourceCopy", source=uri(root / "tree"), destination=uri(root / "tree2"))
    listed = await call(client, "resourceList", uri=uri(root / "tree2"))
    assert listed["entries"] == [{"name": "rel", "type": "file"}, {"name": "sub", "type": "directory"}]
    assert os.readlink(root / "tree2" / "rel") == "sub/x.txt"  # a link stays a link


async def test_copy_overwrites_unless_fail_if_exists(workspace) -> None:
    client, root, _ = workspace
    (root / "b.txt").write_text("bravo")
    with pytest.raises(AhpError) as exists:
        await call(client, "resourceCopy", source=uri(root / "a.txt"), destination=uri(root / "b.txt"), failIfExists=True)
    assert exists.value.code == -32010
    assert "failIfExists" in exists.value.message
    assert (root / "b.txt").read_text() == "bravo"
    await call(client, "resourceCopy", source=uri(root / "a.txt"), destination=uri(root / "b.txt"))
    assert (root / "b.txt").read_text() == "alpha"


async def test_move_renames_and_a_missing_source_is_not_found(workspace) -> None:
    client, root, _ = workspace
    await call(client, "resourceMove", source=uri(root / "a.txt"), destination=uri(root / "dir" / "moved.txt"))
    assert not (root / "a.txt").exists()
    assert (root / "dir" / "moved.txt").read_text() == "alpha"
    with pytest.raises(AhpError) as missing:
        await call(client, "resourceMove", source=uri(root / "a.txt"), destination=uri(root / "c.txt"))
    assert missing.value.code == -32008
    (root / "c.txt").write_text("charlie")
    with pytest.raises(AhpError) as exists:
        await call(client, "resourceMove", source=uri(root / "dir" / "moved.txt"), destination=uri(root / "c.txt"), failIfExists=True)
    assert exists.value.code == -32010
    assert (root / "dir" / "moved.txt").exists()


async def test_moving_a_link_moves_the_link_not_its_target(workspace) -> None:
    client, root, outside = workspace
    await call(client, "resourceMove", source=uri(root / "file_link_out"), destination=uri(root / "renamed_link"))
    assert (root / "renamed_link").is_symlink()
    assert (outside / "secret.txt").read_text() == "top secret"
    await call(client, "resourceCopy", source=uri(root / "a.txt"), destination=uri(root / "renamed_link"))
    assert not (root / "renamed_link").is_symlink()  # the link was replaced, its target left alone
    assert (root / "renamed_link").read_text() == "alpha"
    assert (outside / "secret.txt").read_text() == "top secret"


async def test_a_directory_cannot_go_into_itself_and_roots_stay_put(workspace) -> None:
    client, root, _ = workspace
    (root / "d").mkdir()
    with pytest.raises(AhpError) as into_itself:
        await call(client, "resourceMove", source=uri(root / "d"), destination=uri(root / "d" / "inner"))
    assert into_itself.value.code == -32602
    with pytest.raises(AhpError) as root_moved:
        await call(client, "resourceMove", source=uri(root), destination=uri(root / "elsewhere"))
    assert root_moved.value.code == -32009
    with pytest.raises(AhpError) as root_overwritten:
        await call(client, "resourceCopy", source=uri(root / "a.txt"), destination=uri(root))
    assert root_overwritten.value.code == -32009
    assert root.is_dir() and (root / "a.txt").read_text() == "alpha"


@pytest.mark.parametrize("attack", ATTACKS)
async def test_copy_and_move_refuse_escapes_on_either_side(workspace, attack: str) -> None:
    from urllib.parse import quote

    client, root, outside = workspace
    escaping = "file://" + quote(str(root) + "/" + attack, safe="/%")
    inside = uri(root / "a.txt")
    for method in ("resourceCopy", "resourceMove"):
        for source, destination in ((escaping, uri(root / "stolen")), (inside, escaping)):
            if attack == "file_link_out":
                continue  # the link itself lies inside the root: it is moved or replaced, never followed (above)
            with pytest.raises(AhpError) as raised:
                await call(client, method, source=source, destination=destination)
            assert raised.value.code in (-32009, -32008), (method, attack, raised.value)
    assert (outside / "secret.txt").read_text() == "top secret"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (root / "a.txt").read_text() == "alpha"


async def test_resource_request_grants_inside_and_names_the_refusal_outside(workspace) -> None:
    client, root, outside = workspace
    assert await call(client, "resourceRequest", uri=uri(root / "a.txt")) == {}
    assert await call(client, "resourceRequest", uri=uri(root / "not-yet.txt"), write=True) == {}
    with pytest.raises(AhpError) as refused:
        await call(client, "resourceRequest", uri=uri(outside / "secret.txt"), write=True)
    assert refused.value.code == -32009
    assert str(root) in refused.value.message  # names the roots the host does serve
    assert refused.value.data == {"request": {"uri": uri(outside / "secret.txt"), "write": True}}
    with pytest.raises(AhpError) as default_read:
        await call(client, "resourceRequest", uri=uri(outside / "secret.txt"))
    assert default_read.value.data == {"request": {"uri": uri(outside / "secret.txt"), "read": True}}
    encoded = base64.b64encode(b"after request").decode()
    await call(client, "resourceWrite", uri=uri(root / "not-yet.txt"), data=encoded, encoding="base64")
    assert (root / "not-yet.txt").read_bytes() == b"after request"
