"""scripts/merge_turn_cassettes.py: an older per-turn recording becomes one session cassette, turns in
the order they were written, the title request apart, the recording folder written ``${cwd}``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import httpx2

from providers.cassette import RecordingTransport
from providers.session_cassette import read_cassette
from scripts.merge_turn_cassettes import main
from tests.providers.fake_server import FakeProviderServer, Reply, chat_sse


async def record(path: Path, base_url: str, user: str) -> None:
    async with httpx2.AsyncClient(transport=RecordingTransport(path, httpx2.AsyncHTTPTransport())) as client:
        body = {"model": "m", "messages": [{"role": "user", "content": user}], "stream": True}
        async with client.stream("POST", f"{base_url}/chat/completions", json=body) as response:
            await response.aread()


async def test_turn_files_merge_into_one_session_cassette_in_the_order_they_were_written(tmp_path: Path) -> None:
    folder = tmp_path / "recorded" / "fake" / "session-1"
    replies = [Reply(200, chat_sse("first")), Reply(200, chat_sse("title")), Reply(200, chat_sse("second"))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        await record(folder / "zz-turn.yaml", server.base_url, "read /home/ana/shop/a.py")
        await record(folder / "zz-turn-title.yaml", server.base_url, "title please")
        await record(folder / "aa-turn.yaml", server.base_url, "and again")
    for age, name in enumerate(["aa-turn.yaml", "zz-turn-title.yaml", "zz-turn.yaml"]):  # names sort against the order
        os.utime(folder / name, (1_000_000 - age, 1_000_000 - age))

    assert main([str(folder), "--cwd", "/home/ana/shop"]) == 0
    cassette = read_cassette(folder.with_suffix(".yaml"))
    assert cassette.kind == "openai-chat" and cassette.base_url == "http://127.0.0.1/v1"
    assert [calls[0].body["messages"][0]["content"] for calls in cassette.turns] == ["read ${cwd}/a.py", "and again"]
    assert cassette.title is not None and cassette.title.body["messages"][0]["content"] == "title please"
    assert isinstance(cassette.turns[1][0].response, str) and '"content": "second"' in cassette.turns[1][0].response
    assert json.dumps(cassette.turns[0][0].body).count("/home/ana") == 0
