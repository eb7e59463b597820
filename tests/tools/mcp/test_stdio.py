"""The stdio transport: process-group shutdown leaves no process behind, and the child's
environment holds what was declared plus a safe subset of the host's, not its secrets."""

from __future__ import annotations

import asyncio
import os

import tools.mcp._stdio as stdio
from tools.mcp import McpManager

from .conftest import FAST, Recorder, children_of_this_process, eventually, kitchen_sink, process_gone


async def test_shutdown_kills_grandchildren_left_in_the_process_group(manager, call_ctx) -> None:
    await manager.start([kitchen_sink()])
    await manager.wait_ready(timeout=30)
    server_pid = manager.connections["ks"].pid
    sleeper = int((await manager.tool("mcp__ks__spawn_sleeper").call({}, call_ctx))["content"][0]["text"])
    assert not process_gone(sleeper)

    await manager.stop()
    assert process_gone(server_pid)
    assert await eventually(lambda: process_gone(sleeper))  # it ignored SIGTERM: only SIGKILL ends it
    assert server_pid not in children_of_this_process()


async def test_shutdown_ends_a_daemon_that_left_the_process_group(manager, call_ctx) -> None:
    # A server that daemonised a helper (its own session, as setsid does): the group kill misses
    # it, the server's process family does not.
    await manager.start([kitchen_sink()])
    await manager.wait_ready(timeout=30)
    daemon = int((await manager.tool("mcp__ks__spawn_daemon").call({}, call_ctx))["content"][0]["text"])
    assert not process_gone(daemon)
    assert os.getsid(daemon) == daemon  # out of the server's group and session

    await manager.stop()
    assert await eventually(lambda: process_gone(daemon))


async def test_a_server_ignoring_stdin_close_and_sigterm_is_killed(monkeypatch, recorder: Recorder) -> None:
    monkeypatch.setattr(stdio, "EXIT_GRACE_SECONDS", 0.2)
    monkeypatch.setattr(stdio, "TERM_GRACE_SECONDS", 0.2)
    manager = McpManager(policy=FAST, on_status=recorder.on_status)
    await manager.start([kitchen_sink("ks", "--stubborn")])
    await manager.wait_ready(timeout=30)
    pid = manager.connections["ks"].pid
    await asyncio.wait_for(manager.stop(), timeout=10)
    assert process_gone(pid)
    assert not stdio.group_alive(pid)


async def test_declared_env_is_passed_but_host_secrets_are_not(monkeypatch, manager, call_ctx) -> None:
    monkeypatch.setenv("PROVIDER_API_KEY", "sk-secret")
    monkeypatch.setenv("VISIBLE", "from host")
    await manager.start([kitchen_sink(env={"DECLARED": "yes", "FORWARDED": "x"})])
    await manager.wait_ready(timeout=30)
    env_var = manager.tool("mcp__ks__env_var")

    async def value(name: str) -> str:
        return (await env_var.call({"name": name}, call_ctx))["content"][0]["text"]

    assert await value("DECLARED") == "yes"
    assert await value("PROVIDER_API_KEY") == "<unset>"
    assert await value("PATH") != "<unset>"


async def test_inherit_env_passes_the_host_environment(monkeypatch, recorder, call_ctx) -> None:
    monkeypatch.setenv("VISIBLE", "from host")
    async with McpManager(policy=FAST, inherit_env=True) as manager:
        await manager.start([kitchen_sink()])
        await manager.wait_ready(timeout=30)
        result = await manager.tool("mcp__ks__env_var").call({"name": "VISIBLE"}, call_ctx)
    assert result["content"] == [{"type": "text", "text": "from host"}]
