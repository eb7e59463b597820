"""Images as attachments from the terminal: a real ``agent-host`` on a pty whose model is a scripted
provider server. ``@shot.png``, an image file's path pasted as a terminal pastes a dragged file
(quoted, outside the project) and ``/paste-image`` (the clipboard, through ``wl-paste``) reach a
model that sees images as image parts of its request, byte for byte; a model that does not is
sent none, and the user and the model are told."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

from chat._images import IMAGE_LIMIT, image_attachment, model_sees_images, pasted_image_paths
from tests.chat._fakehost import host_toml, spawn_agent_host
from tests.providers.fake_server import FakeProviderServer, Reply, SeenRequest, chat_sse

PNG = b"\x89PNG\r\n\x1a\n" + b"screenshot pixels"
JPEG = b"\xff\xd8\xff\xe0" + b"photo pixels"
CLIPBOARD = b"\x89PNG\r\n\x1a\n" + b"copied pixels"


def _user_parts(request: SeenRequest) -> list[dict[str, Any]]:
    content = [m for m in request.json()["messages"] if m["role"] == "user"][-1]["content"]
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


def _images(request: SeenRequest) -> list[str]:
    return [part["image_url"]["url"] for part in _user_parts(request) if part["type"] == "image_url"]


def _text(request: SeenRequest) -> str:
    return "".join(part.get("text", "") for part in _user_parts(request) if part["type"] == "text")


def _data_url(kind: str, data: bytes) -> str:
    return f"data:{kind};base64,{base64.b64encode(data).decode()}"


def _fake_wl_paste(tmp_path: Path) -> dict[str, str]:
    """A ``wl-paste`` on PATH whose clipboard holds ``CLIPBOARD`` as a PNG (and some text)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    clip = tmp_path / "clip.png"
    clip.write_bytes(CLIPBOARD)
    script = bin_dir / "wl-paste"
    script.write_text(f'#!/bin/sh\nif [ "$1" = "--list-types" ]; then printf "text/plain\\nimage/png\\n"; exit 0; fi\ncat "{clip}"\n')
    script.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "WAYLAND_DISPLAY": "wayland-test"}


async def test_named_pasted_and_clipboard_images_reach_a_model_that_sees_images(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "shot.png").write_bytes(PNG)
    pictures = tmp_path / "My Pictures"
    pictures.mkdir()
    (pictures / "photo.jpg").write_bytes(JPEG)
    replies = [Reply(200, chat_sse("Two images: a screenshot and a photo.")), Reply(200, chat_sse("One copied image."))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        chat = spawn_agent_host(tmp_path, project, host_toml(server, vision=True), tty=True, **_fake_wl_paste(tmp_path))
        try:
            await chat.expect("/help for commands", timeout=30)
            await chat.line_editor()
            chat.type("compare @shot.png with ")
            chat.paste(f"'{pictures / 'photo.jpg'}'")  # a file dragged into the terminal
            chat.send("")
            await chat.expect("(attached shot.png (image))", timeout=30)
            await chat.expect(f"(attached '{pictures / 'photo.jpg'}' (image))".replace("'", ""))
            await chat.expect("Two images: a screenshot and a photo.", timeout=30)
            chat.send("/paste-image")
            await chat.expect("(clipboard image 1: image/png, 1 KB, goes with your next message)", timeout=30)
            chat.send("and this one?")
            await chat.expect("(attached clipboard image 1 (image))")
            await chat.expect("One copied image.", timeout=30)
            chat.send("/quit")
            assert await chat.wait(30) == 0
        finally:
            chat.close()
    first, second = server.requests
    assert _images(first) == [_data_url("image/png", PNG), _data_url("image/jpeg", JPEG)]
    assert _text(first).startswith("compare @shot.png with")
    assert "not a text file" not in _text(first)  # the host did not read the mentioned image again as text
    assert _images(second) == [_data_url("image/png", CLIPBOARD)]


async def test_a_model_without_vision_is_sent_no_image_and_both_sides_are_told(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "shot.png").write_bytes(PNG)
    async with FakeProviderServer([Reply(200, chat_sse("I cannot see it."))], base_path="/v1") as server:
        chat = spawn_agent_host(tmp_path, project, host_toml(server), **_fake_wl_paste(tmp_path))
        try:
            await chat.expect("/help for commands", timeout=30)
            chat.send("what is in @shot.png?")
            await chat.expect("(not attached: shot.png is an image and Fake cannot see images; pick a model that can with /model)", timeout=30)
            await chat.expect("I cannot see it.", timeout=30)
            chat.send("/paste-image")
            await chat.expect("Fake cannot see images; pick a model that can with /model")
            chat.send("/quit")
            assert await chat.wait(30) == 0
        finally:
            chat.close()
    [request] = server.requests
    assert _images(request) == []
    assert "The user attached the image shot.png; it was not sent: this model cannot see images." in _text(request)


def test_pasted_paths_are_read_as_a_terminal_writes_a_dragged_file(tmp_path: Path) -> None:
    folder = tmp_path / "a b"
    folder.mkdir()
    (folder / "x.png").write_bytes(PNG)
    (tmp_path / "y.webp").write_bytes(PNG)
    (tmp_path / "notes.txt").write_text("text")
    text = f"see {folder}/x.png".replace(" b/", "\\ b/") + f" and file://{tmp_path}/y.webp and {tmp_path}/notes.txt and @{tmp_path}/y.webp"
    assert [path for _, path in pasted_image_paths(text)] == [folder / "x.png", tmp_path / "y.webp"]
    assert pasted_image_paths(f'"{folder}/x.png" and /no/such.png') == [(f'"{folder}/x.png"', folder / "x.png")]


def test_an_image_too_large_or_of_another_kind_is_refused_with_what_to_do() -> None:
    import pytest

    from chat._images import ImageError

    with pytest.raises(ImageError, match="images up to 5.0 MB are sent"):
        image_attachment(b"x" * (IMAGE_LIMIT + 1), "big.png", "image/png")
    with pytest.raises(ImageError, match="models take PNG, JPEG, GIF and WebP"):
        image_attachment(b"x", "a.bmp", "image/bmp")


def test_whether_the_model_sees_images_comes_from_the_hosts_agent_list() -> None:
    agents = [{"provider": "p", "models": [{"id": "v", "name": "Vee", "supportsVision": True}, {"id": "t", "supportsVision": False}, {"id": "u"}]}]
    assert model_sees_images(agents, {"summary": {"provider": "p", "model": {"id": "v"}}}) == (True, "Vee")
    assert model_sees_images(agents, {"summary": {"provider": "p", "model": {"id": "t"}}}) == (False, "t")
    assert model_sees_images(agents, {"summary": {"provider": "p", "model": {"id": "u"}}}) == (None, "u")
    assert model_sees_images([], None) == (None, "this model")


async def test_a_script_attaches_an_image_the_same_way(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "shot.png").write_bytes(PNG)
    async with FakeProviderServer([Reply(200, chat_sse("A screenshot."))], base_path="/v1") as server:
        run = spawn_agent_host(tmp_path, project, host_toml(server, vision=True), "-p", "describe @shot.png")
        try:
            await run.expect("A screenshot.", timeout=30)
            assert await run.wait(30) == 0
        finally:
            run.close()
    [request] = server.requests
    assert _images(request) == [_data_url("image/png", PNG)]
