"""`ask_user`: builds an AHP input request, awaits the host's answer, reports it."""

from __future__ import annotations

from tests.tools.wire import assert_wire, validate_wire
from tools.base import ToolContext
from tools.builtin.ask_user import AskUserTool

QUESTIONS = [
    {"id": "db", "kind": "single-select", "message": "Which database?", "options": [
        {"id": "pg", "label": "PostgreSQL", "recommended": True}, {"id": "sqlite", "label": "SQLite"}]},
    {"id": "name", "kind": "text", "message": "Project name?", "required": True},
    {"id": "tests", "kind": "boolean", "message": "Add tests?", "defaultValue": True},
]


async def test_accepted_answers_are_returned(workspace):
    asked = []

    async def ask(request):
        asked.append(request)
        return {"response": "accept", "answers": {
            "db": {"state": "submitted", "value": {"kind": "selected", "value": "pg"}},
            "name": {"state": "submitted", "value": {"kind": "text", "value": "demo"}},
            "tests": {"state": "skipped"},
        }}

    ctx = ToolContext(workspace, ask=ask, tool_call_id="tc7")
    result = await AskUserTool().call({"message": "Setup", "questions": QUESTIONS}, ctx)
    (request,) = asked
    validate_wire("SessionInputRequest", request)
    assert request["id"] == "ask-tc7" and request["message"] == "Setup"
    assert result["success"] is True
    assert result["content"][0]["text"] == (
        "The user answered:\nWhich database? → pg\nProject name? → demo\nAdd tests? → (skipped)"
    )
    assert result["structuredContent"]["response"] == "accept"
    assert_wire("ToolCallResult", result)


async def test_decline_and_cancel(workspace):
    async def decline(request):
        return {"response": "decline"}

    async def cancel(request):
        return {"response": "cancel"}

    args = {"questions": QUESTIONS[:1]}
    declined = await AskUserTool().call(args, ToolContext(workspace, ask=decline))
    assert declined["success"] is True and "declined" in declined["content"][0]["text"]
    cancelled = await AskUserTool().call(args, ToolContext(workspace, ask=cancel))
    assert cancelled["success"] is False and cancelled["error"]["code"] == "cancelled"


async def test_without_a_client_to_ask_it_fails_clearly(ctx):
    result = await AskUserTool().call({"questions": QUESTIONS[:1]}, ctx)
    assert result["error"] == {"message": "No client is connected that can answer questions.", "code": "input_unavailable"}


async def test_malformed_questions_are_explained(workspace):
    async def never(request):
        raise AssertionError("must not ask")

    ctx = ToolContext(workspace, ask=never)
    cases = [
        ([{"id": "a", "kind": "single-select", "message": "?"}], "a single-select question needs options"),
        ([{"id": "a", "kind": "text", "message": "?"}, {"id": "a", "kind": "text", "message": "!"}], "question ids must be unique"),
        ([{"id": "a", "kind": "boolean", "message": "?", "options": [{"id": "x", "label": "X"}]}], "options not allowed for a boolean question"),
        ([{"id": "a", "kind": "integer", "message": "?", "defaultValue": "3"}], "defaultValue does not fit a integer question"),
        ([{"id": "a", "kind": "color", "message": "?"}], "must be one of 'text'"),
        ([], "must have at least 1 item"),
    ]
    for questions, expected in cases:
        result = await AskUserTool().call({"questions": questions}, ctx)
        assert result["success"] is False and expected in result["error"]["message"], (questions, result)
