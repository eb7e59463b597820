"""The ``agent-host`` command: what a person sees when starting it, including mistakes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT), **(env or {})},
    )


def test_a_non_loopback_address_without_a_token_is_refused(tmp_path: Path) -> None:
    result = run_cli("serve", "--host", "0.0.0.0", "--port", "0", "--data-dir", str(tmp_path))
    assert result.returncode == 2
    assert "refusing to listen on 0.0.0.0 without a token" in result.stderr
    assert "--token" in result.stderr and "AGENT_HOST_TOKEN" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unknown_config_key_names_the_key(tmp_path: Path) -> None:
    config = tmp_path / "host.toml"
    config.write_text("[server]\nprot = 9000\n")
    result = run_cli("serve", "--config", str(config), "--data-dir", str(tmp_path))
    assert result.returncode == 2
    assert "unknown key 'server.prot'" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_bad_config_value_names_key_value_and_expectation(tmp_path: Path) -> None:
    config = tmp_path / "host.toml"
    config.write_text('[server]\nport = "eighty"\n')
    result = run_cli("serve", "--config", str(config), "--data-dir", str(tmp_path))
    assert result.returncode == 2
    assert "server.port = 'eighty' is not valid: expected a whole number" in result.stderr


def test_a_config_file_that_is_not_toml_says_so(tmp_path: Path) -> None:
    config = tmp_path / "host.toml"
    config.write_text("[server\nport = 1\n")
    result = run_cli("serve", "--config", str(config), "--data-dir", str(tmp_path))
    assert result.returncode == 2
    assert "is not valid TOML" in result.stderr


def test_a_missing_config_file_points_at_the_example(tmp_path: Path) -> None:
    result = run_cli("serve", "--config", str(tmp_path / "nope.toml"), "--data-dir", str(tmp_path))
    assert result.returncode == 2
    assert "config.example.toml" in result.stderr


def test_a_token_is_never_echoed_in_config_errors(tmp_path: Path) -> None:
    config = tmp_path / "host.toml"
    config.write_text("[server]\ntoken = 12345\n")
    result = run_cli("serve", "--config", str(config), "--data-dir", str(tmp_path))
    assert result.returncode == 2
    assert "12345" not in result.stderr
    assert "server.token" in result.stderr


def test_serve_prints_one_line_with_the_url_and_token(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "serve", "--port", "0", "--data-dir", str(tmp_path), "--token", "secret-1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )
    try:
        line = process.stdout.readline()  # type: ignore[union-attr]  # started with stdout=PIPE
        assert line.startswith("agent-host listening on ws://127.0.0.1:")
        assert line.rstrip().endswith("/?token=secret-1")
        port = int(line.split(":")[2].split("/")[0])
        assert port > 0
    finally:
        process.terminate()
        assert process.wait(10) == 0


async def test_a_session_created_the_moment_serve_listens_is_made(tmp_path: Path) -> None:
    # The session services load in a worker thread once serve listens: a createSession sent at once
    # arrives while they load (or just after), and waits for them.
    from client import AhpClient

    process = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "serve", "--port", "0", "--data-dir", str(tmp_path / "data"), "--token", "secret-1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT), "SHELL": "/bin/sh", "ENV": ""},
    )
    try:
        line = await asyncio.to_thread(process.stdout.readline)  # type: ignore[union-attr]  # started with stdout=PIPE
        client = await AhpClient.connect(line.split()[-1].split("?")[0], token="secret-1")
        try:
            await client.initialize(subscriptions=["ahp-root://"])  # what a real client offers: the host picks 1.0.0
            session = await client.create_session()
            await client.wait_for(lambda m, e: (client.state(session) or {}).get("lifecycle") == "ready", timeout=30)
            assert [listed["resource"] for listed in await client.list_sessions()] == [session]
        finally:
            await client.close()
    finally:
        process.terminate()
        assert process.wait(10) == 0


# What `serve` loads before it listens. Each of these is loaded on first use instead; importing one
# at start costs every start of the host (benchmarks/startup.py measures the sum).
_NOT_AT_START = (
    "h11",  # uvicorn parses HTTP with httptools, a declared dependency
    "mcp", "ag_ui", "yaml", "openai", "anthropic", "litellm", "chat", "pathspec",
)
# Modules of this project loaded with a session's first turn: the turn loop, and the providers'
# message and event models it builds requests and reads streams with.
_NOT_AT_START_HERE = ("host.runtime.agents.turn", "providers.messages", "providers.events", "providers.accumulator")
# The session services (host.session_services) and what only they import: loaded by a worker thread
# once the host listens, never by the thread that starts it.
_SESSION_SERVICES = (
    "host.session_services", "host.runtime.customizations.service", "host.runtime.customizations.contributor",
    "host.runtime.customizations.session", "host.runtime.tools.runtime", "host.runtime.terminals.service",
    "host.resources.changesets.service", "host.resources.watches", "host.runtime.agents.preamble", "tools.builtin",
    "tools.file_changes",
)

_SERVE_AND_REPORT = """
import builtins, gc, importlib.metadata, json, os, signal, sys, threading
scans = []
main_thread_imports = []
class WhoImports:  # a finder that finds nothing: it notes the modules the main thread imports first
    def find_spec(self, name, path=None, target=None):
        if threading.current_thread() is threading.main_thread():
            main_thread_imports.append(name)
        return None
