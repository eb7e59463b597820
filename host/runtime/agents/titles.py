"""A new session's title, made after its first turn.

Contract: ``make_title(source, ctx, model_id, settings)`` asks the model for a short title
(``settings.title == "model"``; the request is bounded by ``TITLE_TIMEOUT``) and falls back to the
message's first words (``first_words``); it returns None when there is nothing to call it. The
caller dispatches it only if no client renamed the session meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from host.resources.workdirs import session_directory
from host.runtime.agents.base import TurnContext
from host.runtime.agents.models import ProviderSource, TurnSettings
from providers import ModelRequest, ModelStream, ProviderError, UserMessage

__all__ = ["make_title", "first_words", "clean_title", "TITLE_TIMEOUT"]

logger = logging.getLogger(__name__)

TITLE_PROMPT = (
    "Write a title of at most six words for a conversation that starts with the user's message "
    "below. Reply with the title only: no quotes, no punctuation at the end."
)
TITLE_TIMEOUT = 30.0


async def make_title(source: ProviderSource, ctx: TurnContext, model_id: str, settings: TurnSettings) -> str | None:
    """The session's title from its first message (see the module docstring)."""
    text = str(ctx.message.get("text") or "")
    title = None
    if settings.title == "model":
        try:
            title = await asyncio.wait_for(_ask(source, ctx, model_id, text, settings), TITLE_TIMEOUT)
        except (ProviderError, TimeoutError):
            title = None
        except Exception:
            logger.exception("title generation failed for %s", ctx.session)
    return title or first_words(text) or None


async def _ask(source: ProviderSource, ctx: TurnContext, model_id: str, text: str, settings: TurnSettings) -> str | None:
    request = ModelRequest(
        model=model_id, system=TITLE_PROMPT, messages=(UserMessage.of(text[:2000]),), max_tokens=64,
        stall_timeout=settings.stall_timeout,
    )
    workdir = session_directory(ctx.state)
    async with source.for_turn(ctx.session, f"{ctx.turn_id}-title", model_id, workdir=str(workdir) if workdir else None) as provider:
        stream = ModelStream.open(provider, request)
        async with contextlib.aclosing(stream):
            async for _ in stream:
                pass
    return clean_title(stream.message().text)


def first_words(text: str, *, words: int = 6, limit: int = 60) -> str:
    """A fallback title: the message's first words."""
    chosen = " ".join(text.split()[:words])
    if len(chosen) > limit:
        chosen = chosen[: limit - 1].rstrip() + "…"
    return chosen


def clean_title(text: str) -> str | None:
    """The first line of a model's answer, without quotes, markup or a "Title:" label."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    line = line.strip("\"'*#` ").rstrip(".")
    if line.lower().startswith("title:"):
        line = line[6:].strip()
    return line[:80] or None
