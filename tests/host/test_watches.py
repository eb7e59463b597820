"""createResourceWatch end to end: a real host, real WebSocket clients, real files changed outside
the host; two subscribers see the same batches; scope, patterns, sandbox and release rules."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from client import AhpClient
from client.errors import AhpError
from client.events import EventStream
from host.server import RunningHost
from tests.conftest import Connect

ROOT = "ahp-root://"
WAIT = 30.0  # generous: the machine is shared; waits end as soon as the change arrives


async def watch(client: AhpClient, uri: str, **params: Any) -> str:
    result = await client.request("createResourceWatch", {"channel": ROOT, "uri": uri, **params})
    return result["channel"]


async def changes_until(stream: EventStream, channel: str, wanted: set[tuple[str, str]]) -> list[dict[str, Any]]:
    """Collect ``resourceWatch/changed`` items on ``channel`` until every (uri, type) in ``wanted`` arrived."""
    seen: list[dict[str, Any]] = []
    while not wanted <= {(item["uri"], item["type"]) for item in seen}:
        event = await stream.next(timeout=WAIT)
        if event.channel == channel and event.action and event.action["type"] == "resourceWatch/changed":
            assert event.action["changes"]["items"], "an empty batch must never be sent"
            seen.extend(event.action["changes"]["items"])
    return seen


async def test_two_clients_see_a_file_changed_outside_the_host(connect: Connect, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("one")
    first, second = await connect(), await connect()
    channel = await watch(first, tmp_path.as_uri(), recursive=True)
    assert channel.startswith("ahp-resource-watch:/")
    for client in (first, second):
        snapshot = await client.subscribe(channel)
        assert snapshot == {"root": tmp_path.as_uri(), "recursive": True}
    streams = [first.events(), second.events()]

    (tmp_path / "src" / "a.py").write_text("two")  # an editor outside the host
    (tmp_path / "src" / "b.py").write_text("new")
    wanted = {((tmp_path / "src" / "a.py").as_uri(), "updated"), ((tmp_path / "src" / "b.py").as_uri(), "added")}
    for stream in streams:
        await changes_until(stream, channel, wanted)

    (tmp_path / "src" / "b.py").unlink()
    for stream in streams:
        await changes_until(stream, channel, {((tmp_path / "src" / "b.py").as_uri(), "deleted")})


async def test_a_non_recursive_watch_reports_direct_children_only(connect: Connect, tmp_path: Path) -> None:
    (tmp_path / "deep").mkdir()
    client = await connect()
    channel = await watch(client, tmp_path.as_uri())
    await client.subscribe(channel)
    stream = client.events()
    (tmp_path / "deep" / "hidden.txt").write_text("not reported")
    (tmp_path / "top.txt").write_text("reported")
    seen = await changes_until(stream, channel, {((tmp_path / "top.txt").as_uri(), "added")})
    assert all("hidden.txt" not in item["uri"] for item in seen)


async def test_excludes_and_includes_filter_with_gitignore_patterns(connect: Connect, tmp_path: Path) -> None:
    client = await connect()
    channel = await watch(client, tmp_path.as_uri(), recursive=True,
                          excludes={"items": ["*.log"]}, includes={"items": ["*.log", "*.md"]})
    snapshot = await client.subscribe(channel)
    assert snapshot["excludes"] == {"items": ["*.log"]}
    stream = client.events()
    (tmp_path / "noise.log").write_text("x")
    (tmp_path / "code.py").write_text("x")
    (tmp_path / "README.md").write_text("x")
    seen = await changes_until(stream, channel, {((tmp_path / "README.md").as_uri(), "added")})
    assert {Path(item["uri"]).name for item in seen} == {"README.md"}


async def test_a_watched_file_is_seen_through_an_atomic_replace(connect: Connect, tmp_path: Path) -> None:
    target = tmp_path / "config.json"
    target.write_text("{}")
    (tmp_path / "sibling.txt").write_text("x")
    client = await connect()
    channel = await watch(client, target.as_uri())
    await client.subscribe(channel)
    stream = client.events()
    (tmp_path / "sibling.txt").write_text("changed, not watched")
    temporary = tmp_path / ".config.json.tmp"
    temporary.write_text('{"a": 1}')
    os.replace(temporary, target)
    # An atomic replace is "added" (a new inode at the path) or "updated", depending on the OS.
    seen = []
    while not any(item["uri"] == target.as_uri() for item in seen):
        event = await stream.next(timeout=WAIT)
        if event.channel == channel and event.action:
            seen.extend(event.action["changes"]["items"])
    assert {item["uri"] for item in seen} == {target.as_uri()}


async def test_watches_are_confined_to_the_roots_and_need_an_existing_uri(connect: Connect, tmp_path: Path) -> None:
    client = await connect()
    with pytest.raises(AhpError) as outside:
        await watch(client, "file:///etc")
    assert outside.value.code == -32009
    assert "/etc" in outside.value.message
    with pytest.raises(AhpError) as missing:
        await watch(client, (tmp_path / "nope").as_uri())
    assert missing.value.code == -32008
    with pytest.raises(AhpError) as escape:
        await watch(client, tmp_path.as_uri() + "/../..")
    assert escape.value.code == -32009
    assert await client.ping() is None  # the connection stays usable


async def test_the_last_unsubscribe_releases_the_watch(connect: Connect, running_host: RunningHost, tmp_path: Path) -> None:
    first, second = await connect(), await connect()
    channel = await watch(first, tmp_path.as_uri())
    await first.subscribe(channel)
    await second.subscribe(channel)
    await first.unsubscribe(channel)
    await first.ping()  # unsubscribe is a notification; a request after it proves it was handled
    assert channel in running_host.host.watches
    await second.close()
    await _until(lambda: channel not in running_host.host.watches)
    with pytest.raises(AhpError) as gone:
        await first.subscribe(channel)
    assert gone.value.code == -32008


async def test_a_watch_nobody_subscribed_to_goes_with_its_creator(connect: Connect, running_host: RunningHost, tmp_path: Path) -> None:
    creator = await connect()
    channel = await watch(creator, tmp_path.as_uri())
    assert channel in running_host.host.watches
    await creator.close()
    await _until(lambda: channel not in running_host.host.watches)
    assert channel not in running_host.host.store


async def _until(condition, timeout: float = WAIT) -> None:
    import asyncio

    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), timeout)
