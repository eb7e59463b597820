"""A scripted provider for tests and demos: plays given events, records what it was asked.

Contract: each call to :meth:`ScriptedProvider.stream` consumes the next :class:`Script` (or
calls the ``respond`` function with the request) and yields its events in order, after
folding them into a :class:`providers.accumulator.StreamAccumulator`, so a malformed
script fails the same way a malformed provider stream would, and the returned
:class:`providers.stream.ModelStream` answers with the message they built. Steps may be neutral events,
:class:`Pause` (wait seconds, or until an ``asyncio.Event`` is set) or a
:class:`providers.errors.ProviderError` to raise. Every request is appended to
:attr:`ScriptedProvider.requests` before anything is yielded.

:func:`text`, :func:`reasoning` and :func:`tool_call` build the event runs for whole parts.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .accumulator import StreamAccumulator
from .errors import ProviderError
from .events import Finish, FinishReason, PartDelta, PartEnd, PartStart, StreamEvent, Usage, UsageReport
from .messages import ModelRequest
from .stream import ModelStream


@dataclass(frozen=True)
class Pause:
    """Wait before the next step: ``seconds``, or until ``event`` is set (whichever is given)."""

    seconds: float = 0.0
    event: asyncio.Event | None = None


Step = StreamEvent | Pause | ProviderError


@dataclass(frozen=True)
class Script:
    """The steps of one model call."""

    steps: tuple[Step, ...]


class _Counter:
    def __init__(self) -> None:
        self.next = 0

    def take(self) -> int:
        self.next += 1
        return self.next - 1


def text(content: str | Sequence[str], *, index: int) -> list[StreamEvent]:
    """A text part at ``index`` streamed as the given chunks."""
    chunks = [content] if isinstance(content, str) else list(content)
    return [
        PartStart(index=index, part_kind="text"),
        *(PartDelta(index=index, part_kind="text", content=c) for c in chunks),
        PartEnd(index=index, part_kind="text"),
    ]


def reasoning(content: str | Sequence[str], *, index: int) -> list[StreamEvent]:
    """A reasoning part at ``index`` streamed as the given chunks."""
    chunks = [content] if isinstance(content, str) else list(content)
    return [
        PartStart(index=index, part_kind="reasoning"),
        *(PartDelta(index=index, part_kind="reasoning", content=c) for c in chunks),
        PartEnd(index=index, part_kind="reasoning"),
    ]


def tool_call(
    tool_name: str, arguments: Any, *, index: int, tool_call_id: str | None = None, chunk_size: int = 0
) -> list[StreamEvent]:
    """A tool-call part; ``arguments`` is JSON-encoded unless already a string."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    size = chunk_size or len(raw) or 1
    chunks = [raw[i : i + size] for i in range(0, len(raw), size)]
    return [
        PartStart(index=index, part_kind="tool_call", tool_call_id=tool_call_id or f"call_{index}", tool_name=tool_name),
        *(PartDelta(index=index, part_kind="tool_call", content=c) for c in chunks),
        PartEnd(index=index, part_kind="tool_call"),
    ]


def finish(reason: FinishReason = "stop", *, input_tokens: int = 0, output_tokens: int = 0) -> list[StreamEvent]:
    """Usage (if any tokens are given) followed by ``Finish``."""
    usage: list[StreamEvent] = []
    if input_tokens or output_tokens:
        usage.append(UsageReport(usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens)))
    return [*usage, Finish(reason=reason, model="scripted")]


def reply(text_content: str, *, reasoning_text: str | None = None) -> Script:
    """A whole call answering with text (after optional reasoning), finishing with ``stop``."""
    steps: list[Step] = []
    if reasoning_text is not None:
        steps += reasoning(reasoning_text, index=0)
    steps += text(text_content, index=1 if reasoning_text is not None else 0)
    return Script((*steps, *finish("stop")))


def call_tools(*calls: tuple[str, Any], text_before: str | None = None) -> Script:
    """A whole call requesting ``(tool_name, arguments)`` calls, finishing with ``tool_calls``."""
    steps: list[Step] = []
    counter = _Counter()
    if text_before is not None:
        steps += text(text_before, index=counter.take())
    for name, arguments in calls:
        steps += tool_call(name, arguments, index=counter.take())
    return Script((*steps, *finish("tool_calls")))


class ScriptExhaustedError(ProviderError):
    """The scripted provider was called more often than it has scripts."""

    error_type = "scripted_exhausted"


class ScriptedProvider:
    """Plays scripts in order (or asks ``respond``); see the module docstring."""

    name = "scripted"
    api = "scripted"

    def __init__(
        self,
        scripts: Iterable[Script | Sequence[Step]] = (),
        *,
        respond: Callable[[ModelRequest], Script | Sequence[Step]] | None = None,
    ) -> None:
        self._scripts = [s if isinstance(s, Script) else Script(tuple(s)) for s in scripts]
        self._respond = respond
        self.requests: list[ModelRequest] = []
        """Every request received, in order."""

    def add(self, script: Script | Sequence[Step]) -> None:
        """Queue another call's script."""
        self._scripts.append(script if isinstance(script, Script) else Script(tuple(script)))

    async def aclose(self) -> None:
        return None

    def stream(self, request: ModelRequest) -> ModelStream:
        checker = StreamAccumulator(api="scripted", provider=self.name)
        return ModelStream(self._play(request, checker), checker)

    async def _play(self, request: ModelRequest, checker: StreamAccumulator) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        script = self._next(request)
        for step in script.steps:
            if isinstance(step, Pause):
                if step.event is not None:
                    await step.event.wait()
                else:
                    await asyncio.sleep(step.seconds)
            elif isinstance(step, ProviderError):
                raise step
            else:
                checker.apply(step)
                yield step

    def _next(self, request: ModelRequest) -> Script:
        if self._scripts:
            return self._scripts.pop(0)
        if self._respond is not None:
            result = self._respond(request)
            return result if isinstance(result, Script) else Script(tuple(result))
        raise ScriptExhaustedError(
            f"The scripted provider has no response left for call {len(self.requests)}.", provider=self.name
        )
