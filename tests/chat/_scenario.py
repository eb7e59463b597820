"""A test agent for the chat client: each message's first word picks what the turn does.

It implements ``host.runtime.agents.base.Agent`` and only emits the internal model's ``chat/*`` actions
through its ``TurnContext``, so the chat client (AHP 0.2.0, through the host's projection) sees
exactly what a real provider-backed turn would produce. Where a turn
must wait for the user (a confirmation, an input request, a steering message) it waits on the
host's store (the turn's chat), woken by a store observer: no polling, no sleeps.

Words: ``confirm`` (shell-like tool call with five options, editable), ``patch`` (file edit with
an edits preview, editable JSON input; ``patch code`` edits a Python file), ``result`` (result confirmation), ``ask`` (an input request
with every question kind), ``steer`` (waits for a steering message), ``late`` (waits
until a steering message is pending, then ends without taking it in: the host makes it the next
turn), ``slow`` (never finishes on
its own), ``fail`` (ends in error), ``think`` (reasoning then text), ``markdown`` (a heading, bold text, a list and a code
block, streamed in small pieces); anything else streams a
greeting that names the model options and attachments it got.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from host.runtime.agents.base import TurnContext, TurnFailed
from host.state.store import Store

PROVIDER = "scenario"
MODEL_ID = "scene-1"

OPTIONS = [
    {"id": "allow-once", "label": "Allow once", "kind": "approve", "group": 0},
    {"id": "allow-session", "label": "Allow in this session", "kind": "approve", "group": 0},
    {"id": "allow-always", "label": "Always allow", "kind": "approve", "group": 1},
    {"id": "deny", "label": "Deny", "kind": "deny", "group": 2},
    {"id": "deny-reason", "label": "Deny with reason", "kind": "deny", "group": 2},
]

QUESTIONS = [
    {"id": "name", "kind": "text", "message": "Your name?", "required": True},
    {"id": "age", "kind": "integer", "message": "Your age?", "min": 0, "max": 150},
    {"id": "ok", "kind": "boolean", "message": "Proceed?", "defaultValue": True},
    {
        "id": "color",
        "kind": "single-select",
        "message": "Favourite colour?",
        "options": [{"id": "red", "label": "Red"}, {"id": "blue", "label": "Blue"}],
        "allowFreeformInput": True,
    },
    {
        "id": "toppings",
        "kind": "multi-select",
        "message": "Toppings?",
        "options": [{"id": "cheese", "label": "Cheese"}, {"id": "ham", "label": "Ham"}, {"id": "olives", "label": "Olives"}],
    },
]


class ScenarioAgent:
    provider = PROVIDER

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.store: Store | None = None
        """Set by the test once the host exists (the agent waits on it)."""
        self.completed_inputs: list[dict[str, Any]] = []

    def info(self) -> dict[str, Any]:
        return {
            "provider": PROVIDER,
            "displayName": "Scenario agent",
            "description": "Test agent driven by the first word of each message.",
            "models": [
                {
                    "id": MODEL_ID,
                    "provider": PROVIDER,
                    "name": "Scene one",
                    "configSchema": {
                        "type": "object",
                        "properties": {
                            "effort": {"type": "string", "title": "Reasoning effort", "enum": ["low", "high"], "default": "low"}
                        },
                    },
                }
            ],
        }

    async def prepare_session(self, session: str, state: dict[str, Any]) -> None:
        return None

    # -- waiting on the store --------------------------------------------------------------------

    async def _until(self, ctx: TurnContext, check: Callable[[dict[str, Any], dict[str, Any] | None], Any]) -> Any:
        """Wait until ``check(state, envelope)`` returns something truthy; returns it."""
        assert self.store is not None
        found = check(ctx.chat_state, None)
        if found:
            return found
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()

        def observer(channel: str, before: dict[str, Any], after: dict[str, Any], envelope: dict[str, Any]) -> None:
            if channel == ctx.chat and not future.done():
                result = check(after, envelope)
                if result:
                    future.set_result(result)

        self.store.observers.append(observer)
        try:
            return await future
        finally:
            self.store.observers.remove(observer)

    def _call(self, state: dict[str, Any], call_id: str) -> dict[str, Any] | None:
        for part in (state.get("activeTurn") or {}).get("responseParts") or ():
            if part.get("kind") == "toolCall" and part["toolCall"]["toolCallId"] == call_id:
                return part["toolCall"]
        return None

    # -- turns -----------------------------------------------------------------------------------

    async def run_turn(self, ctx: TurnContext) -> None:
        text = str(ctx.message.get("text", ""))
        word = text.split(" ", 1)[0].lower() if text else ""
        handler = {
            "confirm": self._confirm,
            "patch": self._patch,
            "result": self._result,
            "ask": self._ask,
            "steer": self._steer,
            "late": self._late,
            "slow": self._slow,
            "fail": self._fail,
            "think": self._think,
            "markdown": self._markdown,
        }.get(word, self._greet)
        await handler(ctx)

    def _say(self, ctx: TurnContext, *pieces: str) -> None:
        part_id = ctx.new_part_id("text")
        ctx.emit({"type": "chat/responsePart", "part": {"kind": "markdown", "id": part_id, "content": ""}})
        for piece in pieces:
            ctx.emit({"type": "chat/delta", "partId": part_id, "content": piece})

    async def _greet(self, ctx: TurnContext) -> None:
        effort = ((ctx.model or {}).get("config") or {}).get("effort", "low")
        attached = [a.get("label") for a in ctx.message.get("attachments") or ()]
        part_id = ctx.new_part_id("text")
        ctx.emit({"type": "chat/responsePart", "part": {"kind": "markdown", "id": part_id, "content": ""}})
        for piece in ["Hello ", "from the ", "scenario ", "agent", f" (effort {effort})"]:
            await asyncio.sleep(0)  # let each delta go out as its own frame
            ctx.emit({"type": "chat/delta", "partId": part_id, "content": piece})
        if attached:
            ctx.emit({"type": "chat/delta", "partId": part_id, "content": f" with {', '.join(attached)}"})
        ctx.emit({"type": "chat/usage", "usage": {"inputTokens": 3, "outputTokens": 5, "model": MODEL_ID}})

    async def _tool(self, ctx: TurnContext, call_id: str, name: str, tool_input: str, **ready: Any) -> dict[str, Any]:
        """Start a tool call, ask for confirmation, and return the call once it was answered."""
        ctx.emit({"type": "chat/toolCallStart", "toolCallId": call_id, "toolName": name, "displayName": name})
        ctx.emit({"type": "chat/toolCallDelta", "toolCallId": call_id, "content": tool_input})
        ctx.emit({"type": "chat/toolCallReady", "toolCallId": call_id, "toolInput": tool_input, **ready})
        return await self._until(
            ctx, lambda state, _e: (c := self._call(state, call_id)) and c["status"] != "pending-confirmation" and c
        )

    async def _finish_tool(self, ctx: TurnContext, call: dict[str, Any]) -> None:
        call_id = call["toolCallId"]
        if call["status"] == "cancelled":
            self._say(ctx, f"denied ({call.get('reasonMessage') or 'no reason'})")
            return
        option = (call.get("selectedOption") or {}).get("id", "none")
        ctx.emit({"type": "chat/toolCallContentChanged", "toolCallId": call_id, "content": [{"type": "text", "text": "partial output"}]})
        ctx.emit(
            {
                "type": "chat/toolCallComplete",
                "toolCallId": call_id,
                "result": {"success": True, "pastTenseMessage": f"Ran {call['toolInput']}", "content": [{"type": "text", "text": "all good"}]},
            }
        )
        self._say(ctx, f"tool finished via {option}")

    async def _confirm(self, ctx: TurnContext) -> None:
        call = await self._tool(
            ctx,
            "call-1",
            "shell",
            json.dumps({"command": "ls -la"}),
            invocationMessage="Run a shell command",
            confirmationTitle="Run ls -la?",
            editable=True,
            options=OPTIONS,
        )
        await self._finish_tool(ctx, call)

    async def _patch(self, ctx: TurnContext) -> None:
        if "code" in str(ctx.message.get("text", "")):  # "patch code": a Python file
            name, old, new = "greet.py", "def greet():\n    return 1\n", "def greet():\n    return 42\n"
        else:
            name, old, new = "notes.txt", "old line\nsame line\n", "new line\nsame line\n"
        before = self.workdir / name
        after = self.workdir / f".{name}.proposed"
        before.write_text(old)
        after.write_text(new)
        edit = {
            "before": {"uri": before.as_uri(), "content": {"uri": before.as_uri()}},
            "after": {"uri": before.as_uri(), "content": {"uri": after.as_uri()}},
        }
        call = await self._tool(
            ctx,
            "call-2",
            "edit_file",
            json.dumps({"path": name, "text": new}),
            invocationMessage=f"Edit {name}",
            edits={"items": [edit]},
            editable=True,
        )
        await self._finish_tool(ctx, call)

    async def _result(self, ctx: TurnContext) -> None:
        call_id = "call-3"
        ctx.emit({"type": "chat/toolCallStart", "toolCallId": call_id, "toolName": "fetch", "displayName": "fetch"})
        ctx.emit({"type": "chat/toolCallReady", "toolCallId": call_id, "toolInput": "{}", "invocationMessage": "Fetch a page", "confirmed": "not-needed"})
        ctx.emit(
            {
                "type": "chat/toolCallComplete",
                "toolCallId": call_id,
                "requiresResultConfirmation": True,
                "result": {"success": True, "pastTenseMessage": "Fetched a page", "content": [{"type": "text", "text": "page body"}]},
            }
        )
        call = await self._until(
            ctx, lambda state, _e: (c := self._call(state, call_id)) and c["status"] != "pending-result-confirmation" and c
        )
        self._say(ctx, "result accepted" if call["status"] == "completed" else "result rejected")

    async def _ask(self, ctx: TurnContext) -> None:
        ctx.dispatch_chat({"type": "chat/inputRequested", "request": {"id": "req-1", "message": "A few questions", "questions": QUESTIONS}})

        def completed(_state: dict[str, Any], envelope: dict[str, Any] | None) -> Any:
            action = (envelope or {}).get("action") or {}
            return action if action.get("type") == "chat/inputCompleted" and action.get("requestId") == "req-1" else None

        action = await self._until(ctx, completed)
        self.completed_inputs.append(action)
        if action["response"] != "accept":
            self._say(ctx, f"input {action['response']}")
            return
        shown = []
        for question_id, answer in (action.get("answers") or {}).items():
            if answer.get("state") == "skipped":
                shown.append(f"{question_id}=skipped")
                continue
            value = answer["value"]
            shown.append(f"{question_id}={value['value']}" + (f"+{value['freeformValues']}" if value.get("freeformValues") else ""))
        self._say(ctx, "answers: " + " ".join(shown))

    async def _steer(self, ctx: TurnContext) -> None:
        self._say(ctx, "waiting for steering")
        message = await self._until(ctx, lambda state, _e: state.get("steeringMessage"))
        ctx.dispatch_chat({"type": "chat/pendingMessageRemoved", "kind": "steering", "id": message["id"]})
        self._say(ctx, f"steered by: {message['message']['text']}")

    async def _late(self, ctx: TurnContext) -> None:
        self._say(ctx, "finishing up")
        await self._until(ctx, lambda state, _e: state.get("steeringMessage"))
        self._say(ctx, " done")

    async def _slow(self, ctx: TurnContext) -> None:
        self._say(ctx, "working")
        await asyncio.Event().wait()  # until the turn is cancelled

    async def _fail(self, ctx: TurnContext) -> None:
        self._say(ctx, "trying")
        raise TurnFailed("quotaExceeded", "The provider refused: quota exceeded.")

    async def _markdown(self, ctx: TurnContext) -> None:
        text = "# Plan\n\nThis is **important** and `inline`.\n\n- first item\n- second item\n\n```python\ndef greet():\n    return 42\n```\n\nAll done."
        part_id = ctx.new_part_id("text")
        ctx.emit({"type": "chat/responsePart", "part": {"kind": "markdown", "id": part_id, "content": ""}})
        for start in range(0, len(text), 7):
            await asyncio.sleep(0)
            ctx.emit({"type": "chat/delta", "partId": part_id, "content": text[start : start + 7]})

    async def _think(self, ctx: TurnContext) -> None:
        part_id = ctx.new_part_id("reasoning")
        ctx.emit({"type": "chat/responsePart", "part": {"kind": "reasoning", "id": part_id, "content": ""}})
        ctx.emit({"type": "chat/reasoning", "partId": part_id, "content": "pondering deeply"})
        self._say(ctx, "the answer is 42")
