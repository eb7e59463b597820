"""Server specs from host config, workspace `.mcp.json` and plugins, all through the one parser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from host.runtime.customizations.mcp_declarations import spec_from_plugin, specs_from_config, specs_from_mcp_json
from plugins import load_plugin
from tests.tools.mcp.conftest import SAMPLES
from tools.mcp import McpConfigError, McpServerSpec, merge_specs


def test_config_list_form_expands_variables_and_resolves_relative_cwd(tmp_path: Path) -> None:
    (spec,) = specs_from_config(
        [{"name": "git", "command": "${TOOLS}/git-mcp", "args": ["--repo", "${REPO:-.}"],
          "env": {"TOKEN": "${GH_TOKEN}", "LEVEL": 3}, "cwd": "servers"}],
        environ={"TOOLS": "/opt/tools", "GH_TOKEN": "t0k"}, base_dir=tmp_path,
    )
    assert spec == McpServerSpec(name="git", transport="stdio", command="/opt/tools/git-mcp", args=("--repo", "."),
                                 env={"TOKEN": "t0k", "LEVEL": "3"}, cwd=tmp_path / "servers", source="config")


def test_config_table_form_infers_http_from_url_and_expands_headers() -> None:
    (spec,) = specs_from_config({"docs": {"url": "https://mcp.example/${PATH_PART}", "headers": {"Authorization": "Bearer ${KEY}"}}},
                                environ={"PATH_PART": "v1", "KEY": "k"})
    assert (spec.transport, spec.url, dict(spec.headers)) == ("http", "https://mcp.example/v1", {"Authorization": "Bearer k"})


def test_unset_variables_stay_literal_so_the_problem_is_visible() -> None:
    (spec,) = specs_from_config({"s": {"command": "run", "args": ["${NOPE}"]}}, environ={})
    assert spec.args == ("${NOPE}",)


def test_disabled_servers_are_skipped() -> None:
    assert specs_from_config({"s": {"command": "x", "disabled": True}}, environ={}) == []


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        ({"s": {"args": ["x"]}}, "MCP server 's': needs a 'command' (stdio) or a 'url' (http)"),
        ({"s": {"command": "x", "args": "--flag"}}, "MCP server 's': args: expected a list of strings, got '--flag'"),
        ({"s": {"type": "websocket", "url": "ws://x"}}, "type: unsupported MCP transport 'websocket' (use stdio, http or sse)"),
        ({"s": {"url": "ftp://x"}}, "url must start with http:// or https://, got 'ftp://x'"),
        ({"s": {"command": "x", "env": {"A": None}}}, "env: value of 'A' must be a string, got null"),
        ([{"command": "x"}], "mcp_servers[0] needs a 'name' string"),
        ([{"name": "a", "command": "x"}, {"name": "a", "command": "y"}], "MCP server 'a' is declared twice"),
        ({"s": {"command": "x", "timeout": -1}}, "timeout: expected a non-negative number, got -1"),
    ],
)
def test_config_errors_name_the_server_the_key_and_the_value(servers, message) -> None:
    with pytest.raises(McpConfigError) as raised:
        specs_from_config(servers, environ={})
    assert message in str(raised.value) and str(raised.value).startswith("config:")


def test_timeout_is_declared_in_milliseconds() -> None:
    (spec,) = specs_from_config({"s": {"command": "x", "timeout": 2500}}, environ={})
    assert spec.timeout == 2.5


@pytest.mark.parametrize("wrapped", [True, False], ids=["wrapped", "flat"])
def test_workspace_mcp_json_both_forms_run_in_the_workspace(tmp_path: Path, wrapped: bool) -> None:
    servers = {"local": {"command": "node", "args": ["${workspaceFolder}/srv.js", "${HOME_DIR}"]},
               "remote": {"type": "streamable-http", "url": "http://127.0.0.1:9/mcp"}}
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": servers} if wrapped else servers))
    local, remote = specs_from_mcp_json(tmp_path / ".mcp.json", environ={"HOME_DIR": "/home/me"})
    root = tmp_path.resolve()
    assert (local.command, local.args, local.cwd) == ("node", (f"{root}/srv.js", "/home/me"), root)
    assert local.source == str(tmp_path / ".mcp.json")
    assert (remote.transport, remote.url) == ("http", "http://127.0.0.1:9/mcp")


def test_missing_workspace_file_means_no_servers(tmp_path: Path) -> None:
    assert specs_from_mcp_json(tmp_path / ".mcp.json") == []


def test_a_workspace_mcp_json_that_is_a_named_pipe_is_refused_at_once(tmp_path: Path, make_fifo) -> None:
    import time

    path = make_fifo(tmp_path / ".mcp.json")
    started = time.monotonic()
    with pytest.raises(McpConfigError) as raised:
        specs_from_mcp_json(path)  # a plain open would wait for a writer (on the host's event loop)
    assert time.monotonic() - started < 2
    assert str(raised.value) == f"{path}: cannot be read (it is a named pipe (FIFO), not a regular file)"


def test_broken_workspace_json_names_file_and_position(tmp_path: Path) -> None:
    path = tmp_path / ".mcp.json"
    path.write_text('{"mcpServers": {"a": {"command": "x",}}}')
    with pytest.raises(McpConfigError, match=r"\.mcp\.json: invalid JSON at line 1, column 38: Expecting property name"):
        specs_from_mcp_json(path)


def test_plugin_server_keeps_plugin_root_env_and_cwd() -> None:
    root = (SAMPLES / "sample-toolkit").resolve()
    (server,) = load_plugin(SAMPLES / "sample-toolkit").mcp_servers
    spec = spec_from_plugin(server, "sample-toolkit")
    assert (spec.name, spec.transport, spec.command, spec.cwd) == ("tiny", "stdio", "python3", root)
    assert spec.args == (f"{root}/servers/tiny_mcp.py",)
    assert spec.env["PLUGIN_ROOT"] == str(root) and spec.env["SAMPLE_GREETING"] == "hello from sample-toolkit"
    assert spec.source == "plugin sample-toolkit"


def test_merge_lets_later_sources_replace_same_named_servers() -> None:
    config = specs_from_config({"a": {"command": "one"}, "b": {"command": "two"}}, environ={})
    workspace = specs_from_config({"a": {"command": "three"}}, environ={}, source="ws")
    merged = merge_specs(config, workspace)
    assert [(s.name, s.command) for s in merged] == [("a", "three"), ("b", "two")]


@pytest.mark.parametrize("alias", ["local", "stdio"])
def test_every_stdio_alias_is_read_the_same_in_config_workspace_and_plugins(tmp_path: Path, alias: str) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"s": {"type": alias, "command": "run"}}}))
    (from_config,) = specs_from_config({"s": {"type": alias, "command": "run"}}, environ={})
    (from_workspace,) = specs_from_mcp_json(tmp_path / ".mcp.json", environ={})
    assert from_config.transport == from_workspace.transport == "stdio"


@pytest.mark.parametrize("alias", ["http", "streamable-http", "streamable_http", "streamableHttp"])
def test_every_http_alias_is_read_the_same_in_config_and_workspace(tmp_path: Path, alias: str) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps({"servers": {"s": {"type": alias, "url": "http://127.0.0.1:9/mcp"}}}))
    (from_config,) = specs_from_config({"s": {"type": alias, "url": "http://127.0.0.1:9/mcp"}}, environ={})
    (from_workspace,) = specs_from_mcp_json(tmp_path / ".mcp.json", environ={})  # VS Code's "servers" spelling
    assert from_config.transport == from_workspace.transport == "http"


def test_a_zero_timeout_is_refused_in_config() -> None:
    with pytest.raises(McpConfigError, match="timeout must be a positive number of milliseconds, got 0"):
        specs_from_config({"s": {"command": "x", "timeout": 0}}, environ={})