sys.meta_path.insert(0, WhoImports())
real_entry_points = importlib.metadata.entry_points
def entry_points(*args, **kwargs):
    scans.append(kwargs.get("group"))
    return real_entry_points(*args, **kwargs)
importlib.metadata.entry_points = entry_points
real_print = builtins.print
def report(*args, **kwargs):
    real_print(*args, **kwargs)
    if args and str(args[0]).startswith("agent-host listening on"):
        real_print(json.dumps({
            "modules": sorted(sys.modules), "scans": scans, "main_thread_imports": list(main_thread_imports),
            "collections_while_starting": sum(gen["collections"] for gen in gc.get_stats()) - collections_before,
        }), flush=True)
        if os.environ.get("REPORT_WIRE_MODELS"):  # no request is ever sent: does the host load them anyway?
            import importlib, time
            deadline = time.monotonic() + 30
            while "ahp.dialects.v0_2.wire._generated" not in sys.modules and time.monotonic() < deadline:
                time.sleep(0.01)
            started = "ahp.dialects.v0_2.wire._generated" in sys.modules  # by the host, not by this script
            # Waits for an import under way in another thread to finish (the module's import lock).
            module = importlib.import_module("ahp.dialects.v0_2.wire._generated") if started else None
            while not ("plugins.loader" in sys.modules and gc.isenabled()) and time.monotonic() < deadline:
                time.sleep(0.01)  # the plugin loader comes next; the last step turns the collector on
            real_print(json.dumps({"wire_models_loaded": hasattr(module, "InitializeParams"), "collector_on": gc.isenabled(),
                                   "plugin_loader_loaded": "plugins.loader" in sys.modules,
                                   "session_services_loaded": "host.session_services" in sys.modules}), flush=True)
        os.kill(os.getpid(), signal.SIGINT)
