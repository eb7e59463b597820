"""pytest's assertion rewriting, one module at a time across threads.

pytest rewrites every module of this distribution as it is first imported (the project's pytest
plugin comes from it, so its whole editable install is marked for rewriting): it parses the source
with ``ast.parse``, rewrites the tree and compiles it. On CPython 3.11 the AST conversion keeps its
recursion depth in interpreter-wide state (CPython issue gh-106905, fixed in 3.12), so two threads
rewriting at once can fail with ``SystemError: AST constructor recursion depth mismatch``. The host
imports its session services in a worker thread while the event loop imports what the first client
needs (``host.transport.server``), which under pytest is exactly that. Outside pytest no module is
parsed this way (plain imports compile without building Python AST objects), so the lock belongs
here, around pytest's rewriting step, and nowhere in the host.

``install()`` wraps ``_pytest.assertion.rewrite._rewrite_test`` (pytest's own function, looked up
by name at each import) in one lock; if pytest no longer has it, nothing is wrapped and the tests
run as before.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["install"]

_lock = threading.Lock()


def install() -> bool:
    """Serialise pytest's rewriting of a module's source; whether it could be wrapped."""
    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return False
    rewrite_test = getattr(rewrite, "_rewrite_test", None)
    if rewrite_test is None or getattr(rewrite_test, "serialised", False):
        return rewrite_test is not None

    def serialised(*args: Any, **kwargs: Any) -> Any:
        with _lock:
            return rewrite_test(*args, **kwargs)

    serialised.serialised = True  # type: ignore[attr-defined]
    rewrite._rewrite_test = serialised  # type: ignore[attr-defined]
    return True
