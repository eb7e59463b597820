"""MCP elicitation schemas → AHP input requests, and answers → ElicitResult."""

from __future__ import annotations

import mcp_types as types

from tools.mcp import elicit_result, input_request

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "description": "Your name", "minLength": 1, "maxLength": 40},
        "email": {"type": "string", "format": "email"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
        "ratio": {"type": "number"},
        "ok": {"type": "boolean", "default": True},
        "colour": {"type": "string", "enum": ["r", "g"], "enumNames": ["Red", "Green"], "default": "g"},
        "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 2},
    },
    "required": ["name", "colour"],
}


def _form(schema=SCHEMA, message="Tell me") -> types.ElicitRequestFormParams:
    return types.ElicitRequestFormParams(mode="form", message=message, requestedSchema=schema)


def test_schema_properties_become_questions_of_the_matching_kind() -> None:
    request = input_request("req-1", _form())
    assert request["id"] == "req-1" and request["message"] == "Tell me"
    assert request["questions"] == [
        {"id": "name", "message": "Your name", "title": "Name", "required": True, "kind": "text", "min": 1, "max": 40},
        {"id": "email", "message": "email", "kind": "text", "format": "email"},
        {"id": "age", "message": "age", "kind": "integer", "min": 0, "max": 150, "defaultValue": 30},
        {"id": "ratio", "message": "ratio", "kind": "number"},
        {"id": "ok", "message": "ok", "kind": "boolean", "defaultValue": True},
        {"id": "colour", "message": "colour", "required": True, "kind": "single-select",
         "options": [{"id": "r", "label": "Red"}, {"id": "g", "label": "Green", "recommended": True}]},
        {"id": "size", "message": "size", "kind": "single-select",
         "options": [{"id": "s", "label": "Small"}, {"id": "l", "label": "Large"}]},
        {"id": "tags", "message": "tags", "kind": "multi-select", "max": 2,
         "options": [{"id": "a", "label": "a"}, {"id": "b", "label": "b"}]},
    ]


def test_url_elicitation_carries_the_url_and_no_questions() -> None:
    params = types.ElicitRequestURLParams(mode="url", message="Sign in", url="https://auth.example/x", elicitationId="e1")
    assert input_request("r", params) == {"id": "r", "message": "Sign in", "url": "https://auth.example/x"}
    assert elicit_result({"response": "accept"}, params) == types.ElicitResult(action="accept")


def _submitted(kind: str, value, **extra) -> dict:
    return {"state": "submitted", "value": {"kind": kind, "value": value, **extra}}


def test_accepted_answers_are_converted_to_the_schema_types() -> None:
    reply = {
        "response": "accept",
        "answers": {
            "name": _submitted("text", "Ann"),
            "age": _submitted("number", 41.0),
            "ratio": _submitted("number", 0.5),
            "ok": _submitted("boolean", False),
            "colour": _submitted("selected", "r"),
            "size": _submitted("selected", "", freeformValues=["medium"]),
            "tags": _submitted("selected-many", ["a", "b"]),
            "email": {"state": "skipped"},
            "unknown": _submitted("text", "ignored"),
        },
    }
    result = elicit_result(reply, _form())
    assert result.action == "accept"
    assert result.content == {"name": "Ann", "age": 41, "ratio": 0.5, "ok": False, "colour": "r",
                              "size": "medium", "tags": ["a", "b"]}
    assert isinstance(result.content["age"], int)


def test_decline_and_cancel_pass_through_and_anything_else_cancels() -> None:
    assert elicit_result({"response": "decline"}, _form()).action == "decline"
    assert elicit_result({"response": "cancel", "answers": {}}, _form()).action == "cancel"
    assert elicit_result({}, _form()).action == "cancel"