builtins.print = report
from cli.main import main
collections_before = sum(gen["collections"] for gen in gc.get_stats())
sys.exit(main(sys.argv[1:]))
"""


def _serve_and_report(tmp_path: Path, env: dict[str, str] | None = None) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", _SERVE_AND_REPORT, "serve", "--port", "0", "--data-dir", str(tmp_path), "--token", "secret-1"],
        capture_output=True, text=True, timeout=60, cwd=ROOT, env={"PATH": "/usr/bin:/bin", "HOME": str(ROOT), **(env or {})},
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("agent-host listening on ws://127.0.0.1:")
    return {key: value for line in lines[1:] for key, value in json.loads(line).items()}


def test_serve_listens_before_loading_what_it_needs_only_later(tmp_path: Path) -> None:
    report = _serve_and_report(tmp_path)
    loaded = {name.split(".")[0] for name in report["modules"]}
    assert sorted(loaded & set(_NOT_AT_START)) == []
    assert sorted(set(report["modules"]) & set(_NOT_AT_START_HERE)) == []
    assert "httptools" in loaded


def test_serve_listens_before_importing_the_session_services(tmp_path: Path) -> None:
    report = _serve_and_report(tmp_path)
    assert "host.service" in report["main_thread_imports"]  # (the finder saw the host's imports)
    imported = set(report["main_thread_imports"])
    assert sorted(name for name in imported if any(name == n or name.startswith(n + ".") for n in _SESSION_SERVICES)) == []


def test_serve_does_not_scan_installed_packages_for_pydantic_plugins_unless_asked(tmp_path: Path) -> None:
    assert _serve_and_report(tmp_path)["scans"] == []
    # Setting pydantic's own variable hands the choice back to pydantic, which then looks.
    assert _serve_and_report(tmp_path / "second", env={"PYDANTIC_DISABLE_PLUGINS": ""})["scans"] == ["pydantic"]


def test_serve_starts_with_the_collector_held_off_and_turns_it_on_once_started(tmp_path: Path) -> None:
    report = _serve_and_report(tmp_path, env={"REPORT_WIRE_MODELS": "1"})
    # Start-up makes some 70,000 long-lived containers: a young collection would walk them for nothing.
    assert report["collections_while_starting"] == 0
    assert report["collector_on"] is True  # once the wire models, loaded out of its sight, are in


def test_serve_loads_the_wire_models_and_the_plugin_loader_before_the_first_request(tmp_path: Path) -> None:
    report = _serve_and_report(tmp_path, env={"REPORT_WIRE_MODELS": "1"})
    assert report["wire_models_loaded"] is True
    assert report["plugin_loader_loaded"] is True
    assert report["session_services_loaded"] is True


_RUN_AND_LIST_MODULES = """
import json, sys
from cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


@pytest.mark.parametrize("args, not_loaded", [
    # The command line's help needs neither the host nor the terminal client.
    (["--help"], ["host.config", "host.service", "host.transport", "chat", "client", "plugins", "asyncio"]),
    (["serve", "--help"], ["host.config", "host.service", "chat", "client"]),
    # A chat with a host that already runs never loads the host.
    (["chat", "--help"], ["host.config", "host.service", "host.transport", "plugins"]),
    # The plugin commands change files in the data directory: no host, no terminal client.
    (["plugin", "--data-dir", "{data}", "list"], ["host.service", "host.transport", "chat", "client"]),
])
def test_a_command_loads_only_what_it_runs(tmp_path: Path, args: list[str], not_loaded: list[str]) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
           "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    result = subprocess.run(
        [sys.executable, "-c", _RUN_AND_LIST_MODULES, *(arg.format(data=tmp_path / "data") for arg in args)],
        capture_output=True, text=True, timeout=60, cwd=ROOT, env=env,
    )
    assert result.returncode == 0, result.stderr
    loaded = set(json.loads(result.stdout.splitlines()[-1]))
    assert sorted(name for name in loaded if any(name == n or name.startswith(n + ".") for n in not_loaded)) == []


def test_the_top_level_help_shows_the_chats_print_continue_and_resume_options() -> None:
    result = subprocess.run([sys.executable, "-m", "cli.main", "--help"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    for option in ("-p, --print", "-c, --continue", "--resume", "--output-format"):
        assert option in result.stdout
    # ... and they are what 'agent-host code' really takes.
    code = subprocess.run([sys.executable, "-m", "cli.main", "code", "--help"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    for option in ("-p [MESSAGE], --print [MESSAGE]", "-c, --continue", "--resume [ID]", "--output-format", "--yes", "--trust"):
        assert option in code.stdout, option
