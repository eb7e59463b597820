"""createResourceWatch end to end: a real host, real WebSocket clients, real files changed outside
the host; two subscribers see the same batches; scope, patterns, sandbox and release rules."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from client import AhpClient
from client.errors import AhpError
from client.events import EventStream
from host.transport.server import RunningHost
from tests.conftest import Connect
from tests.host.state.test_durability import host_process

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


async def test_a_recursive_watch_never_reports_a_file_outside_its_root_through_a_symlink(connect: Connect, tmp_path: Path) -> None:
    outside = Path(tempfile.mkdtemp(prefix="not-a-root-"))
    try:
        root = tmp_path / "root"
        (root / "src").mkdir(parents=True)
        (root / "src" / "elsewhere").symlink_to(outside, target_is_directory=True)
        client = await connect()
        channel = await watch(client, root.as_uri(), recursive=True)
        await client.subscribe(channel)
        stream = client.events()
        (outside / "secret.txt").write_text("changed outside the roots")
        (root / "src" / "inside.txt").write_text("changed inside")
        seen = await changes_until(stream, channel, {((root / "src" / "inside.txt").as_uri(), "added")})
        assert all("secret" not in item["uri"] for item in seen), seen
        # A change inside the root is still reported, and so is the link's own name.
        (root / "src" / "elsewhere").unlink()
        await changes_until(stream, channel, {((root / "src" / "elsewhere").as_uri(), "deleted")})
    finally:
        shutil.rmtree(outside)


async def test_watches_past_the_hosts_limit_are_refused_saying_what_to_do(connect: Connect, running_host: RunningHost, tmp_path: Path) -> None:
    running_host.host.watches.limit = 2
    client = await connect()
    folders = [tmp_path / f"f{n}" for n in range(5)]
    for folder in folders:
        folder.mkdir()
    # Five at once: the ones being set up count too, so exactly two are made.
    outcomes = await asyncio.gather(*(watch(client, folder.as_uri(), recursive=True) for folder in folders), return_exceptions=True)
    made = [outcome for outcome in outcomes if isinstance(outcome, str)]
    refused = [outcome for outcome in outcomes if isinstance(outcome, AhpError)]
    assert len(made) == 2 and len(refused) == 3, outcomes
    for error in refused:
        assert error.code == -32009
        assert error.message == ("This host already runs 2 resource watches, its limit ([server] max_resource_watches); "
                                 "unsubscribe from watches you no longer need, then try again.")
    # Releasing one makes room for another.
    await client.subscribe(made[0])
    await client.unsubscribe(made[0])
    await client.ping()
    await _until(lambda: made[0] not in running_host.host.watches)
    assert (await watch(client, folders[4].as_uri())).startswith("ahp-resource-watch:/")


def _lowered(**limits: int) -> tuple[str, ...]:
    """A command prefix that runs a program in a user namespace with lower inotify limits."""
    settings = "; ".join(f"echo {value} > /proc/sys/user/{name}" for name, value in limits.items())
    prefix = ("unshare", "--user", "--map-root-user", "sh", "-c", f'{settings} && exec "$@"', "sh")
    if shutil.which("unshare") is None or subprocess.run([*prefix, "true"], capture_output=True).returncode != 0:
        pytest.skip("cannot lower inotify limits in a user namespace here")
    return prefix


async def test_when_the_os_runs_out_of_file_watchers_first_the_error_says_so_plainly(tmp_path: Path) -> None:
    prefix = _lowered(max_inotify_instances=3, max_inotify_watches=40)
    big = tmp_path / "big"
    for n in range(60):
        (big / f"d{n}").mkdir(parents=True)
    config = tmp_path / "host.toml"
    config.write_text(f'[sessions]\ndefault_directory = "{tmp_path}"\n')
    host = host_process(tmp_path / "data", config, prefix=prefix)
    try:
        await host.start()
        client = await AhpClient.connect(host.url)
        await client.initialize(subscriptions=[ROOT])
        # A tree with more folders than the user may watch: refused, not silently half-watched.
        with pytest.raises(AhpError) as too_deep:
            await watch(client, big.as_uri(), recursive=True)
        assert too_deep.value.code == -32009
        assert "more folders than the operating system lets this user watch" in too_deep.value.message
        assert "max_inotify_watches = 40" in too_deep.value.message and "smaller folder" in too_deep.value.message
        # Watchers: the OS allows three per user here (the host may hold one itself); the next is
        # refused long before the host's own limit of 256.
        made = 0
        with pytest.raises(AhpError) as used_up:
            for n in range(4):
                (tmp_path / f"w{n}").mkdir()
                await watch(client, (tmp_path / f"w{n}").as_uri())
                made += 1
        assert made >= 2
        assert used_up.value.code == -32009
        message = used_up.value.message
        assert "used up the file watchers the operating system allows one user" in message
        assert "max_inotify_instances = 3" in message and f"this host holds {made} of them" in message
        assert "Unsubscribe from watches you no longer need" in message
        for library_word in ("watchfiles", "Rust", "os error", "recommended watcher", "Error"):
            assert library_word not in message and library_word not in too_deep.value.message
        await client.close()
    finally:
        host.stop()
