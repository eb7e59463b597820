"""What the model is sent for a user message: attachments and ``@path`` mentions."""

from __future__ import annotations

from pathlib import Path

from host.runtime.conversation import to_user_message


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


def _vscode_wrapped(content_uri: str) -> str:
    """How VS Code 1.139.1 names a host's content URI when it attaches it (seen on the wire)."""
    import base64
    import json
    from urllib.parse import quote
    query = base64.urlsafe_b64encode(json.dumps({"scheme": "agent-host-content", "contentRef": True}).encode()).decode().rstrip("=")
    return f"vscode-agent-host://local{content_uri.removeprefix('agent-host-content:')}?{quote('_ah=' + query)}"


def test_content_the_host_served_is_read_from_its_store_also_as_vscode_wraps_it(tmp_path: Path) -> None:
    from host.state.content import ContentStore
    store = ContentStore(None)
    uri = store.put(b"notes written by the agent\n", "text/plain; charset=utf-8")
    for attached in (uri, _vscode_wrapped(uri)):
        message, notes = to_user_message(
            {"text": "what is in it?", "attachments": [{"type": "resource", "uri": attached, "label": "notes.txt"}]},
            working_directory=tmp_path, vision=False, content=store.get)
        assert notes == []
        assert "notes written by the agent" in message.content[0].text
    missing = "agent-host-content:/sha256/" + "0" * 64
    message, notes = to_user_message(
        {"text": "and this?", "attachments": [{"type": "resource", "uri": _vscode_wrapped(missing), "label": "gone"}]},
        working_directory=tmp_path, vision=False, content=store.get)
    assert notes == [f"The attachment gone was not read: this host holds no content at {missing}."]


def test_another_vscode_agent_host_uri_is_still_refused(tmp_path: Path) -> None:
    message, notes = to_user_message(
        {"text": "x", "attachments": [{"type": "resource", "uri": "vscode-agent-host://local/etc/passwd", "label": "p"}]},
        working_directory=tmp_path, vision=False, content=lambda uri: b"secret")
    assert "secret" not in message.content[0].text and "only file:// URIs" in notes[0]


def test_an_image_file_mentioned_or_attached_is_an_image_for_a_vision_model_and_a_note_for_another(tmp_path: Path) -> None:
    import base64

    from providers import ImageContent

    png = b"\x89PNG\r\n\x1a\nframe"
    (tmp_path / "shot.png").write_bytes(png)
    uri = (tmp_path / "shot.png").resolve().as_uri()
    message, notes = to_user_message({"text": "what is in @shot.png?"}, working_directory=tmp_path, vision=True)
    assert message.content[1:] == (ImageContent(media_type="image/png", data=base64.b64encode(png).decode()),)
    assert notes == [] and "not a text file" not in _text(message)
    attached = {"text": "this", "attachments": [{"type": "resource", "uri": uri, "label": "shot.png"}]}
    message, notes = to_user_message(attached, working_directory=tmp_path, vision=False, model_name="Texty")
    assert len(message.content) == 1
    assert notes == ["The image shot.png was not sent: Texty cannot see images."]


def test_a_mention_an_inline_attachment_carries_is_not_read_again(tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(b"\x89PNG\r\n\x1a\nframe")
    inline = {"type": "embeddedResource", "label": "shot.png", "data": "iVBORw0K", "contentType": "image/png"}
    message, notes = to_user_message({"text": "see @shot.png", "attachments": [inline]}, working_directory=tmp_path, vision=True)
    assert len(message.content) == 2 and notes == []
