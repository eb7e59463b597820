"""The one tool-result renderer: what the model, an AG-UI front end and the terminal read."""

from __future__ import annotations

from ahp.tool_results import content_text, result_text


def test_text_structured_content_and_errors_read_as_the_tool_meant():
    assert result_text({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}) == "a\nb"
    assert result_text({"structuredContent": {"x": 1}}) == '{"x": 1}'
    assert result_text({"success": False, "error": {"message": "boom"}}) == "boom"
    assert result_text({"success": True, "pastTenseMessage": "Ran it"}) == "Ran it"
    assert result_text({"success": True, "pastTenseMessage": {"markdown": "Ran **it**"}}) == "Ran **it**"


def test_a_failure_with_output_keeps_both_the_output_and_the_error():
    result = {"success": False, "content": [{"type": "text", "text": "exit 2"}], "error": {"message": "failed"}}
    assert result_text(result) == "exit 2\nError: failed"


def test_an_error_the_output_already_states_is_not_repeated():
    result = {"success": False, "content": [{"type": "text", "text": "Rejected."}], "error": {"message": "Rejected."}}
    assert result_text(result) == "Rejected."


def test_a_result_with_nothing_in_it_still_says_how_it_ended():
    assert result_text({"success": True}) == "Done."
    assert result_text({"success": False}) == "The tool failed."


def test_every_content_kind_has_a_readable_line_and_unknown_ones_are_skipped():
    items = [
        {"type": "fileEdit", "after": {"uri": "file:///p/a.py"}, "diff": {"added": 2, "removed": 1}},
        {"type": "fileEdit", "before": {"uri": "file:///p/gone.py"}},
        {"type": "resource", "uri": "file:///p/big.log"},
        {"type": "embeddedResource", "data": "AAA", "contentType": "image/png"},
        {"type": "terminal", "resource": "ahp-terminal:/t1", "title": "npm test"},
        {"type": "subagent", "resource": "ahp-session:/child", "title": "Explore"},
        {"type": "hologram", "text": "ignored"},
        "not an object",
    ]
    assert content_text(items).splitlines() == [
        "[edited file:///p/a.py (+2 -1)]",
        "[edited file:///p/gone.py]",
        "[file:///p/big.log]",
        "[embedded image/png]",
        "[terminal npm test]",
        "[subagent Explore]",
    ]
