"""A session works in the directory its client asks for, and a bad one is refused clearly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from client import AhpError
from host.resources.workdirs import (
    WorkingDirectoryError,
    allowed_directories,
    check_working_directory,
    directory_of,
    session_directory,
)
from tests.host.transport.test_connection import run_turn


def test_an_existing_directory_inside_an_allowed_root_is_accepted_as_its_real_path(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    link = tmp_path / "link"
    link.symlink_to(project)
    assert check_working_directory(link.as_uri(), [tmp_path.resolve()]) == project.resolve().as_uri()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda root: (root / "missing").as_uri(), "does not exist"),
        (lambda root: (root / "file.txt").as_uri(), "is not a directory"),
        (lambda root: "https://example.com/x", "local file:// URI"),
        (lambda root: "file:///tmp/a%00b", "absolute path"),
        (lambda root: "", "must be a file:// URI"),
        (lambda root: 42, "must be a file:// URI"),
    ],
)
def test_a_bad_directory_is_refused_with_a_sentence_saying_why(tmp_path: Path, make, message: str) -> None:
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(WorkingDirectoryError, match=message):
        check_working_directory(make(tmp_path), [tmp_path.resolve()])


def test_a_directory_outside_the_allowed_ones_names_the_config_key(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with pytest.raises(WorkingDirectoryError, match="allowed_directories"):
        check_working_directory(elsewhere.as_uri(), [allowed.resolve()])
    # A symlink inside the allowed root that leads out of it is judged by where it leads.
    (allowed / "escape").symlink_to(elsewhere)
    with pytest.raises(WorkingDirectoryError, match="outside"):
        check_working_directory((allowed / "escape").as_uri(), [allowed.resolve()])


def test_the_default_allowed_directories_are_home_the_default_directory_and_temp(tmp_path: Path) -> None:
    roots = allowed_directories(None, tmp_path)
    assert Path(os.path.realpath(os.path.expanduser("~"))) in roots
    assert tmp_path.resolve() in roots
    assert allowed_directories(["~/x"], tmp_path) == [Path(os.path.realpath(os.path.expanduser("~/x")))]


async def test_create_session_keeps_the_requested_directory_and_lists_it(connect, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    client = await connect()
    session = await client.create_session(provider="offline", working_directory=project.as_uri())
    listed = await client.request("listSessions", {"channel": "ahp-root://"})
    summary = next(item for item in listed["items"] if item["resource"] == session)
    assert summary["workingDirectory"] == project.resolve().as_uri()


async def test_create_session_in_a_missing_directory_is_refused_and_the_connection_stays_usable(connect, tmp_path: Path) -> None:
    client = await connect()
    with pytest.raises(AhpError) as refused:
        await client.create_session(provider="offline", working_directory=(tmp_path / "nope").as_uri())
    assert refused.value.code == -32602
    assert "does not exist" in refused.value.message
    assert await client.ping() is None
    listed = await client.request("listSessions", {"channel": "ahp-root://"})
    assert listed["items"] == []


async def test_a_fork_works_in_its_source_sessions_directory(connect, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    client = await connect()
    source = await client.create_session(provider="offline", working_directory=project.as_uri())
    await run_turn(client, source, "hello")
    turn_id = client.state(source)["turns"][0]["id"]
    fork = await client.create_session(fork={"session": source, "turnId": turn_id})
    assert client.state(fork)["summary"]["workingDirectory"] == project.resolve().as_uri()


@pytest.mark.parametrize("uri", ["file:///work/a%20b", "file://localhost/srv/x", "https://example.com/x", "file://other/x", "file:///"])
def test_a_session_s_working_directory_is_its_first_uri_s_path_every_time_it_is_asked(uri: str) -> None:
    # (Worked out once per URI and kept: the same answer as the plain way, every time.)
    state = {"workingDirectories": [uri, "file:///elsewhere"]}
    for _ in range(3):
        assert session_directory(state) == directory_of(uri)
    assert session_directory({"workingDirectories": []}) is None and session_directory({}) is None
