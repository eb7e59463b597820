"""Keeping a conversation inside the model's context window: estimates, cut tool output, compaction.

Pure functions; the turn loop (``host.runtime.agents.provider``) decides when to call them and does the I/O.

* ``estimate_tokens(request)``: a conservative count (about four characters a token over the JSON
  the provider is sent, images at a flat cost). ``TokenMeter`` prefers what the provider reported:
  after a call it knows the real input and output tokens, so the next request is estimated as
  that plus the messages added since.
* ``cut_tool_output(text, limit)``: tool output over ``limit`` characters keeps its head and tail
  with a note in the middle saying how much was left out; the caller stores the whole text and
  names where the model can read it (``read_file`` on the content reference).
* ``compaction_request(...)`` builds the model call that summarises older turns; ``summary_message``
  is what replaces them in later requests (as the first user message, so every provider takes it).
* ``elide_old_tool_results(messages, keep)``: for a single turn that alone outgrows the window,
  replaces the text of all but the last ``keep`` tool-result rounds with a one-line note; the calls
  stay, so the model still knows what it did and can run them again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from ahp.identity_memo import IdentityMemo
from ahp.prefix_memo import PrefixMemo
from providers import ModelRequest, ToolResult, ToolResultsMessage, UserMessage
from providers.messages import Message, MessageAdapter

__all__ = [
    "COMPACT_COMMAND",
    "TokenMeter",
    "compaction_request",
    "cut_tool_output",
    "elide_old_tool_results",
    "estimate_tokens",
    "summary_message",
    "SUMMARY_HEADER",
]

COMPACT_COMMAND = "/compact"
SUMMARY_HEADER = "[Summary of the earlier conversation, written when it was compacted to fit the context window]"
_CHARS_PER_TOKEN = 4
_IMAGE_TOKENS = 1_500

_COMPACT_SYSTEM = (
    "You are compacting a coding session so it can continue within a limited context window. "
    "Write a summary another engineer could pick the work up from, without the conversation."
)
_COMPACT_INSTRUCTIONS = (
    "Summarise the conversation above. Keep: the user's goals and explicit requests (quote them); "
    "decisions made and why; files read, created or changed (paths) and what changed; commands run "
    "and their important results or errors; what is done, what is in progress and the next steps. "
    "Leave out pleasantries and tool output that no longer matters. Use short sections and lists."
)


def _message_chars(message: Message) -> tuple[int, int]:
    data = MessageAdapter.dump_python(message, mode="json")
    images = 0
    for item in data.get("content") or ():
        if isinstance(item, dict) and item.get("type") == "image":
            images += 1
            item["data"] = ""
    return len(json.dumps(data, ensure_ascii=False)), images


_chars = IdentityMemo(_message_chars, 16_384)
"""A message's JSON characters and images, once per message (``ahp.identity_memo``: messages are
frozen). Every request is estimated over the whole conversation, so this makes a long session's
estimate cost what its new messages cost; a few long sessions' messages are kept."""


def _estimate(message: Message) -> tuple[int]:
    chars, images = _chars(message)
    return (chars // _CHARS_PER_TOKEN + images * _IMAGE_TOKENS,)


_estimates: PrefixMemo[Message, int] = PrefixMemo(_estimate, 64)
"""A conversation's estimates, message by message, worked out for the messages added since it was
last estimated only (``ahp.prefix_memo``): a long session's request costs what its new messages do.
The 64 conversations asked about latest are held (as many as an agent keeps, ``kept_past``)."""


def estimate_messages(messages: Sequence[Message]) -> int:
    return sum(_estimates(messages))


def estimate_tokens(request: ModelRequest) -> int:
    """A conservative token count for ``request`` before anything was reported."""
    tools = sum(len(json.dumps(t.model_dump(mode="json"))) for t in request.tools) // _CHARS_PER_TOKEN
    system = len(request.system or "") // _CHARS_PER_TOKEN
    return system + tools + estimate_messages(request.messages) + (request.max_tokens or 0)


@dataclass
class TokenMeter:
    """What the last model call of a session really used, to estimate the next one."""

    input_tokens: int = 0
    output_tokens: int = 0
    messages_sent: int = 0

    def record(self, request: ModelRequest, input_tokens: int, output_tokens: int) -> None:
        if input_tokens:
            self.input_tokens, self.output_tokens, self.messages_sent = input_tokens, output_tokens, len(request.messages)

    def estimate(self, request: ModelRequest) -> int:
        """Reported tokens of the last call plus the estimate of what was added since, or the
        plain estimate when that is larger (or nothing was reported)."""
        plain = estimate_tokens(request)
        if not self.input_tokens or self.messages_sent > len(request.messages):
            return plain
        added = estimate_messages(request.messages[self.messages_sent :])
        return max(plain, self.input_tokens + self.output_tokens + added + (request.max_tokens or 0))

    def forget(self) -> None:
        self.input_tokens = self.output_tokens = self.messages_sent = 0


def cut_tool_output(text: str, limit: int) -> tuple[str, int]:
    """``text`` cut to about ``limit`` characters (head and tail kept) and how many were left out."""
    if len(text) <= limit:
        return text, 0
    head = int(limit * 0.6)
    tail = limit - head
    left_out = len(text) - head - tail
    return text[:head] + f"\n\n[… {left_out} characters left out …]\n\n" + text[len(text) - tail :], left_out


def summary_message(summary: str) -> UserMessage:
    return UserMessage.of(f"{SUMMARY_HEADER}\n\n{summary.strip()}")


def compaction_request(
    model: str, messages: Sequence[Message], *, focus: str | None, max_tokens: int, stall_timeout: float | None
) -> ModelRequest:
    instructions = _COMPACT_INSTRUCTIONS
    if focus:
        instructions += f"\n\nThe user asked the summary to focus on: {focus.strip()}"
    return ModelRequest(
        model=model,
        system=_COMPACT_SYSTEM,
        messages=(*messages, UserMessage.of(instructions)),
        max_tokens=max_tokens,
        stall_timeout=stall_timeout,
    )


def elide_old_tool_results(messages: Sequence[Message], keep: int) -> tuple[list[Message], int]:
    """Messages with the text of all but the last ``keep`` tool-result rounds replaced by a note,
    and how many results were elided."""
    rounds = [i for i, m in enumerate(messages) if isinstance(m, ToolResultsMessage)]
    old = set(rounds[: max(0, len(rounds) - keep)])
    elided = 0
    out: list[Message] = []
    for index, message in enumerate(messages):
        if index in old and isinstance(message, ToolResultsMessage):
            results = []
            for result in message.results:
                if result.text.startswith("[Output elided"):
                    results.append(result)
                    continue
                elided += 1
                results.append(ToolResult.of(
                    result.tool_call_id, result.tool_name,
                    "[Output elided to keep the conversation within the context window; run the tool again if you need it.]",
                    is_error=result.is_error,
                ))
            out.append(ToolResultsMessage(results=tuple(results)))
        else:
            out.append(message)
    return out, elided
