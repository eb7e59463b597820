"""`ask_user`: ask the user structured questions and wait for the answers.

Contract: the model supplies AHP `SessionInputQuestion`s (kinds `text`, `number`,
`integer`, `boolean`, `single-select`, `multi-select`) and an optional overall message.
The call builds a `SessionInputRequest{id, message?, questions}` and awaits
`ctx.ask(request)`, which the host implements with `session/inputRequested` and resolves
from `session/inputCompleted` as `{"response": "accept"|"decline"|"cancel", "answers"?}`
(answers keyed by question id, AHP `SessionInputAnswer` shape). Accept and decline are
successful results (the user did respond); cancel, or no way to ask, is a failure.
The request id is `ask-<toolCallId>` when the host gave one, else random.
"""

from __future__ import annotations

import uuid
from typing import Any

from ..base import Tool, ToolContext, failure_result, success_result
from ..content import text_content
from ..errors import ToolInputError

__all__ = ["AskUserTool", "QUESTION_KINDS"]

QUESTION_KINDS = ("text", "number", "integer", "boolean", "single-select", "multi-select")
"""The AHP `SessionInputQuestionKind` values."""

_OPTION_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "label": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "recommended": {"type": "boolean"},
    },
    "required": ["id", "label"],
    "additionalProperties": False,
}

_QUESTION_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "minLength": 1, "description": "Stable id; answers are keyed by it."},
        "kind": {"type": "string", "enum": list(QUESTION_KINDS)},
        "message": {"type": "string", "minLength": 1, "description": "The question shown to the user."},
        "title": {"type": "string"},
        "required": {"type": "boolean"},
        "options": {"type": "array", "items": _OPTION_SCHEMA, "minItems": 1, "description": "For select kinds."},
        "allowFreeformInput": {"type": "boolean"},
        "format": {"type": "string", "description": "Text format hint: email, uri, date, date-time."},
        "min": {"type": "number"},
        "max": {"type": "number"},
        "defaultValue": {"type": ["string", "number", "boolean"]},
    },
    "required": ["id", "kind", "message"],
    "additionalProperties": False,
}

# Which optional keys each kind may carry, as in the AHP question types.
_KIND_KEYS = {
    "text": {"format", "min", "max", "defaultValue"},
    "number": {"min", "max", "defaultValue"},
    "integer": {"min", "max", "defaultValue"},
    "boolean": {"defaultValue"},
    "single-select": {"options", "allowFreeformInput"},
    "multi-select": {"options", "allowFreeformInput", "min", "max"},
}
_DEFAULT_TYPES: dict[str, type | tuple[type, ...]] = {"text": str, "number": (int, float), "integer": int, "boolean": bool}
_COMMON_KEYS = {"id", "kind", "message", "title", "required"}


def _check_questions(questions: list[dict]) -> None:
    seen: set[str] = set()
    for index, question in enumerate(questions):
        where = f"questions[{index}] ({question['id']!r})"
        if question["id"] in seen:
            raise ToolInputError(f"{where}: question ids must be unique.")
        seen.add(question["id"])
        kind = question["kind"]
        extra = set(question) - _COMMON_KEYS - _KIND_KEYS[kind]
        if extra:
            raise ToolInputError(f"{where}: {', '.join(sorted(extra))} not allowed for a {kind} question.")
        if kind.endswith("select"):
            if "options" not in question:
                raise ToolInputError(f"{where}: a {kind} question needs options.")
            ids = [option["id"] for option in question["options"]]
            if len(ids) != len(set(ids)):
                raise ToolInputError(f"{where}: option ids must be unique.")
        if "defaultValue" in question:
            value = question["defaultValue"]
            expected = _DEFAULT_TYPES[kind]
            if isinstance(value, bool) != (kind == "boolean") or not isinstance(value, expected):
                raise ToolInputError(f"{where}: defaultValue does not fit a {kind} question.")


def _answer_text(answer: dict | None) -> str:
    if not answer:
        return "(no answer)"
    if answer.get("state") == "skipped":
        free = answer.get("freeformValues")
        return "(skipped" + (f": {'; '.join(free)})" if free else ")")
    value = answer.get("value") or {}
    kind = value.get("kind")
    if kind == "selected-many":
        chosen = list(value.get("value", [])) + list(value.get("freeformValues", []))
        return ", ".join(str(v) for v in chosen) or "(nothing selected)"
    if kind == "selected":
        free = value.get("freeformValues")
        return "; ".join(free) if free and not value.get("value") else str(value.get("value"))
    return str(value.get("value"))


class AskUserTool(Tool):
    """Asks the user questions through the session's input-request flow."""

    name = "ask_user"
    title = "Ask User"
    description = (
        "Ask the user one or more structured questions and wait for the answers. Use it when you "
        "need a decision or information only the user has. Question kinds: text, number, integer, "
        "boolean, single-select and multi-select (select kinds need options)."
    )
    input_schema = {
        "type": "object",
        "properties": {
            "message": {"type": "string", "description": "Context shown above the questions."},
            "questions": {"type": "array", "items": _QUESTION_SCHEMA, "minItems": 1, "maxItems": 20},
        },
        "required": ["questions"],
        "additionalProperties": False,
    }
    annotations = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}

    def describe(self, args: dict) -> str:
        return "Ask the user" + (f": {args['message']}" if args.get("message") else "")

    def past_tense(self, args: dict) -> str:
        return "Tried to ask the user"

    def confirmation_title(self, args: dict) -> str | None:
        return None

    def build_request(self, args: dict, ctx: ToolContext) -> dict:
        """The `SessionInputRequest` this call publishes."""
        request: dict[str, Any] = {
            "id": f"ask-{ctx.tool_call_id}" if ctx.tool_call_id else f"ask-{uuid.uuid4().hex}",
            "questions": [dict(q) for q in args["questions"]],
        }
        if args.get("message"):
            request["message"] = args["message"]
        return request

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        _check_questions(args["questions"])
        request = self.build_request(args, ctx)
        reply = await ctx.ask(request)
        response = reply.get("response")
        answers = reply.get("answers") or {}
        structured = {"response": response, "answers": answers}
        if response == "accept":
            lines = [f"{q['message']} → {_answer_text(answers.get(q['id']))}" for q in args["questions"]]
            return success_result("Asked the user", [text_content("The user answered:\n" + "\n".join(lines))], structured)
        if response == "decline":
            return success_result(
                "Asked the user (declined)", [text_content("The user declined to answer these questions.")], structured
            )
        return failure_result(
            "Asked the user (cancelled)", "The user cancelled the question without answering.", "cancelled",
            structured=structured,
        )
