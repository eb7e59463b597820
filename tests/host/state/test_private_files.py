"""The data directory and every file the host keeps in it are private to the user: a new directory
is 0700, one others could read is tightened (and the log says so) or refused with what to do, and
the journal, content, transcripts, settings and process record are 0600 from their first byte."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS
from host.errors import ConfigError
from host.state import private_files
from host.state.private_files import private_directory, private_file
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import config_for, idle, ready_session, serving
from tests.host.runtime.tools._support import scripted


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_data_directory_is_0700(tmp_path: Path) -> None:
    assert _mode(private_directory(tmp_path / "a" / "data")) == 0o700


def test_an_existing_directory_others_can_read_is_tightened_and_the_log_says_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    os.chmod(data, 0o755)
    with caplog.at_level(logging.WARNING, logger=private_files.__name__):
        private_directory(data)
    assert _mode(data) == 0o700
    assert f"the data directory {data} was readable by other users (mode 0755): made it private (0700)" in caplog.text


def test_a_directory_that_cannot_be_tightened_is_refused_saying_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "shared"
    data.mkdir()
    os.chmod(data, 0o775)

    def not_the_owner(path: object, mode: int) -> None:  # what chmod says to anyone but a directory's owner
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(private_files.os, "chmod", not_the_owner)
    with pytest.raises(ConfigError) as refused:
        private_directory(data)
    said = str(refused.value)
    assert str(data) in said and "mode 0775" in said and f"chmod 700 {data}" in said and "--data-dir" in said


def test_files_are_created_0600_and_an_existing_one_and_its_wal_are_tightened(tmp_path: Path) -> None:
    assert _mode(private_file(tmp_path / "new.sqlite3")) == 0o600
    old = tmp_path / "old.sqlite3"
    for path in (old, Path(f"{old}-wal"), Path(f"{old}-shm")):
        path.write_text("x")
        os.chmod(path, 0o644)
    private_file(old)
    assert [_mode(p) for p in (old, Path(f"{old}-wal"), Path(f"{old}-shm"))] == [0o600] * 3
    assert old.read_text() == "x"


async def test_a_running_host_keeps_its_data_directory_and_every_file_in_it_private(tmp_path: Path, frame_checker: FrameChecker) -> None:
    data = tmp_path / "data"
    data.mkdir()
    os.chmod(data, 0o755)  # as an older build, or a hand-made directory, left it
    config = config_for(tmp_path, tools={"enabled": True, "sandbox": "off"})
    provider = ScriptedProvider([call_tools(("shell", {"command": "echo hi"})), reply("a conversation nobody else reads")])
    async with serving(config, frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (_, client):
        chat = default_chat_uri(await ready_session(client, provider="scripted", config={"permissionMode": "full-auto"}))
        client.send_message(chat, "hello")
        await client.wait_for(lambda m, e: bool((client.state(chat) or {}).get("turns")), timeout=60)
        await idle(client, chat)
        files = sorted(path for path in data.rglob("*") if path.is_file())
        modes = {path.name: _mode(path) for path in files}
    assert _mode(data) == 0o700
    assert {"journal.sqlite3", "journal.sqlite3-wal", "content.sqlite3", "transcripts.sqlite3", "tool_settings.sqlite3"} <= set(modes)
    assert {name: mode for name, mode in modes.items() if mode & 0o077} == {}
