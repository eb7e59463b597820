"""The pytest plugin (entry point ``pytest11: agent_host``): recorded agent sessions as tests.

Nothing happens unless a test asks for the ``agent_host`` fixture. Then a real host starts on
127.0.0.1 port 0 (in a thread of its own, so tests may be plain functions), with one agent,
``recorded``, whose turns replay or record the test's cassette,
``<the test file's folder>/cassettes/<module>/<test>.yaml``:

* ``--record-mode=none`` (the default): replay only, strictly. No network: the agent's requests
  are answered from the cassette and compared with what it recorded; a missing cassette fails.
* ``once``: replay when the cassette exists, else record it (against the live agent).
* ``rewrite``: record again, replacing the cassette.
* ``new_episodes``: replay the recorded turns, record (and append) the turns after them.

Fixtures a test or a ``conftest.py`` may override:

* ``agent_host_agent``: the live agent's ``[agents.<id>]`` table as a dict (``kind``, ``base_url``,
  ``api_key_env``, ``models``...), used to record; replay uses the same table as a ``replay``
  agent, so the prompt, tools and title requests are the recorded agent's. Default: one model,
  the cassette's own (replay only).
* ``agent_host_config``: more host config sections (``{"tools": {...}}``); merged over the
  plugin's defaults (tool calls approved, the test's folder trusted, no offline agent).
* ``agent_host_cassette``: the cassette's path.

``agent_host.session(cwd)`` opens a session working in ``cwd``; ``session.send(text)`` returns the
finished ``Turn`` or raises ``ReplayFailed`` naming the turn, the model call and a diff;
``session.requests``, ``session.messages(turn)`` and ``session.assert_sent(text)`` say what the
model was sent.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_agent_host import AGENT, RECORD_MODES

__all__ = ["RECORD_MODES", "record_mode"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agent-host", "agent-host recorded sessions")
    try:
        group.addoption("--record-mode", action="store", default=None, choices=(*RECORD_MODES, "all"),
                        help="agent_host cassettes: none (replay only, the default), once, rewrite, new_episodes")
    except ValueError:
        pass  # pytest-recording declares the same option with the same modes: share it


def record_mode(config: pytest.Config) -> str:
    mode = config.getoption("--record-mode", default=None) or "none"
    return "rewrite" if mode == "all" else str(mode)


@pytest.fixture
def agent_host_cassette(request: pytest.FixtureRequest) -> Path:
    """``cassettes/<module>/<test>.yaml`` beside the test file."""
    module = request.node.path
    name = _UNSAFE.sub("_", request.node.name).strip("._")
    return Path(module).parent / "cassettes" / Path(module).stem / f"{name}.yaml"


@pytest.fixture
def agent_host_agent() -> dict[str, Any] | None:
    """The live agent's config table (override it to record); None: replay only."""
    return None


@pytest.fixture
def agent_host_config() -> dict[str, dict[str, Any]]:
    """More host config sections, merged over the plugin's."""
    return {}


@pytest.fixture
def agent_host(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, agent_host_cassette: Path,
    agent_host_agent: dict[str, Any] | None, agent_host_config: dict[str, dict[str, Any]],
) -> Iterator[Any]:
    """A host whose agent ``recorded`` replays or records this test's cassette (see the module docstring)."""
    # The host's modules load when a test uses the fixture, not in every pytest run of an
    # environment where the package is installed (the plugin is registered for all of them).
    from host.config import load_config
    from host.runtime.agents.session_source import LiveProvider, SessionCassetteSource
    from pytest_agent_host._harness import HostHarness

    mode = record_mode(request.config)
    cassette = agent_host_cassette
    exists = cassette.is_file()
    if mode == "none" and not exists:
        pytest.fail(f"no cassette at {cassette}: record it with --record-mode=once (and an agent_host_agent fixture)", pytrace=False)
    recording = mode == "rewrite" or (mode in ("once", "new_episodes") and not exists) or mode == "new_episodes"
    if recording and agent_host_agent is None:
        pytest.fail(f"--record-mode={mode} needs the live agent to record {cassette.name}: define an agent_host_agent "
                    "fixture returning its config table (kind, base_url, api_key_env, models)", pytrace=False)
    if mode == "rewrite" and exists:
        cassette.unlink()
    home = tmp_path_factory.mktemp("agent-host")
    table = dict(agent_host_agent or {})
    source = None
    if recording:
        assert agent_host_agent is not None
        live = LiveProvider(str(table["kind"]), _key(table), table.get("base_url"))
        table["api_key"] = live.api_key  # in memory only: the host's own key check passes
        replay = mode == "new_episodes" and exists
        redact = tuple((agent_host_config.get("recording") or {}).get("redact") or ())
        source = SessionCassetteSource(cassette_for=lambda session, model: cassette, kind=live.kind, live=live,
                                       replay=replay, redact=redact)
    else:
        table = {key: value for key, value in table.items() if key not in ("base_url", "api_key", "api_key_env")}
        table["kind"] = "replay"
        models = [dict(m) for m in table.get("models") or [{"id": _recorded_model(cassette)}]]
        table["models"] = [{**m, "cassette": str(cassette)} for m in models]
    sections: dict[str, dict[str, Any]] = {
        "server": {"port": 0, "data_dir": str(home / "data")},
        "sessions": {"offline_agent": False, "default_agent": AGENT, "default_directory": str(home)},
        "tools": {"auto_approve": True},
        "trust": {"require": False},
        "claude_code": {"enabled": False},
        "agents": {AGENT: table},
    }
    for section, values in agent_host_config.items():
        sections.setdefault(section, {}).update(values)
    config = load_config(None, overrides=sections, environ=dict(os.environ))
    harness = HostHarness(recording=recording)
    try:
        harness.start(config, source)
        yield harness
    finally:
        harness.stop()


def _key(table: dict[str, Any]) -> str | None:
    from host.config import DEFAULT_KEY_VARIABLES

    if table.get("api_key"):
        return str(table["api_key"])
    variable = table.get("api_key_env") or DEFAULT_KEY_VARIABLES.get(str(table["kind"]))
    key = os.environ.get(variable) if variable else None
    if key is None and table.get("base_url"):
        return "not-needed"  # a local or fake server
    return key


def _recorded_model(cassette: Path) -> str:
    from providers.session_cassette import CassetteFormatError, read_cassette

    try:
        recorded = read_cassette(cassette)
    except CassetteFormatError as error:
        raise pytest.fail.Exception(str(error), pytrace=False) from None
    for call in [c for turn in recorded.turns for c in turn]:
        if isinstance(call.body, dict) and call.body.get("model"):
            return str(call.body["model"])
    raise pytest.fail.Exception(f"{cassette} records no model id; give the agent_host_agent fixture a models list", pytrace=False)
