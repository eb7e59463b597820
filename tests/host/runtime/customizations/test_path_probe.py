"""``PathProbe``: absent paths are remembered by their witness folder, and every change that could
make one appear is still seen at the next round (a real file system; the clock set ahead so that
every witness counts as old enough, the witnesses' modification times set a day back)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from host.runtime.customizations import path_probe
from host.runtime.customizations.path_probe import PathProbe
from providers import ScriptedProvider
from providers.scripted import reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import config_for, idle, ready_session, run_turn, serving
from tests.host.runtime.customizations.test_claude_code_commands import _user_text
from tests.host.runtime.tools._support import scripted

DAY_NS = 86_400 * 1_000_000_000


def _ahead() -> int:
    """A clock a minute ahead: every witness's times are older than ``RACY_NS`` by it."""
    return time.time_ns() + 60 * 1_000_000_000


def _age(*folders: Path) -> None:
    """Set the folders' modification times a day back (their change times stay now)."""
    for folder in folders:
        old = time.time_ns() - DAY_NS
        os.utime(folder, ns=(old, old))


def test_an_absent_folder_created_under_its_witness_is_seen_at_the_next_round(tmp_path: Path) -> None:
    root = str(tmp_path)
    target = str(tmp_path / ".claude" / "commands")
    _age(tmp_path)
    probe = PathProbe(clock=_ahead)
    assert probe.round().stat(target, root) is None
    assert probe.round().stat(target, root) is None  # (answered by the witness)
    (tmp_path / ".claude" / "commands").mkdir(parents=True)
    assert probe.round().is_dir(target, root)


def test_a_folder_created_in_an_existing_parent_and_a_file_edited_in_place_are_seen(tmp_path: Path) -> None:
    root = str(tmp_path)
    (tmp_path / ".github").mkdir()
    (tmp_path / "AGENTS.md").write_text("one")
    _age(tmp_path, tmp_path / ".github")
    probe = PathProbe(clock=_ahead)
    agents = str(tmp_path / ".github" / "agents")
    assert not probe.round().is_dir(agents, root)
    first = probe.round().stat(str(tmp_path / "AGENTS.md"), root)
    assert first is not None and first.st_size == 3
    (tmp_path / ".github" / "agents").mkdir()
    (tmp_path / "AGENTS.md").write_text("one, two")  # in place: the folder's times do not move
    again = probe.round()
    assert again.is_dir(agents, root)
    edited = again.stat(str(tmp_path / "AGENTS.md"), root)
    assert edited is not None and edited.st_size == 8


def test_a_witness_replaced_by_another_folder_holding_the_path_is_seen(tmp_path: Path) -> None:
    root = str(tmp_path)
    (tmp_path / ".claude").mkdir()
    staged = tmp_path / "staged"
    (staged / "commands").mkdir(parents=True)
    _age(tmp_path, tmp_path / ".claude", staged)
    probe = PathProbe(clock=_ahead)
    target = str(tmp_path / ".claude" / "commands")
    assert probe.round().stat(target, root) is None
    (tmp_path / ".claude").rmdir()
    staged.rename(tmp_path / ".claude")
    _age(tmp_path, tmp_path / ".claude")  # even with the times set back, it is another folder
    assert probe.round().is_dir(target, root)


def test_a_path_outside_the_root_or_under_a_recent_folder_is_looked_up_every_round(tmp_path: Path) -> None:
    """Nothing is remembered for them: created, they are found (a witness just written could miss a
    change within its file system's clock tick)."""
    work = tmp_path / "work"
    work.mkdir()
    probe = PathProbe()  # the real clock: ``work`` was written just now
    target = str(work / ".cursor" / "rules")
    outside = str(tmp_path / "elsewhere")
    assert probe.round().stat(target, str(work)) is None
    assert probe.round().stat(outside, str(work)) is None
    (work / ".cursor" / "rules").mkdir(parents=True)
    Path(outside).mkdir()
    assert probe.round().is_dir(target, str(work))
    assert probe.round().is_dir(outside, str(work))


async def test_commands_added_and_edited_under_an_old_working_directory_are_used_at_the_next_turn(
    tmp_path: Path, frame_checker: FrameChecker, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """End to end with every witness trusted (as a project folder untouched for a while is): the
    refresh before a turn finds a command folder created since the last turn, and a command file
    edited in place."""
    monkeypatch.setattr(path_probe, "RACY_NS", -DAY_NS)
    work = tmp_path / "work"
    work.mkdir()
    _age(work)
    provider = ScriptedProvider([reply("hi"), reply("hello"), reply("bye")])
    async with serving(config_for(tmp_path, tools={"enabled": True}), frame_checker, [scripted(provider)]) as (_, client):
        session = await ready_session(client, provider="scripted", working_directory=work.as_uri())
        await run_turn(client, session, "hi")
        commands = work / ".claude" / "commands"
        commands.mkdir(parents=True)
        (commands / "greet.md").write_text("---\ndescription: Greet\n---\nSay hello to $ARGUMENTS.\n")
        await run_turn(client, session, "/greet world")
        (commands / "greet.md").write_text("---\ndescription: Greet\n---\nSay goodbye to $ARGUMENTS, kindly.\n")
        await run_turn(client, session, "/greet world")
        await idle(client, session)
    assert _user_text(provider, 1).strip() == "Say hello to world."
    assert _user_text(provider, 2).strip() == "Say goodbye to world, kindly."

