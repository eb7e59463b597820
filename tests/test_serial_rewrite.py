"""tests/_serial_rewrite.py: pytest's rewriting of a module runs under one lock for this run (so
two threads never rewrite at once), and a pytest that renamed the function it wraps is noticed
here rather than as a rare SystemError in a test that starts a host."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from _pytest.assertion import rewrite

from tests._serial_rewrite import _lock, install


def test_pytest_s_rewriting_is_wrapped_once() -> None:
    assert install() and install()
    assert getattr(rewrite._rewrite_test, "serialised", False)


def test_a_rewrite_waits_while_another_thread_rewrites(tmp_path: Path, pytestconfig: Any) -> None:
    module = tmp_path / "test_sample.py"
    module.write_text("def test_one():\n    assert 1 + 1 == 2\n")
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(rewrite._rewrite_test(module, pytestconfig)))
    with _lock:  # another thread's rewrite in progress
        worker.start()
        worker.join(0.3)
        assert worker.is_alive() and done == []
    worker.join(10)
    assert len(done) == 1
