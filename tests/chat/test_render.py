"""The pure renderer: crafted AHP states in, terminal text out."""

from __future__ import annotations

import json

from chat.render import (
    Style,
    TurnView,
    partial_input_summary,
    render_confirmation,
    render_history,
    render_input_request,
    render_question,
    render_tool_line,
    render_tool_result,
    render_unified_diff,
    render_usage,
)

PLAIN = Style(color=False)
COLOR = Style(color=True)


def turn(*parts: dict, **extra: object) -> dict:
    return {"id": "t1", "message": {"text": "hi", "origin": {"kind": "user"}}, "responseParts": list(parts), "usage": None, **extra}


def md(content: str, part_id: str = "p1") -> dict:
    return {"kind": "markdown", "id": part_id, "content": content}


def tool(status: str, **fields: object) -> dict:
    return {"kind": "toolCall", "toolCall": {"toolCallId": "c1", "toolName": "shell", "displayName": "Shell", "status": status, **fields}}


def test_turn_view_returns_only_text_that_is_new() -> None:
    view = TurnView(PLAIN)
    assert view.update(turn(md("Hel"))) == "Hel"
    assert view.update(turn(md("Hello wor"))) == "lo wor"
    assert view.update(turn(md("Hello wor"))) == ""
    assert view.update(turn(md("Hello world"), usage={"inputTokens": 1, "outputTokens": 2}, state="complete")) == "ld\n[1 in · 2 out]\n"
    assert view.finished


def test_reasoning_is_dimmed_and_routed_as_activity() -> None:
    view = TurnView(COLOR)
    chunks = view.update_split(turn({"kind": "reasoning", "id": "r1", "content": "hmm"}, md("Answer")))
    assert chunks[0][0] == "activity" and "\x1b[2m" in chunks[0][1]
    assert ("answer", "Answer") in chunks
    assert all(channel == "activity" for channel, text in chunks if "hmm" in text)


def test_tool_calls_are_redrawn_once_per_state_with_running_output_shown_once() -> None:
    view = TurnView(PLAIN)
    assert "preparing" in view.update(turn(tool("streaming", partialInput='{"comm')))
    waiting = view.update(turn(tool("pending-confirmation", invocationMessage="Run ls", toolInput="{}")))
    assert "waiting for confirmation" in waiting
    running = view.update(turn(tool("running", invocationMessage="Run ls", confirmed="user-action", content=[{"type": "text", "text": "a\n"}])))
    assert running == "▶ Shell Run ls\n    a\n"
    more = view.update(turn(tool("running", invocationMessage="Run ls", confirmed="user-action", content=[{"type": "text", "text": "a\nb"}])))
    assert more == "    b"
    done = view.update(turn(tool("completed", invocationMessage="Run ls", success=True, pastTenseMessage="Ran ls", content=[{"type": "text", "text": "a\nb"}])))
    assert done == "\n✓ Shell Ran ls\n"  # the output streamed while running is not repeated
    assert view.update(turn(tool("completed", invocationMessage="Run ls", success=True, pastTenseMessage="Ran ls"))) == ""


def test_failed_and_cancelled_tool_calls_say_why() -> None:
    failed = render_tool_line({"displayName": "Shell", "status": "completed", "success": False, "error": {"message": "exit 2"}}, PLAIN)
    assert failed == "✗ Shell failed: exit 2\n"
    denied = render_tool_line({"displayName": "Shell", "status": "cancelled", "reason": "denied", "reasonMessage": "no"}, PLAIN)
    assert denied == "⊘ Shell denied: no\n"


def test_a_finished_turn_reports_its_error_and_cancellation() -> None:
    failed = {"kind": "error", "error": {"errorType": "rateLimited", "message": "Slow down."}}
    error = TurnView(PLAIN).update(turn(md("x"), failed, state="error"))
    assert error == "x\nerror: Slow down. (rateLimited)\n"
    assert TurnView(PLAIN).update(turn(state="cancelled")) == "(cancelled)\n"


