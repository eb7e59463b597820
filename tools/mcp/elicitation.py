"""MCP elicitation ↔ AHP session input requests.

Contract:
* `input_request(request_id, params)` builds an AHP `SessionInputRequest` dict from MCP
  elicitation params. Form mode: one question per property of `requestedSchema`, in
  declaration order, id = the property name, `required` from the schema's `required`:
  `string` → `text` (format, minLength/maxLength → min/max, default); `number` /
  `integer` → the same kind (minimum/maximum, default); `boolean` → `boolean`; a string
  with `enum` (labels from `enumNames`) or `oneOf`/`anyOf` of `{const, title}` →
  `single-select`; an array whose items are such an enum → `multi-select`. The title of
  a property is the question title; its description (else title, else name) is the
  message. URL mode: `message` and `url`, no questions.
* `elicit_result(reply, params)` maps the host's `{response, answers?}` back: `accept`
  gives `ElicitResult(action="accept", content=...)` with one value per answered
  question, converted to the schema's type (integers stay integers); skipped or missing
  answers are left out so the server applies its own defaults and validation;
  `decline` and `cancel` pass through; anything else is `cancel`.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

__all__ = ["input_request", "elicit_result", "questions_from_schema"]


def _options(schema: dict) -> list[dict] | None:
    if isinstance(schema.get("enum"), list):
        labels = schema.get("enumNames")
        values = [str(value) for value in schema["enum"]]
        if isinstance(labels, list) and len(labels) == len(values):
            return [{"id": value, "label": str(label)} for value, label in zip(values, labels)]
        return [{"id": value, "label": value} for value in values]
    for key in ("oneOf", "anyOf"):
        choices = schema.get(key)
        if isinstance(choices, list) and choices and all(isinstance(c, dict) and "const" in c for c in choices):
            return [{"id": str(c["const"]), "label": str(c.get("title", c["const"]))} for c in choices]
    return None


def _question(name: str, schema: dict, required: bool) -> dict:
    title = schema.get("title")
    question: dict[str, Any] = {"id": name, "message": str(schema.get("description") or title or name)}
    if title:
        question["title"] = str(title)
    if required:
        question["required"] = True
    kind = schema.get("type")
    default = schema.get("default")
    options = _options(schema)
    if kind == "array" and isinstance(schema.get("items"), dict) and _options(schema["items"]):
        question.update(kind="multi-select", options=_options(schema["items"]))
        for source, target in (("minItems", "min"), ("maxItems", "max")):
            if isinstance(schema.get(source), (int, float)):
                question[target] = schema[source]
        return question
    if options is not None:
        question.update(kind="single-select", options=options)
        if default is not None:
            for option in options:
                if option["id"] == str(default):
                    option["recommended"] = True
        return question
    if kind in ("number", "integer"):
        question["kind"] = kind
        for source, target in (("minimum", "min"), ("maximum", "max")):
            if isinstance(schema.get(source), (int, float)):
                question[target] = schema[source]
        if isinstance(default, (int, float)) and not isinstance(default, bool):
            question["defaultValue"] = default
        return question
    if kind == "boolean":
        question["kind"] = "boolean"
        if isinstance(default, bool):
            question["defaultValue"] = default
        return question
    question["kind"] = "text"
    if isinstance(schema.get("format"), str):
        question["format"] = schema["format"]
    for source, target in (("minLength", "min"), ("maxLength", "max")):
        if isinstance(schema.get(source), int):
            question[target] = schema[source]
    if isinstance(default, str):
        question["defaultValue"] = default
    return question


def questions_from_schema(schema: dict) -> list[dict]:
    """AHP questions for an elicitation's `requestedSchema` (see the module contract)."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return []
    required = set(schema.get("required") or ())
    return [_question(name, prop if isinstance(prop, dict) else {}, name in required)
            for name, prop in properties.items()]


def input_request(request_id: str, params: types.ElicitRequestParams) -> dict:
    """The AHP `SessionInputRequest` for an MCP elicitation."""
    request: dict[str, Any] = {"id": request_id}
    if params.message:
        request["message"] = params.message
    if isinstance(params, types.ElicitRequestURLParams):
        request["url"] = params.url
        return request
    questions = questions_from_schema(params.requested_schema)
    if questions:
        request["questions"] = questions
    return request


def _convert(value: dict, schema: dict) -> Any:
    kind = value.get("kind")
    raw = value.get("value")
    if kind == "selected":
        free = value.get("freeformValues") or []
        return raw if raw not in (None, "") else (free[0] if free else None)
    if kind == "selected-many":
        return [str(item) for item in (raw or [])] + [str(item) for item in value.get("freeformValues") or []]
    if kind == "number":
        if schema.get("type") == "integer" and isinstance(raw, float) and raw.is_integer():
            return int(raw)
        return raw
    return raw


def elicit_result(reply: dict, params: types.ElicitRequestParams) -> types.ElicitResult:
    """The MCP `ElicitResult` for the host's `{response, answers?}` reply."""
    response = reply.get("response") if isinstance(reply, dict) else None
    if response in ("decline", "cancel"):
        return types.ElicitResult(action=response)
    if response != "accept":
        return types.ElicitResult(action="cancel")
    if isinstance(params, types.ElicitRequestURLParams):
        return types.ElicitResult(action="accept")
    properties = (params.requested_schema or {}).get("properties") or {}
    content: dict[str, Any] = {}
    for question_id, answer in (reply.get("answers") or {}).items():
        if question_id not in properties or not isinstance(answer, dict) or answer.get("state") == "skipped":
            continue
        value = answer.get("value")
        if not isinstance(value, dict):
            continue
        converted = _convert(value, properties[question_id] if isinstance(properties[question_id], dict) else {})
        if converted is not None:
            content[question_id] = converted
    return types.ElicitResult(action="accept", content=content)
