"""providers._tls: the SDKs' aiohttp-backed clients share one TLS context, built once per process."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from providers._tls import ssl_context
from providers.anthropic import AnthropicProvider
from providers.openai._client import make_client


def test_every_sdk_client_verifies_with_the_one_context() -> None:
    first = make_client("k", base_url="http://127.0.0.1:9/v1")
    second = make_client("k", base_url="https://api.example.invalid/v1")
    anthropic = AnthropicProvider(api_key="k", base_url="http://127.0.0.1:9")._sdk()
    contexts = [first._client._transport.ssl_context, second._client._transport.ssl_context,
                anthropic._client._transport.ssl_context]
    assert all(context is ssl_context() for context in contexts)
    assert ssl_context().verify_mode == ssl.CERT_REQUIRED and ssl_context().check_hostname


def test_the_context_follows_ssl_cert_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A CA bundle named by SSL_CERT_FILE is the one loaded, as the SDK's own client would."""
    import certifi

    bundle = tmp_path / "ca.pem"
    first_certificate = Path(certifi.where()).read_text().split("-----END CERTIFICATE-----")[0]
    bundle.write_text(first_certificate + "-----END CERTIFICATE-----\n")
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    ssl_context.cache_clear()
    try:
        assert ssl_context().cert_store_stats()["x509_ca"] == 1
    finally:
        ssl_context.cache_clear()