def test_confirmation_lists_options_in_order_with_dividers_between_groups() -> None:
    call = {
        "toolCallId": "c1",
        "displayName": "Shell",
        "status": "pending-confirmation",
        "toolInput": '{"command": "rm -rf build"}',
        "editable": True,
        "options": [
            {"id": "a", "label": "Allow", "kind": "approve", "group": 1},
            {"id": "s", "label": "Allow in session", "kind": "approve", "group": 1},
            {"id": "d", "label": "Deny", "kind": "deny", "group": 2},
        ],
    }
    text, choices = render_confirmation(call, PLAIN)
    assert [c["id"] for c in choices] == ["a", "s", "d"]
    assert text.splitlines() == [
        "? Allow Shell?",
        "  $ rm -rf build",
        "  1) Allow",
        "  2) Allow in session",
        "  ──",
        "  3) Deny",
        "  e) edit the command first",
    ]


def test_confirmation_without_host_options_offers_allow_and_deny() -> None:
    _, choices = render_confirmation({"toolCallId": "c", "status": "pending-confirmation", "toolInput": '{"path": "x"}'}, PLAIN)
    assert choices == [{"label": "Allow", "kind": "approve"}, {"label": "Deny", "kind": "deny"}]


def test_unified_diff_marks_additions_and_removals() -> None:
    diff = render_unified_diff("a.txt", "one\ntwo\n", "one\nthree\n", PLAIN)
    assert diff.splitlines()[:2] == ["--- a/a.txt", "+++ b/a.txt"]
    assert "-two" in diff and "+three" in diff and " one" in diff
    created = render_unified_diff("new.txt", None, "hello\n", PLAIN)
    assert created.startswith("--- /dev/null\n+++ b/new.txt")
    assert "\x1b[32m+hello\x1b[0m" in render_unified_diff("n", None, "hello\n", COLOR)


def test_plain_style_never_emits_escapes_and_host_escapes_are_stripped() -> None:
    hostile = turn(md("safe\x1b]0;pwned\x07 text\x1b[2J"), state="complete")
    text = TurnView(PLAIN).update(hostile)
    assert "\x1b" not in text and "\x07" not in text
    assert "safe" in text and "text" in text


def test_questions_show_options_bounds_and_defaults() -> None:
    question = {"id": "n", "kind": "integer", "message": "How many?", "min": 1, "max": 5, "defaultValue": 2}
    assert render_question(question, PLAIN) == "  How many?\n  [a whole number, min 1, max 5, Enter = 2]> "
    select = {"id": "c", "kind": "multi-select", "message": "Pick", "options": [{"id": "x", "label": "X", "recommended": True}]}
    assert "1) X (recommended)" in render_question(select, PLAIN)
    header = render_input_request({"id": "r", "message": "Sign in", "url": "https://example.test/login"}, PLAIN)
    assert "Sign in" in header and "open: https://example.test/login" in header


def test_history_is_numbered() -> None:
    history = render_history([turn(md("one"), state="complete"), turn(md("two"), state="complete")], PLAIN, first_number=4)
    assert "#4 you: hi\none\n" in history and "#5 you: hi\ntwo\n" in history


def test_usage_is_empty_without_numbers() -> None:
    assert render_usage(None, PLAIN) == ""
    assert render_usage({"inputTokens": 5, "outputTokens": 7, "cacheReadTokens": 3, "model": "m"}, PLAIN) == "[5 in · 7 out · 3 cached · m]\n"


def test_a_finished_result_shows_only_what_it_adds_to_the_streamed_output() -> None:
    view = TurnView(PLAIN)
    view.update(turn(tool("running", invocationMessage="Run ls", content=[{"type": "text", "text": "a\n"}])))
    done = view.update(turn(tool("completed", success=True, pastTenseMessage="Ran ls", content=[{"type": "text", "text": "a\n[exit code 0]"}])))
    assert done == "✓ Shell Ran ls\n    [exit code 0]\n"


def test_a_long_result_is_cut_at_line_and_word_ends_with_a_count() -> None:
    text = "\n".join(f"line {i}" for i in range(20))
    shown = render_tool_result({"content": [{"type": "text", "text": text}]}, PLAIN)
    assert shown.splitlines()[-1].strip() == "… (12 more lines)"
    long_word = "word " * 30 + "x" * 500
    shown = render_tool_result({"content": [{"type": "text", "text": long_word}]}, PLAIN)
    assert "xxx" not in shown and shown.rstrip().endswith("word …")


def test_the_preparing_line_reads_the_partial_input_not_its_json() -> None:
    assert partial_input_summary({"partialInput": '{"command": "ls -la'}) == "ls -la"
    assert partial_input_summary({"partialInput": '{"path": "a.txt", "text": "hi\\nth'}) == "a.txt · text: hi th"
    assert partial_input_summary({"partialInput": '{"patter'}) == ""
    assert "{" not in TurnView(PLAIN).update(turn(tool("streaming", partialInput='{"comm')))


