"""The embedded offline agent: a newcomer's first host works with no provider key and no network.

It answers every message with a short streamed explanation of what the host is and how to
connect a real provider, word by word, as ``chat/responsePart`` + ``chat/delta`` actions,
followed by ``chat/usage``. Its output depends only on the message, so tests can assert it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ahp.protocol import builders
from host.runtime.agents.base import TurnContext

__all__ = ["OfflineAgent", "OFFLINE_PROVIDER"]

OFFLINE_PROVIDER = "offline"
_MODEL_ID = "offline-echo"


def answer_for(text: str) -> str:
    quoted = " ".join(text.split())
    if len(quoted) > 200:
        quoted = quoted[:197] + "..."
    return (
        f'You said: "{quoted}"\n\n'
        "I am the agent host's built-in offline agent: I run without a provider key or network, "
        "so I can only echo what you send. Configure an OpenAI, Anthropic or LiteLLM agent in the "
        "host's config file (see config.example.toml) to talk to a real model."
    )


class OfflineAgent:
    provider = OFFLINE_PROVIDER

    def __init__(self, *, delay: float = 0.01) -> None:
        self._delay = delay

    def info(self) -> dict[str, Any]:
        return {
            "provider": OFFLINE_PROVIDER,
            "displayName": "Offline demo agent",
            "description": "Built-in agent that works without a provider key; it echoes your message.",
            "models": [
                {
                    "id": _MODEL_ID,
                    "provider": OFFLINE_PROVIDER,
                    "name": "Offline echo",
                    "maxContextWindow": 8192,
                    "supportsVision": False,
                }
            ],
        }

    async def prepare_session(self, session: str, state: dict[str, Any]) -> None:
        return None

    async def run_turn(self, ctx: TurnContext) -> None:
        text = answer_for(str(ctx.message.get("text", "")))
        part_id = ctx.new_part_id("text")
        ctx.emit(builders.chat_response_part(turn_id=ctx.turn_id, part={"kind": "markdown", "id": part_id, "content": ""}))
        words = text.split(" ")
        for index, word in enumerate(words):
            await asyncio.sleep(self._delay)
            ctx.emit(builders.chat_delta(turn_id=ctx.turn_id, part_id=part_id, content=word if index == 0 else " " + word))
        ctx.emit(builders.chat_usage(turn_id=ctx.turn_id, usage={
            "inputTokens": len(str(ctx.message.get("text", "")).split()),
            "outputTokens": len(words),
            "model": _MODEL_ID,
        }))
