"""resource* methods over WebSocket: sandbox escapes refused with the expected roots named, and
list / resolve / write / mkdir / delete behaving per PROTOCOL.md §5."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from urllib.parse import quote

import pytest

from client import AhpClient
from client.errors import AhpError as RpcRequestError
from tests.conftest import TOKEN, host_config
from host.server import start_host
from host.service import AgentHost


@pytest.fixture
async def workspace(tmp_path: Path, frame_checker):
    root = tmp_path / "ws"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    (root / "link_out").symlink_to(outside)
    (root / "file_link_out").symlink_to(outside / "secret.txt")
    (root / "a.txt").write_text("alpha")
    host = AgentHost(host_config(tmp_path / "data", default_directory=str(root), default_agent="offline"))
    running = await start_host(host, token=TOKEN)
    client = await AhpClient.connect(running.url.split("?")[0], token=TOKEN)
    await client.initialize(subscriptions=["ahp-root://"])
    yield client, root, outside
    await client.close()
    await running.stop()


def uri(root: Path, raw: str) -> str:
    return "file://" + str(root) + "/" + raw


ATTACKS = [
    "../outside/secret.txt",
    "../../etc/passwd",
    "link_out/secret.txt",
    "file_link_out",
    "./../outside",
    "a/../../outside/secret.txt",
    "%2e%2e/outside/secret.txt",
    "..%2foutside%2fsecret.txt",
    "%2E%2E%2Foutside",
    "a.txt%00.png",
    "sub/../../outside/secret.txt",
    "\uff0e\uff0e/outside",  # fullwidth dots
    "..\u2215outside",  # division slash
    "..\\outside",
    "sub/\u200b../../outside",
    "x" * 300,
    "../" * 40 + "etc/passwd",
    "link_out/../link_out/secret.txt",
    "\x01../outside",
]


@pytest.mark.parametrize("attack", ATTACKS)
async def test_escapes_are_refused_for_every_method(workspace, attack: str) -> None:
    client, root, outside = workspace
    target = "file://" + quote(str(root) + "/" + attack, safe="/%")
    methods = [("resourceRead", {}), ("resourceList", {}), ("resourceResolve", {}), ("resourceMkdir", {}),
               ("resourceWrite", {"data": "pwned", "encoding": "utf-8"})]
    if attack != "file_link_out":  # deleting a link inside the root removes the link only (checked below)
        methods.append(("resourceDelete", {"recursive": True}))
    for method, extra in methods:
        with pytest.raises(RpcRequestError) as raised:
            await client.request(method, {"channel": "ahp-root://", "uri": target, **extra})
        assert raised.value.code in (-32009, -32008), (method, attack, raised.value)
    assert (outside / "secret.txt").read_text() == "top secret"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]


@pytest.mark.parametrize("target", ["file:///etc/passwd", "file://evil.example/etc/passwd", "file:///root/.ssh/id_rsa", "~/x"])
async def test_absolute_paths_and_foreign_uris_are_refused_and_the_roots_are_named(workspace, target: str) -> None:
    client, root, _ = workspace
    with pytest.raises(RpcRequestError) as raised:
        await client.request("resourceWrite", {"channel": "ahp-root://", "uri": target, "data": "x", "encoding": "utf-8"})
    assert raised.value.code in (-32009, -32008)
    if raised.value.code == -32009:
        assert str(root) in raised.value.message


async def test_write_resolve_list_mkdir_delete_inside_the_working_directory(workspace) -> None:
    client, root, _ = workspace
    call = client.request
    await call("resourceMkdir", {"channel": "ahp-root://", "uri": uri(root, "src/pkg")})
    await call("resourceWrite", {"channel": "ahp-root://", "uri": uri(root, "src/pkg/m.py"), "data": "print(1)\n", "encoding": "utf-8"})
    await call("resourceWrite", {"channel": "ahp-root://", "uri": uri(root, "src/pkg/m.py"), "data": "# end\n", "encoding": "utf-8", "mode": "append"})
    await call("resourceWrite", {"channel": "ahp-root://", "uri": uri(root, "src/pkg/m.py"), "data": "#!\n", "encoding": "utf-8", "mode": "insert"})
    assert (root / "src/pkg/m.py").read_text() == "#!\nprint(1)\n# end\n"
    await call("resourceWrite", {"channel": "ahp-root://", "uri": uri(root, "bin.dat"), "data": base64.b64encode(b"\x00\xff").decode(), "encoding": "base64"})
    assert (root / "bin.dat").read_bytes() == b"\x00\xff"
    info = await call("resourceResolve", {"channel": "ahp-root://", "uri": uri(root, "src/pkg/m.py")})
    assert (info["type"], info["size"]) == ("file", len("#!\nprint(1)\n# end\n"))
    listing = await call("resourceList", {"channel": "ahp-root://", "uri": uri(root, "src")})
    assert listing == {"entries": [{"name": "pkg", "type": "directory"}]}
    with pytest.raises(RpcRequestError) as exists:
        await call("resourceWrite", {"channel": "ahp-root://", "uri": uri(root, "a.txt"), "data": "x", "encoding": "utf-8", "createOnly": True})
    assert exists.value.code == -32010
    with pytest.raises(RpcRequestError) as conflict:
        await call("resourceWrite", {"channel": "ahp-root://", "uri": uri(root, "src/pkg/m.py"), "data": "x", "encoding": "utf-8", "ifMatch": "stale"})
    assert conflict.value.code == -32011
    await call("resourceWrite", {"channel": "ahp-root://", "uri": uri(root, "src/pkg/m.py"), "data": "new", "encoding": "utf-8", "ifMatch": info["etag"]})
    with pytest.raises(RpcRequestError) as not_empty:
        await call("resourceDelete", {"channel": "ahp-root://", "uri": uri(root, "src")})
    assert not_empty.value.code == -32011
    await call("resourceDelete", {"channel": "ahp-root://", "uri": uri(root, "src"), "recursive": True})
    assert not (root / "src").exists()
    with pytest.raises(RpcRequestError) as missing:
        await call("resourceResolve", {"channel": "ahp-root://", "uri": uri(root, "nope")})
    assert missing.value.code == -32008
    link = await call("resourceResolve", {"channel": "ahp-root://", "uri": uri(root, "link_out"), "followSymlinks": False})
    assert link["type"] == "symlink"
    await call("resourceDelete", {"channel": "ahp-root://", "uri": uri(root, "link_out")})  # removes the link, not its target
    assert not os.path.lexists(root / "link_out")
    with pytest.raises(RpcRequestError) as root_delete:
        await call("resourceDelete", {"channel": "ahp-root://", "uri": root.as_uri(), "recursive": True})
    assert root_delete.value.code == -32009 and root.exists()
