"""Typed text → AHP answers, confirmation choices, attachments and model selections."""

from __future__ import annotations

from pathlib import Path

import pytest

from chat._answers import AnswerError, attachments_in, model_selection, parse_answer, parse_choice


def submitted(value: dict) -> dict:
    return {"state": "submitted", "value": value}


def test_each_question_kind_parses_into_its_value_kind() -> None:
    assert parse_answer({"kind": "text"}, " Ada ") == submitted({"kind": "text", "value": "Ada"})
    assert parse_answer({"kind": "number"}, "2.5") == submitted({"kind": "number", "value": 2.5})
    assert parse_answer({"kind": "number"}, "3.0") == submitted({"kind": "number", "value": 3})
    assert parse_answer({"kind": "integer"}, "7") == submitted({"kind": "number", "value": 7})
    assert parse_answer({"kind": "boolean"}, "Yes") == submitted({"kind": "boolean", "value": True})
    options = [{"id": "r", "label": "Red"}, {"id": "b", "label": "Blue"}]
    assert parse_answer({"kind": "single-select", "options": options}, "2") == submitted({"kind": "selected", "value": "b"})
    assert parse_answer({"kind": "single-select", "options": options}, "red") == submitted({"kind": "selected", "value": "r"})
    many = {"kind": "multi-select", "options": options, "allowFreeformInput": True}
    assert parse_answer(many, "2, 1, teal") == submitted({"kind": "selected-many", "value": ["b", "r"], "freeformValues": ["teal"]})


def test_empty_input_takes_the_default_skips_optional_and_refuses_required() -> None:
    assert parse_answer({"kind": "boolean", "defaultValue": False}, "") == submitted({"kind": "boolean", "value": False})
    assert parse_answer({"kind": "text"}, "") == {"state": "skipped"}
    with pytest.raises(AnswerError, match="needs an answer"):
        parse_answer({"kind": "text", "required": True}, "  ")


@pytest.mark.parametrize(
    ("question", "line", "message"),
    [
        ({"kind": "integer"}, "1.5", "whole number"),
        ({"kind": "number", "min": 0}, "-1", "smallest allowed value is 0"),
        ({"kind": "number", "max": 10}, "11", "largest allowed value is 10"),
        ({"kind": "boolean"}, "maybe", "y or n"),
        ({"kind": "text", "min": 3}, "ab", "at least 3"),
        ({"kind": "single-select", "options": [{"id": "a", "label": "A"}]}, "9", "from 1 to 1"),
        ({"kind": "multi-select", "options": [{"id": "a", "label": "A"}], "min": 1}, "zzz", "not one of the options"),
        ({"kind": "multi-select", "options": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}], "max": 1}, "1,2", "at most 1"),
    ],
)
def test_answers_that_do_not_fit_say_what_would(question: dict, line: str, message: str) -> None:
    with pytest.raises(AnswerError, match=message):
        parse_answer(question, line)


def test_choices_accept_numbers_y_n_and_edit() -> None:
    options = [{"kind": "approve"}, {"kind": "approve"}, {"kind": "deny"}]
    assert parse_choice("2", options, editable=False) == 1
    assert parse_choice("n", options, editable=False) == 2
    assert parse_choice("Y", options, editable=False) == 0
    assert parse_choice("e", options, editable=True) == "edit"
    with pytest.raises(AnswerError, match="1 to 3"):
        parse_choice("e", options, editable=False)


def test_at_paths_inside_the_working_directory_become_resource_attachments(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("print(1)\n")
    attachments, problems = attachments_in("look at @src/main.py and @src and mail me@example.test @missing.txt @../etc", tmp_path)
    assert [a["label"] for a in attachments] == ["src/main.py", "src"]
    assert attachments[0] == {
        "type": "resource",
        "uri": (tmp_path / "src" / "main.py").resolve().as_uri(),
        "label": "src/main.py",
        "sizeHint": 9,
        "contentType": "text/x-python",
        "displayKind": "document",
    }
    assert attachments[1]["displayKind"] == "directory"
    assert problems == ["@missing.txt: no such file", f"@../etc is outside the working directory {tmp_path.resolve()}; the host will not read it"]


def test_model_selection_is_checked_against_the_config_schema() -> None:
    models = [{"id": "m1", "configSchema": {"type": "object", "properties": {"effort": {"type": "string", "enum": ["low", "high"]}}}}]
    assert model_selection(["m1"], models) == {"id": "m1"}
    assert model_selection(["m1", "effort=high"], models) == {"id": "m1", "config": {"effort": "high"}}
    for args, message in ((["m2"], "no model 'm2'"), (["m1", "effort"], "key=value"), (["m1", "depth=1"], "no option 'depth'"), (["m1", "effort=max"], "one of low, high")):
        with pytest.raises(AnswerError, match=message):
            model_selection(args, models)
