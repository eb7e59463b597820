"""The host's content store: content-addressed, durable across restarts."""

from pathlib import Path

from host.state.content import ContentStore


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
