"""Only regular files are read: FIFOs, sockets and devices are refused at once, naming what they
are, and a FIFO swapped in after the check cannot block the open; slow work gives up waiting."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from pathlib import Path

import pytest

import regular_files
from regular_files import (
    FileIOTimeout,
    NotARegularFile,
    check_regular,
    off_loop,
    open_regular,
    read_regular,
    read_regular_text,
)


def test_a_regular_file_is_read_whole_or_up_to_a_limit(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes("héllo\n".encode())
    assert read_regular(path) == "héllo\n".encode()
    assert read_regular(path, 2) == b"h\xc3"
    assert read_regular_text(path) == "héllo\n"
    path.write_bytes(b"a\r\nb\r\n")
    assert read_regular_text(path) == path.read_text(encoding="utf-8") == "a\nb\n"  # as Path.read_text reads it
    assert check_regular(path).st_size == 6


def test_a_symlink_to_a_regular_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "a.txt")
    assert read_regular(tmp_path / "link") == b"x"


def test_the_opened_file_reads_normally_after_the_non_blocking_open(tmp_path: Path) -> None:
    path = tmp_path / "big.bin"
    path.write_bytes(os.urandom(1 << 20))
    with open_regular(path) as handle:
        assert os.get_blocking(handle.fileno())  # O_NONBLOCK was cleared
        assert handle.read() == path.read_bytes()


def test_a_fifo_is_refused_at_once_naming_the_path_and_its_kind(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(NotARegularFile) as raised:
        read_regular(fifo)
    assert time.monotonic() - started < 1
    assert raised.value.kind == "named pipe (FIFO)"
    assert raised.value.filename == str(fifo)
    assert raised.value.describe("pipe") == "pipe is a named pipe (FIFO), not a regular file"
    assert isinstance(raised.value, OSError)


def test_a_socket_and_a_character_device_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        with pytest.raises(NotARegularFile) as raised:
            read_regular(path)
        assert raised.value.kind == "socket"
    finally:
        server.close()
    with pytest.raises(NotARegularFile) as raised:
        read_regular("/dev/zero")
    assert raised.value.kind == "character device"


def test_a_directory_is_refused_as_a_directory_and_a_missing_file_as_missing(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        read_regular(tmp_path)
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "nope")


def test_a_fifo_swapped_in_between_the_check_and_the_open_is_refused_without_blocking(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "file"
    path.write_text("regular")
    real_check = regular_files.check_regular

    def check_then_swap(target):
        result = real_check(target)
        os.unlink(target)
        os.mkfifo(target)  # the race: a FIFO takes the file's place after the check
        return result

    monkeypatch.setattr(regular_files, "check_regular", check_then_swap)
    outcome: list[BaseException | bytes] = []
    reader = threading.Thread(target=lambda: outcome.append(_attempt(path)), daemon=True)
    reader.start()
    reader.join(5)
    if reader.is_alive():  # unblock the hung open so the thread can end, then fail
        with open(path, "wb"):
            pass
        pytest.fail("opening the swapped-in FIFO blocked")
    assert isinstance(outcome[0], NotARegularFile)


def _attempt(path: Path) -> BaseException | bytes:
    try:
        return read_regular(path)
    except OSError as error:
        return error


async def test_off_loop_returns_the_result_and_keeps_the_loop_running() -> None:
    loop = asyncio.get_running_loop()
    the_loop_ran = threading.Event()

    def work() -> int:
        # It asks the event loop to run a callback and waits for it: only a loop that keeps running
        # while the work waits in its thread runs it (the 60 s are met only by a blocked loop).
        loop.call_soon_threadsafe(the_loop_ran.set)
        return 42 if the_loop_ran.wait(60) else -1

    assert await off_loop(work) == 42


async def test_off_loop_gives_up_waiting_after_its_timeout() -> None:
    release = threading.Event()
    started = time.monotonic()
    with pytest.raises(FileIOTimeout, match="did not finish within 0.2 s"):
        await off_loop(release.wait, 30, timeout=0.2)
    assert time.monotonic() - started < 2
    release.set()


async def test_off_loop_passes_the_functions_own_timeout_error_through() -> None:
    def fails() -> None:
        raise TimeoutError("socket timed out")

    with pytest.raises(TimeoutError, match="socket timed out") as raised:
        await off_loop(fails)
    assert not isinstance(raised.value, FileIOTimeout)
