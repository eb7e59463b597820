"""The host's content store: content-addressed, durable across restarts."""

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from host.state.content import ContentStore

REPO = Path(__file__).resolve().parents[3]


def test_same_bytes_same_uri_and_they_survive_a_restart(tmp_path: Path) -> None:
    store = ContentStore(tmp_path / "content.sqlite3")
    uri = store.put(b"hello", "text/plain")
    assert store.put(b"hello", "text/plain") == uri
    assert uri.startswith("agent-host-content:/sha256/")
    assert store.put(b"other", "text/plain") != uri
    store.close()
    again = ContentStore(tmp_path / "content.sqlite3")
    assert again.lookup(uri) == (b"hello", "text/plain")
    assert again.get("agent-host-content:/sha256/unknown") is None
    assert again.get("file:///etc/passwd") is None


def test_a_version_of_a_file_is_named_by_the_file_and_reads_back_by_any_name(tmp_path: Path) -> None:
    """Editors title a diff with the last segment of the URI they open: a file's versions end
    with its name, not a hash, and read back the same bytes."""
    store = ContentStore(tmp_path / "content.sqlite3")
    uri = store.put(b"print(1)\n", "text/x-python", "app file.py")
    assert uri.endswith("/app%20file.py")
    assert store.lookup(uri) == (b"print(1)\n", "text/x-python")
    assert store.lookup(uri.rsplit("/", 1)[0]) == (b"print(1)\n", "text/x-python")
    assert store.put(b"print(1)\n", "text/x-python", "app file.py") == uri


def test_a_put_survives_its_process_killed_right_after(tmp_path: Path) -> None:
    """No fsync per put (as the journal that records the references), yet nothing put is lost
    when the host is killed with SIGKILL the moment the put returns."""
    path = tmp_path / "content.sqlite3"
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(f"""
            import os, signal, sys
            sys.path.insert(0, {str(REPO)!r})
            from pathlib import Path
            from host.state.content import ContentStore
            store = ContentStore(Path({str(path)!r}))
            print(store.put(b"tool output " * 1000, "text/plain"), flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        """)],
        capture_output=True, text=True, timeout=60,
    )
    assert child.returncode == -signal.SIGKILL
    uri = child.stdout.strip()
    again = ContentStore(path)
    assert again.lookup(uri) == (b"tool output " * 1000, "text/plain")


def test_many_puts_keep_the_wal_bounded_and_read_back_after_a_restart(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import host.state.content as content

    monkeypatch.setattr(content, "CHECKPOINT_CHARS", 50_000)
    path = tmp_path / "content.sqlite3"
    store = ContentStore(path)
    uris, largest = [], 0
    for index in range(300):
        uris.append(store.put(f"{index} ".encode() * 2_000, "text/plain"))
        largest = max(largest, Path(f"{path}-wal").stat().st_size)
        while store._checkpoints is not None and store._checkpoints.running:
            time.sleep(0.001)
    store.close()
    assert largest < 1_000_000  # about 2.5 MB of content put
    again = ContentStore(path)
    assert again.get(uris[123]) == b"123 " * 2_000
    assert all(again.get(uri) is not None for uri in uris)
