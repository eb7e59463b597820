"""Importing ``providers`` stays cheap: no vendor SDK is loaded until a provider is used."""

from __future__ import annotations

import subprocess
import sys


def test_import_loads_no_vendor_sdk():
    code = "import sys, providers; print(sorted(m for m in ('openai', 'anthropic', 'litellm', 'httpx2', 'vcr') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_every_public_name_resolves():
    import providers

    for name in providers.__all__:
        assert getattr(providers, name) is not None
