"""What the model is sent for a user message: attachments and ``@path`` mentions."""

from __future__ import annotations

from pathlib import Path

from host.conversation import to_user_message


def _text(message) -> str:
    return message.content[0].text


def test_at_paths_in_the_text_are_read_from_the_session_directory(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("print('hi')\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a b.md").write_text("# notes\n")
    message, notes = to_user_message(
        {"text": 'fix @app.py, see @"docs/a b.md"'}, working_directory=tmp_path, vision=False
    )
    body = _text(message)
    assert "[Attached file app.py]\n```\nprint('hi')\n\n```" in body
    assert "[Attached file docs/a b.md]" in body and "# notes" in body
    assert notes == []


def test_mentions_that_are_not_files_inside_the_directory_stay_plain_text(tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-secret.txt"
    outside.write_text("secret")
    message, _ = to_user_message(
        {"text": f"mail me@app.py, @missing.py, @../{outside.name} and @dataclass"},
        working_directory=tmp_path, vision=False,
    )
    assert _text(message) == f"mail me@app.py, @missing.py, @../{outside.name} and @dataclass"


def test_a_file_attached_by_the_client_and_mentioned_is_sent_once(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("code\n")
    uri = (tmp_path / "app.py").resolve().as_uri()
    message, _ = to_user_message(
        {"text": "look at @app.py", "attachments": [{"type": "resource", "uri": uri, "label": "app.py"}]},
        working_directory=tmp_path, vision=False,
    )
    assert _text(message).count("[Attached file app.py]") == 1
