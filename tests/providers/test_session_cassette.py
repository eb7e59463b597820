"""providers.session_cassette and providers.session_replay: the session cassette format (reviewable,
deterministic, placeholders and redaction) and the transports that replay it strictly."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from providers.session_cassette import (
    Call,
    CassetteFormatError,
    Normaliser,
    SessionCassette,
    read_cassette,
    request_diff,
    write_cassette,
)
from providers.session_replay import CassetteUsedUp, ReplayDiverged, ReplayedCancel, SessionReplayTransport

SYSTEM = "You are a coding agent.\nWork carefully.\n<environment>\nWorking directory: /home/ana/shop\nDate: 2026-12-06\n</environment>"
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]


def body(user: str, *extra: dict) -> dict:
    return {"model": "m", "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}, *extra],
            "tools": TOOLS, "stream": True, "user": "run-42"}


def recorded(normaliser: Normaliser) -> SessionCassette:
    sse = 'data: {"choices": [{"index": 0, "delta": {"content": "in /home/ana/shop"}}]}\n\ndata: [DONE]\n\n'
    first = Call("POST", "/v1/chat/completions", normaliser.body(json.dumps(body("hi"))), 200, {"content-type": "text/event-stream"},
                 normaliser.text(sse))
    second = Call("POST", "/v1/chat/completions", normaliser.body(json.dumps(body("again"))), 200,
                  {"content-type": "text/event-stream"}, normaliser.text(sse))
    return SessionCassette(kind="openai-chat", base_url="http://127.0.0.1/v1", turns=[[first], [second]])


def test_the_system_prompt_and_tools_are_stored_once_and_each_message_is_an_entry() -> None:
    text = recorded(Normaliser.for_folder("/home/ana/shop", "/home/ana")).to_yaml()
    assert text.count("You are a coding agent.") == 1 and text.count("read_file") == 1
    assert text.count("$shared: system-1") == 2 and text.count("$shared: tools-1") == 2
    assert "- role: user\n          content: hi\n" in text  # structured, one message per entry
    assert "/home/ana" not in text and "${cwd}" in text and "<environment>${environment}</environment>" in text
    assert "run-42" not in text  # a run's own id is not part of what the model is asked


def test_a_cassette_reads_back_as_written_and_writes_the_same_text_again(tmp_path: Path) -> None:
    cassette = recorded(Normaliser.for_folder("/home/ana/shop", "/home/ana"))
    path = tmp_path / "session.yaml"
    write_cassette(path, cassette)
    again = read_cassette(path)
    assert again.turns == cassette.turns and again.kind == "openai-chat"
    assert again.to_yaml() == path.read_text()


def test_placeholders_replace_the_folder_before_the_home_it_is_in_and_come_back_on_replay() -> None:
    normaliser = Normaliser.for_folder("/home/ana/shop", "/home/ana")
    assert normaliser.text("/home/ana/shop/a.py and /home/ana/.config") == "${cwd}/a.py and ${home}/.config"
    elsewhere = Normaliser.for_folder("/tmp/run7", "/root")
    assert elsewhere.restore("read ${cwd}/a.py") == "read /tmp/run7/a.py"


def test_secrets_are_redacted_with_the_name_kept_and_a_configured_pattern_applies() -> None:
    normaliser = Normaliser.for_folder(None, None, (*Normaliser().redact, r"acct-\d+"))
    text = normaliser.text("OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx\nDB_PASSWORD: hunter2\nacct-12345\nmax_tokens: 3")
    assert text == "OPENAI_API_KEY=<redacted>\nDB_PASSWORD: <redacted>\n<redacted>\nmax_tokens: 3"


def test_the_diff_names_the_message_that_differs() -> None:
    normaliser = Normaliser.for_folder("/home/ana/shop", "/home/ana")
    call = recorded(normaliser).turns[0][0]
    assert request_diff(call, "POST", "/v1/chat/completions", normaliser.body(json.dumps(body("hi")))) is None
    diff = request_diff(call, "POST", "/v1/chat/completions", normaliser.body(json.dumps(body("hello"))))
    assert diff is not None and "-    content: hi" in diff and "+    content: hello" in diff


def test_a_cassette_recorded_in_one_folder_matches_the_same_session_in_another() -> None:
    call = recorded(Normaliser.for_folder("/home/ana/shop", "/home/ana")).turns[0][0]
    other = Normaliser.for_folder("/tmp/ci/shop", "/root")
    sent = json.dumps(body("hi")).replace("/home/ana/shop", "/tmp/ci/shop").replace("2026-12-06", "2027-01-01")
    assert request_diff(call, "POST", "/v1/chat/completions", other.body(sent)) is None


@pytest.mark.parametrize(("text", "says"), [
    ("interactions: []\nversion: 1\n", "is not an agent-host session cassette"),
    ("format: agent-host session cassette\nversion: 3\n", "version 3 session cassette; this host reads version 2: record it again"),
])
def test_an_older_or_foreign_file_is_refused_saying_why(text: str, says: str) -> None:
    with pytest.raises(CassetteFormatError, match=says.replace("(", r"\(")):
        SessionCassette.from_yaml(text, "x.yaml")


async def replay(cassette: SessionCassette, turn: int, sent: dict, *, strict: bool = True, folder: str = "/tmp/b") -> tuple[str, list[str]]:
    warnings: list[str] = []
    transport = SessionReplayTransport(cassette, turn=turn, source="s.yaml", normaliser=Normaliser.for_folder(folder, "/root"),
                                       strict=strict, warn=warnings.append)
    async with httpx2.AsyncClient(transport=transport) as client:
        response = await client.post("http://127.0.0.1/v1/chat/completions", content=json.dumps(sent))
        return response.text, warnings


async def test_replay_serves_the_turns_answer_with_this_machines_folder() -> None:
    cassette = recorded(Normaliser.for_folder("/home/ana/shop", "/home/ana"))
    text, _ = await replay(cassette, 2, json.loads(json.dumps(body("again")).replace("/home/ana/shop", "/tmp/b")))
    assert "in /tmp/b" in text


async def test_strict_replay_raises_a_divergence_naming_turn_call_and_diff_and_lenient_warns() -> None:
    cassette = recorded(Normaliser.for_folder("/home/ana/shop", "/home/ana"))
    with pytest.raises(ReplayDiverged, match=r"(?s)diverged at turn 2, model call 1.*-    content: again.*\+    content: changed"):
        await replay(cassette, 2, body("changed"))
    text, warnings = await replay(cassette, 2, body("changed"), strict=False)
    assert "[DONE]" in text and "diverged at turn 2" in warnings[0]


async def test_a_turn_past_the_recording_is_used_up_not_started_again() -> None:
    cassette = recorded(Normaliser.for_folder("/home/ana/shop", "/home/ana"))
    with pytest.raises(CassetteUsedUp, match="s.yaml is used up: it recorded 2 turns and this is turn 3"):
        await replay(cassette, 3, body("hi"))


async def test_a_call_recorded_as_cancelled_streams_what_came_and_then_cancels() -> None:
    cassette = recorded(Normaliser.for_folder("/home/ana/shop", "/home/ana"))
    cassette.turns[0][0].cancelled = True
    chunks: list[bytes] = []
    transport = SessionReplayTransport(cassette, turn=1, source="s.yaml", normaliser=Normaliser.for_folder("/home/ana/shop", "/home/ana"))
    async with httpx2.AsyncClient(transport=transport) as client:
        with pytest.raises(ReplayedCancel, match="cancelled by its client at turn 1, model call 1"):
            async with client.stream("POST", "http://127.0.0.1/v1/chat/completions", content=json.dumps(body("hi"))) as response:
                async for chunk in response.aiter_bytes():
                    chunks.append(chunk)
    assert b"".join(chunks).startswith(b"data: ")
