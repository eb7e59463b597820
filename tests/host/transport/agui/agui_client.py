"""Test helpers: POST a RunAgentInput to a running host's /agui and read the SSE stream back as
validated AG-UI events (each ``data:`` line must parse as an ``ag_ui.core.Event``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from ag_ui.core import Event
from pydantic import TypeAdapter

from tests.conftest import TOKEN

_EVENT = TypeAdapter(Event)


def run_input(thread: str, run: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": run, "messages": messages, **extra}


def user(message_id: str, text: str) -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": text}


def parse_sse(lines: list[str]) -> list[dict[str, Any]]:
    events = []
    for line in lines:
        if line.startswith("data: "):
            payload = json.loads(line[6:])
            _EVENT.validate_python(payload)  # the stream carries only valid AG-UI events
            events.append(payload)
    return events


@asynccontextmanager
async def open_run(base_url: str, body: dict[str, Any], *, token: str | None = TOKEN, headers: dict[str, str] | None = None) -> AsyncIterator[httpx.Response]:
    sent = {"Accept": "text/event-stream", **(headers or {})}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    async with httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as client:
        async with client.stream("POST", f"{base_url}/agui", json=body, headers=sent) as response:
            yield response


async def events_of(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    async for line in response.aiter_lines():
        if line.startswith("data: "):
            yield parse_sse([line])[0]


async def run(base_url: str, body: dict[str, Any], **kwargs: Any) -> list[dict[str, Any]]:
    """The whole event stream of one run (asserts HTTP 200 and an SSE content type)."""
    async with open_run(base_url, body, **kwargs) as response:
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"].startswith("text/event-stream")
        return [event async for event in events_of(response)]


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def compact(events: list[dict[str, Any]]) -> list[str]:
    """Event types with runs of the same content event collapsed into one."""
    out: list[str] = []
    for kind in types(events):
        if kind.endswith(("_CONTENT", "_ARGS")) and out and out[-1] == kind:
            continue
        out.append(kind)
    return out
