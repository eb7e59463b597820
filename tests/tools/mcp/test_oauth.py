"""OAuth for a remote MCP server that asks for it, against a real authorization server and a
protected MCP server on 127.0.0.1 (a fixture process built from the SDK's server-side pieces):
the user is asked with the authorization URL, the browser's redirect completes the sign-in, tokens
are kept per server in a 0600 file and reused, and a declined sign-in fails the server at once."""

from __future__ import annotations

import asyncio
import stat
import sys
from pathlib import Path
from typing import Any

from tools.base import ToolContext
from tools.mcp import McpServerConnection, McpServerSpec, ServerStatus

from .conftest import FAST, KITCHEN_SINK, play_browser


def remote(url: str, **overrides: Any) -> McpServerSpec:
    return McpServerSpec(name="remote", transport="http", url=url, **overrides)


async def test_a_server_that_asks_for_oauth_is_signed_in_through_the_user_and_its_tokens_are_kept(
        oauth_server: str, tmp_path: Path) -> None:
    asked: list[dict[str, Any]] = []
    statuses: list[ServerStatus] = []
    browser: list[asyncio.Task[int]] = []
    withdrawn = asyncio.Event()

    async def ask(request: dict[str, Any]) -> dict[str, Any]:
        asked.append(request)
        browser.append(asyncio.create_task(play_browser(request["url"])))  # the user opens the link
        try:
            await asyncio.Event().wait()  # the question stays open until the sign-in completes
        finally:
            withdrawn.set()
        raise AssertionError("unreachable")

    connection = McpServerConnection(remote(oauth_server), policy=FAST, ask=ask, oauth_dir=tmp_path / "oauth",
                                     on_status=statuses.append)
    connection.start()
    try:
        status = await connection.wait_ready(timeout=60)
        assert status.state == "running", status
        result = await connection.call("whoami", {}, ToolContext(working_directory=tmp_path), "asked")
    finally:
        await connection.stop()
    [request] = asked
    assert request["url"].startswith(oauth_server.removesuffix("/mcp") + "/authorize?")
    assert "needs you to sign in" in request["message"]
    assert [await task for task in browser] == [200]
    assert withdrawn.is_set()  # the question was withdrawn once the browser came back
    waiting = [s for s in statuses if s.state == "starting" and s.message]
    assert waiting and waiting[0].message == f"MCP server 'remote' needs you to sign in: open {request['url']}"
    assert result["success"] is True and result["content"][0]["text"].startswith("client ")
    [token_file] = (tmp_path / "oauth").iterdir()
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "oauth").stat().st_mode) == 0o700
    assert '"access_token"' in token_file.read_text()

    # The next start uses the stored token: nobody is asked.
    async def must_not_ask(request: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError(f"asked again: {request}")

    again = McpServerConnection(remote(oauth_server), policy=FAST, ask=must_not_ask, oauth_dir=tmp_path / "oauth")
    again.start()
    try:
        assert (await again.wait_ready(timeout=60)).state == "running"
        second = await again.call("whoami", {}, ToolContext(working_directory=tmp_path), "asked")
    finally:
        await again.stop()
    assert second["content"][0]["text"] == result["content"][0]["text"]


async def test_a_declined_sign_in_fails_the_server_without_restarts(oauth_server: str, tmp_path: Path) -> None:
    asked: list[str] = []

    async def ask(request: dict[str, Any]) -> dict[str, Any]:
        asked.append(request["url"])
        return {"response": "decline"}

    connection = McpServerConnection(remote(oauth_server), policy=FAST, ask=ask, oauth_dir=tmp_path / "oauth")
    connection.start()
    try:
        status = await connection.wait_ready(timeout=60)
    finally:
        await connection.stop()
    assert status.state == "failed"
    assert status.message == ("MCP server 'remote' needs you to sign in, and the sign-in did not complete (you declined). "
                              "It asks again when it is started again (with the next turn).")
    assert len(asked) == 1 and status.restarts == 0


async def test_a_server_with_its_own_authorization_header_is_not_given_oauth(oauth_server: str, tmp_path: Path) -> None:
    async def ask(request: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("no sign-in expected")

    connection = McpServerConnection(remote(oauth_server, headers={"Authorization": "Bearer wrong"}), policy=FAST, ask=ask,
                                     oauth_dir=tmp_path / "oauth")
    connection.start()
    try:
        status = await connection.wait_tried(timeout=60)
    finally:
        await connection.stop()
    assert status.state in ("restarting", "failed")
    assert not (tmp_path / "oauth").exists()


async def test_a_sign_in_question_cancelled_unanswered_is_asked_again_and_the_link_still_works(
        oauth_server: str, tmp_path: Path) -> None:
    asked: list[str] = []
    browser: list[asyncio.Task[int]] = []
    asked_twice = asyncio.Event()

    async def ask(request: dict[str, Any]) -> dict[str, Any]:
        asked.append(request["url"])
        if len(asked) == 2:
            asked_twice.set()
        if len(asked) < 3:
            return {"response": "cancel"}  # e.g. the turn it was asked in ended unanswered
        raise AssertionError("asked a third time")

    statuses: list[ServerStatus] = []
    connection = McpServerConnection(remote(oauth_server), policy=FAST, ask=ask, oauth_dir=tmp_path / "oauth",
                                     on_status=statuses.append)
    connection.start()
    try:
        await asyncio.wait_for(asked_twice.wait(), 60)
        # Nobody answered; the user opens the link shown in the server's status.
        waiting = next(s for s in statuses if s.state == "starting" and s.message)
        assert waiting.message is not None
        link = waiting.message.split("open ", 1)[1]
        browser.append(asyncio.create_task(play_browser(link)))
        status = await connection.wait_ready(timeout=60)
    finally:
        await connection.stop()
    assert status.state == "running" and len(asked) == 2
    assert [await task for task in browser] == [200]


async def test_a_remote_server_that_does_not_ask_for_oauth_leaves_no_token_file(tmp_path: Path) -> None:
    # The kitchen-sink fixture over streamable HTTP answers without a token.
    process = await asyncio.create_subprocess_exec(sys.executable, str(KITCHEN_SINK), "http", stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.DEVNULL)
    try:
        line = await asyncio.wait_for(process.stdout.readline(), timeout=30)  # type: ignore[union-attr]  # stdout=PIPE
        connection = McpServerConnection(remote(f"http://127.0.0.1:{int(line.split()[1])}/mcp"), policy=FAST,
                                         oauth_dir=tmp_path / "oauth")
        connection.start()
        try:
            assert (await connection.wait_ready(timeout=60)).state == "running"
        finally:
            await connection.stop()
    finally:
        process.kill()
        await process.wait()
    assert not (tmp_path / "oauth").exists()
