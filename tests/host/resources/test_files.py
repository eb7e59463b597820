"""resource* methods over WebSocket: sandbox escapes refused with the expected roots named, and
list / resolve / write / mkdir / delete behaving per PROTOCOL.md §5."""

from __future__ import annotations

import asyncio
import base64
import os
import stat
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pytest

from client import AhpClient
from client.errors import AhpError as RpcRequestError
from host.resources import files as resources
from host.service import AgentHost
from host.transport.server import start_host
from tests.conftest import TOKEN, host_config


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


@pytest.fixture
async def served(tmp_path: Path, frame_checker):
    """A host on port 0 whose default directory is ``<tmp>/ws``, and a client."""
    root = tmp_path / "ws"
    root.mkdir()
    host = AgentHost(host_config(tmp_path / "data", default_directory=str(root), default_agent="offline"))
    running = await start_host(host, token=TOKEN)
    client = await AhpClient.connect(running.url.split("?")[0], token=TOKEN)
    await client.initialize(subscriptions=["ahp-root://"])
    yield running, client, root
    await client.close()
    await running.stop()


def _health(running) -> int:
    """GET /health from another thread (as another program would); the timeout is met only by a host
    whose event loop is blocked."""
    with urllib.request.urlopen(f"{running.http_url}/health", timeout=60) as response:
        return response.status


async def test_reading_a_named_pipe_is_refused_at_once_and_the_host_keeps_answering(served, make_fifo) -> None:
    running, client, root = served
    make_fifo(root / "pipe")  # nobody writes to it: a plain open would wait for ever
    started = time.monotonic()
    with pytest.raises(RpcRequestError) as raised:
        await client.request("resourceRead", {"channel": "ahp-root://", "uri": uri(root, "pipe")})
    elapsed = time.monotonic() - started
    assert await asyncio.to_thread(_health, running) == 200
    assert elapsed < 2
    assert raised.value.code == -32602
    assert raised.value.message == f"{uri(root, 'pipe')} is a named pipe (FIFO), not a regular file; resourceRead reads only regular files."


async def test_a_named_pipe_is_not_written_over_nor_copied(served, make_fifo) -> None:
    _, client, root = served
    fifo = make_fifo(root / "pipe")
    (root / "tree").mkdir()
    make_fifo(root / "tree" / "inner")
    started = time.monotonic()
    with pytest.raises(RpcRequestError) as written:
        await client.request("resourceWrite", {"channel": "ahp-root://", "uri": uri(root, "pipe"), "data": "x",
                                               "encoding": "utf-8", "mode": "append"})
    with pytest.raises(RpcRequestError) as copied:
        await client.request("resourceCopy", {"channel": "ahp-root://", "source": uri(root, "pipe"), "destination": uri(root, "copy")})
    with pytest.raises(RpcRequestError) as tree:
        await client.request("resourceCopy", {"channel": "ahp-root://", "source": uri(root, "tree"), "destination": uri(root, "tree2")})
    assert time.monotonic() - started < 2
    assert (written.value.code, copied.value.code, tree.value.code) == (-32602, -32602, -32602)
    assert "is a named pipe (FIFO), not a regular file; the host does not write over it" in written.value.message
    assert f"{uri(root, 'pipe')} is a named pipe (FIFO)" in copied.value.message
    assert f"{uri(root, 'tree')} holds inner, which is a named pipe (FIFO)" in tree.value.message
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and not (root / "copy").exists() and not (root / "tree2").exists()


async def test_slow_file_work_runs_off_the_event_loop_and_gives_up_after_the_timeout(
        served, monkeypatch: pytest.MonkeyPatch) -> None:
    running, client, root = served
    (root / "slow.txt").write_text("eventually")
    under_way = threading.Event()
    release = threading.Event()
    real_read = resources.read_regular

    def slow_file_system(path, limit=None):
        under_way.set()
        release.wait()  # a hung network mount, as far as the host can tell, until the test lets it go
        return real_read(path, limit)

    monkeypatch.setattr(resources, "read_regular", slow_file_system)
    running.host.resources.timeout = 1.5
    read = asyncio.ensure_future(client.request("resourceRead", {"channel": "ahp-root://", "uri": uri(root, "slow.txt")}))
    try:
        assert await asyncio.to_thread(under_way.wait, 60)
        # The read is stuck in its thread: the host answers /health meanwhile, and the client its timeout.
        assert await asyncio.to_thread(_health, running) == 200
        with pytest.raises(RpcRequestError) as raised:
            await read
    finally:
        release.set()
    assert raised.value.code == -32603
    assert raised.value.message == f"resourceRead of {uri(root, 'slow.txt')} did not finish within 1.5 s; the file system may be slow or hung."