def test_a_call_a_remembered_choice_allowed_says_so_on_its_line() -> None:
    from chat.render import render_tool_line

    call = {"toolCallId": "t1", "toolName": "write_file", "displayName": "Write File", "status": "completed", "success": True,
            "pastTenseMessage": "Wrote a.txt", "confirmed": "setting",
            "_meta": {"rememberedApproval": {"rule": "write_file", "scope": "project", "project": "/work/app"}}}
    assert render_tool_line(call, PLAIN).splitlines()[0] == (
        "✓ Write File Wrote a.txt (allowed without asking by a choice remembered for /work/app: write_file)")
    host_wide = {**call, "_meta": {"rememberedApproval": {"rule": "write_file", "scope": "host"}}}
    assert "remembered host-wide: write_file" in render_tool_line(host_wide, PLAIN)
    assert "remembered" not in render_tool_line({**call, "_meta": {"toolKind": "terminal"}}, PLAIN)


def test_a_running_sub_agent_says_where_to_watch_it_and_its_answer_follows() -> None:
    view = TurnView(PLAIN)
    block = {"type": "subagent", "resource": "ahp-chat://subagent/czE/call_0", "title": "Sub-agent: Look around"}

    def task(status: str, **fields: object) -> dict:
        return {"kind": "toolCall", "toolCall": {"toolCallId": "c1", "toolName": "task", "displayName": "Run Sub-agent",
                                                 "status": status, "invocationMessage": "Start sub-agent: Look around", **fields}}
    running = view.update(turn(task("running", confirmed="not-needed", content=[block])))
    assert running == ("▶ Run Sub-agent Start sub-agent: Look around\n"
                       "    Sub-agent: Look around is working: /chat ahp-chat://subagent/czE/call_0 to watch it\n")
    assert view.update(turn(task("running", confirmed="not-needed", content=[block]))) == ""
    done = view.update(turn(task("completed", success=True, pastTenseMessage="Sub-agent finished: Look around",
                                 content=[block, {"type": "text", "text": "Echo printed hi."}])))
    assert "✓ Run Sub-agent Sub-agent finished: Look around" in done and "Echo printed hi." in done


def test_a_hooks_system_message_is_printed_once_as_a_note_without_escapes() -> None:
    view = TurnView(PLAIN)
    note = {"kind": "systemNotification", "content": "**[block-env]**\nDo not touch .env files.\x1b[2J"}
    chunks = view.update_split(turn(md("Hi."), note))
    (shown,) = [text for channel, text in chunks if channel == "activity" and "block-env" in text]
    assert shown.startswith("ℹ **[block-env]**\nDo not touch .env files.") and "\x1b" not in shown
    assert view.update_split(turn(md("Hi."), note)) == []


def test_a_call_the_turn_end_cut_short_says_how_the_turn_ended() -> None:
    call = {"displayName": "Shell", "status": "cancelled", "reason": "skipped"}
    assert render_tool_line(call, PLAIN, turn_state="cancelled") == "⊘ Shell cancelled with the turn\n"
    assert render_tool_line(call, PLAIN, turn_state="error") == "⊘ Shell stopped: the turn failed\n"
    assert render_tool_line(call, PLAIN) == "⊘ Shell not run: the turn ended first\n"
    view = TurnView(PLAIN)
    shown = view.update(turn({"kind": "toolCall", "toolCall": {"toolCallId": "c", **call}}, state="cancelled"))
    assert shown == "⊘ Shell cancelled with the turn\n(cancelled)\n"


def test_a_confirmation_shows_the_preview_instead_of_the_input_and_the_input_field_by_field_without_one() -> None:
    call = {"toolCallId": "c", "displayName": "Write", "status": "pending-confirmation",
            "toolInput": json.dumps({"path": "a.txt", "content": "one\ntwo", "mode": 420})}
    text, _ = render_confirmation(call, PLAIN, preview="--- a/a.txt\n+++ b/a.txt\n")
    assert text.splitlines() == ["? Allow Write?", "--- a/a.txt", "+++ b/a.txt", "  1) Allow", "  2) Deny"]
    text, _ = render_confirmation(call, PLAIN)
    assert text.splitlines()[1:4] == ["  path: a.txt", "  content: one two", "  mode: 420"]
