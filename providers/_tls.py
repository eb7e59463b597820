"""One TLS context for every SDK client of the process.

Building an ``ssl.SSLContext`` loads a whole CA bundle (certifi's, or the one ``SSL_CERT_FILE`` /
``SSL_CERT_DIR`` name), tens of milliseconds of CPU (``benchmarks/README.md``). The SDKs' aiohttp-backed
clients (``openai.DefaultAioHttpClient``, ``anthropic.DefaultAioHttpClient``) each build their own
when they are made, which is at a provider's first model call, on the event loop: every session on
the host stopped streaming for that long. The context is immutable once built and safe to share,
so :func:`ssl_context` builds it once, with httpx's own rules (the same environment variables the
SDK would honour), and ``host.runtime.agents.sources`` builds it in the worker thread that imports the SDK
when a session is created.
"""

from __future__ import annotations

import functools
import ssl

__all__ = ["ssl_context"]


@functools.cache
def ssl_context() -> ssl.SSLContext:
    """The process's verifying TLS context (built on first use; cached)."""
    import httpx

    return httpx.create_ssl_context(verify=True, trust_env=True)
