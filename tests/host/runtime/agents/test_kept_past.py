"""A chat's conversation kept between turns is the one built from scratch, and rebuilt when what it
was built from changed (host.runtime.agents.kept_past, host.runtime.conversation.repair_after)."""

from __future__ import annotations

from typing import Any

from host.runtime.agents.kept_past import KEPT_CHATS, KeptPast, kept_for
from host.runtime.conversation import history, repair, repair_after
from providers import AssistantMessage, Message, TextPart, ToolCallPart, UserMessage


def _turn(number: int, text: str = "") -> dict[str, Any]:
    return {"id": f"t{number}", "message": {"text": f"question {number}"},
            "responseParts": [{"kind": "markdown", "content": text or f"answer {number}"}]}


def _calling(number: int) -> AssistantMessage:
    return AssistantMessage(parts=(ToolCallPart(tool_call_id=f"c{number}", tool_name="shell", arguments="{}"),))


def _texts(messages: list[Message]) -> list[str]:
    return [f"{m.role}:{m.model_dump_json()}" for m in messages]


def test_turns_added_one_by_one_give_the_conversation_built_from_scratch() -> None:
    kept = KeptPast()
    turns: list[dict[str, Any]] = []
    stored: dict[str, list[Message]] = {}
    for number in range(6):
        turns.append(_turn(number))
        if number % 2:
            # A stored transcript that ends on a dangling tool call, then on a lone user message.
            stored[f"t{number}"] = [UserMessage.of(f"q{number}"), _calling(number)] if number % 4 == 1 else [UserMessage.of(f"q{number}")]
        got = kept.conversation(list(turns), stored, (None, []))
        assert _texts(got) == _texts(repair(history(turns, stored)))


def test_a_transcript_saved_after_its_turn_was_seen_replaces_the_rebuilt_turn() -> None:
    kept = KeptPast()
    turns = [_turn(0), _turn(1)]
    kept.conversation(turns, {}, (None, []))
    stored: dict[str, list[Message]] = {"t0": [UserMessage.of("as stored"), AssistantMessage(parts=(TextPart(text="stored answer"),))]}
    got = kept.conversation([*turns, _turn(2)], stored, (None, []))
    assert "stored answer" in got[1].model_dump_json()
    assert _texts(got) == _texts(repair(history([*turns, _turn(2)], stored)))


def test_a_new_compaction_builds_the_conversation_again_from_its_summary() -> None:
    kept = KeptPast()
    turns = [_turn(0), _turn(1), _turn(2)]
    kept.conversation(turns, {}, (None, []))
    summary = [UserMessage.of("summary of turns 0-1")]
    got = kept.conversation(turns[2:], {}, ((1, "summary of turns 0-1"), summary))
    assert _texts(got) == _texts(repair([*summary, *history(turns[2:], {})]))


def test_changed_turn_states_are_not_taken_for_the_kept_ones() -> None:
    kept = KeptPast()
    kept.conversation([_turn(0), _turn(1)], {}, (None, []))
    fresh = [_turn(0, "edited"), _turn(1), _turn(2)]
    got = kept.conversation(fresh, {}, (None, []))
    assert "edited" in got[1].model_dump_json()


def test_repair_after_a_repaired_prefix_equals_repair_of_the_whole() -> None:
    prefix = repair([UserMessage.of("a"), _calling(1)])  # a dangling call, answered as cancelled
    for added in ([UserMessage.of("b")], [UserMessage.of("b"), _calling(2)], []):
        whole = [*prefix, *added]
        assert _texts(repair_after(prefix, whole)) == _texts(repair(whole))
    ending_with_user = repair([UserMessage.of("a")])
    whole = [*ending_with_user, UserMessage.of("b")]
    assert _texts(repair_after(ending_with_user, whole)) == _texts(repair(whole))
    assert len(repair_after(ending_with_user, whole)) == 1  # the two prompts merged, as repair does
    # Not a prefix by identity: the whole is folded.
    assert _texts(repair_after([UserMessage.of("x")], whole)) == _texts(repair(whole))


def test_an_agent_keeps_the_chats_whose_turns_ran_latest() -> None:
    pasts: dict[str, KeptPast] = {}
    first = kept_for(pasts, "chat-0")
    for number in range(1, KEPT_CHATS + 1):
        kept_for(pasts, f"chat-{number}")
    assert len(pasts) == KEPT_CHATS and "chat-0" not in pasts
    assert kept_for(pasts, "chat-0") is not first
