"""POST /agui end to end against a real host on 127.0.0.1 port 0: the edge (token, origin, CORS,
malformed input, Accept) and the event sequences for text, reasoning, server tools and errors,
with the provider turn loop driven by the scripted provider."""

from __future__ import annotations

from pathlib import Path

import httpx

from ahp.state import default_chat_uri
from client import PROTOCOL_VERSIONS
from host.runtime.agents import ModelSpec, ProviderAgent, StaticSource, TurnSettings
from host.transport.agui import thread_session
from providers import ScriptedProvider
from providers.errors import AuthenticationError
from providers.scripted import call_tools, reply
from tests.conftest import TOKEN, FrameChecker
from tests.host.runtime.agents.harness import config_for, serving
from tools.base import Tool, ToolContext, success_result

from .agui_client import compact, parse_sse, run, run_input, text_of, types, user


class EchoTool(Tool):
    name = "echo"
    title = "Echo"
    description = "Returns its text in capitals."
    input_schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        return success_result(f"Echoed {args['text']}", [{"type": "text", "text": args["text"].upper()}])


def thread_chat(running: object, thread_id: str) -> dict:
    """The host's internal state of the default chat of a thread's session."""
    store = running.host.store  # type: ignore[attr-defined]  # a RunningHost
    session = thread_session(store, thread_id)
    assert session is not None
    return store.state(default_chat_uri(session)) or {}


def scripted(provider: ScriptedProvider) -> ProviderAgent:
    return ProviderAgent(
        "scripted",
        StaticSource(provider),
        display_name="Scripted",
        models=[ModelSpec("m1")],
        settings=TurnSettings(title="first-words"),
        tools=[EchoTool()],
    )


async def post(base_url: str, body: object, *, headers: dict[str, str] | None = None, params: dict | None = None, raw: bytes | None = None) -> httpx.Response:
    async with httpx.AsyncClient(timeout=10) as client:
        if raw is not None:
            return await client.post(f"{base_url}/agui", content=raw, headers=headers or {}, params=params)
        return await client.post(f"{base_url}/agui", json=body, headers=headers or {}, params=params)


# -- the edge --------------------------------------------------------------------------------------


async def test_a_missing_token_is_401_and_a_wrong_one_403(running_host) -> None:
    body = run_input("t", "r", [user("m1", "hi")])
    missing = await post(running_host.http_url, body)
    wrong = await post(running_host.http_url, body, headers={"Authorization": "Bearer nope"})
    wrong_query = await post(running_host.http_url, body, params={"token": "nope"})
    assert missing.status_code == 401 and "Authorization: Bearer" in missing.json()["error"]
    assert missing.headers["www-authenticate"] == "Bearer"
    assert wrong.status_code == 403 and "token is wrong" in wrong.json()["error"]
    assert wrong_query.status_code == 403
    assert thread_session(running_host.host.store, "t") is None  # nothing was created


async def test_the_token_may_come_as_a_query_parameter(running_host) -> None:
    async with httpx.AsyncClient(timeout=10) as client:
        response = await client.post(
            f"{running_host.http_url}/agui", params={"token": TOKEN}, json=run_input("tq", "r", [user("m1", "hi")])
        )
    assert response.status_code == 200
    assert parse_sse(response.text.splitlines())[-1]["type"] == "RUN_FINISHED"


async def test_a_malformed_run_agent_input_is_422_naming_the_fields(running_host) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    bad = await post(running_host.http_url, {"threadId": 5, "messages": [{"id": "m", "role": "wizard"}]}, headers=auth)
    assert bad.status_code == 422
    body = bad.json()
    assert body["error"] == "The body is not a valid AG-UI RunAgentInput."
    assert "runId is required" in body["problems"]
    assert "threadId has the wrong type or value" in body["problems"]
    assert any(p.startswith("messages[0]") for p in body["problems"])
    assert "Traceback" not in bad.text and "pydantic" not in bad.text
    not_json = await post(running_host.http_url, None, raw=b"{nope", headers={**auth, "Content-Type": "application/json"})
    assert not_json.status_code == 400
    assert not_json.json() == {"error": "The body is not valid JSON. Send a JSON RunAgentInput object."}
    a_list = await post(running_host.http_url, [1, 2], headers=auth)
    assert a_list.status_code == 422 and "JSON object" in a_list.json()["problems"][0]


async def test_json_nested_too_deeply_is_a_400_saying_so_and_the_host_keeps_serving(running_host) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    deep = b"[" * 100_000 + b"]" * 100_000
    refused = await post(running_host.http_url, None, raw=deep, headers=auth)
    assert refused.status_code == 400
    assert refused.json() == {"error": "The body is nested too deeply (at most 64 levels). Send a JSON RunAgentInput object."}
    # Deep inside an otherwise valid input (within what Python's parser reads) is refused the same way.
    state: object = {}
    for _ in range(200):
        state = {"a": state}
    inner = await post(running_host.http_url, {**run_input("deep", "r", [user("m1", "hi")]), "state": state}, headers=auth)
    assert inner.status_code == 400 and "nested too deeply" in inner.json()["error"]
    for raw, said in ((b'{"threadId": NaN}', "not valid JSON"), (b'{"threadId": 1e999}', "1e999 is too large")):
        answer = await post(running_host.http_url, None, raw=raw, headers=auth)
        assert answer.status_code == 400 and said in answer.json()["error"]
        assert "Traceback" not in answer.text
    assert thread_session(running_host.host.store, "deep") is None
    served = await post(running_host.http_url, run_input("after", "r", [user("m1", "hi")]), headers={"Authorization": f"Bearer {TOKEN}"})
    assert served.status_code == 200


async def test_an_accept_header_without_event_stream_is_406(running_host) -> None:
    response = await post(
        running_host.http_url,
        run_input("t", "r", [user("m1", "hi")]),
        headers={"Authorization": f"Bearer {TOKEN}", "Accept": "application/vnd.ag-ui.event+proto"},
    )
    assert response.status_code == 406 and "text/event-stream" in response.json()["error"]


async def test_origins_follow_the_websocket_policy_and_preflights_only_for_allowed_ones(tmp_path: Path, frame_checker: FrameChecker) -> None:
    config = config_for(tmp_path, server={"allowed_origins": ["http://app.example"]})
    async with serving(config, frame_checker, versions=PROTOCOL_VERSIONS) as (running, _):
        auth = {"Authorization": f"Bearer {TOKEN}"}
        refused = await post(running.http_url, run_input("t", "r", []), headers={**auth, "Origin": "http://evil.example"})
        assert refused.status_code == 403 and "allowed_origins" in refused.json()["error"]
        async with httpx.AsyncClient(timeout=10) as client:
            preflight_ok = await client.options(f"{running.http_url}/agui", headers={"Origin": "http://app.example", "Access-Control-Request-Method": "POST"})
            preflight_bad = await client.options(f"{running.http_url}/agui", headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
        assert preflight_ok.status_code == 204
        assert preflight_ok.headers["access-control-allow-origin"] == "http://app.example"
        assert "authorization" in preflight_ok.headers["access-control-allow-headers"]
        assert preflight_bad.status_code == 403 and "access-control-allow-origin" not in preflight_bad.headers
        allowed = await post(running.http_url, run_input("t", "r", []), headers={**auth, "Origin": "http://app.example"})
        assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == "http://app.example"


# -- event sequences -------------------------------------------------------------------------------


async def test_a_text_answer_streams_as_one_text_message_with_usage_in_run_finished(running_host) -> None:
    events = await run(running_host.http_url, run_input("thread-text", "run-1", [user("m1", "hello there")]))
    assert compact(events) == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert events[0]["threadId"] == "thread-text" and events[0]["runId"] == "run-1"
    assert text_of(events).startswith('You said: "hello there"')
    assert events[-1]["usage"] == [{"model": "offline-echo", "inputTokens": 2, "outputTokens": 47, "totalTokens": 49}]
    [turn] = thread_chat(running_host, "thread-text")["turns"]
    assert turn["message"]["text"] == "hello there" and turn["state"] == "complete"


async def test_reasoning_streams_as_reasoning_events_before_the_text(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([reply("Four.", reasoning_text="2 plus 2 is 4")])
    async with serving(config_for(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, _):
        events = await run(running.http_url, run_input("thread-think", "run-1", [user("m1", "2+2?")]))
    assert compact(events) == [
        "RUN_STARTED",
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    reasoning = "".join(e["delta"] for e in events if e["type"] == "REASONING_MESSAGE_CONTENT")
    assert reasoning == "2 plus 2 is 4" and text_of(events) == "Four."


async def test_a_server_tool_streams_start_args_end_and_its_result(tmp_path: Path, frame_checker: FrameChecker) -> None:
    provider = ScriptedProvider([call_tools(("echo", {"text": "hi"})), reply("The tool said HI.")])
    async with serving(config_for(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, _):
        events = await run(running.http_url, run_input("thread-tool", "run-1", [user("m1", "use the tool")]))
    assert compact(events) == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    start = events[1]
    assert start["toolCallName"] == "echo"
    args = "".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS")
    assert args == '{"text": "hi"}'
    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    assert (result["toolCallId"], result["content"], result["role"]) == (start["toolCallId"], "HI", "tool")
    assert text_of(events) == "The tool said HI."


async def test_a_provider_error_is_run_error_with_the_message_a_person_can_act_on(tmp_path: Path, frame_checker: FrameChecker) -> None:
    failure = AuthenticationError("The provider refused the API key; check SCRIPTED_API_KEY in the host's environment.", provider="scripted")
    provider = ScriptedProvider([[failure]])
    async with serving(config_for(tmp_path), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, _):
        events = await run(running.http_url, run_input("thread-error", "run-1", [user("m1", "hi")]))
        turn = thread_chat(running, "thread-error")["turns"][0]
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"]
    error = turn["responseParts"][-1]  # since 0.9.0 a turn's error is its last response part
    assert error["kind"] == "error" and turn["state"] == "error"
    assert events[-1]["message"] == error["error"]["message"]
    assert "SCRIPTED_API_KEY" in events[-1]["message"] and "Traceback" not in events[-1]["message"]
    assert events[-1]["code"] == error["error"]["errorType"]


async def test_an_unknown_agent_in_forwarded_props_is_a_run_error_listing_the_agents(running_host) -> None:
    events = await run(running_host.http_url, run_input("thread-x", "run-1", [user("m1", "hi")], forwardedProps={"agent": "nope"}))
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert "No agent 'nope'" in events[-1]["message"] and "offline" in events[-1]["message"]


async def test_a_repeated_input_sends_the_thread_and_says_why_nothing_ran(running_host) -> None:
    first = await run(running_host.http_url, run_input("thread-again", "run-1", [user("m1", "hi")]))
    again = await run(running_host.http_url, run_input("thread-again", "run-2", [user("m1", "hi")]))
    assert first[-1]["type"] == "RUN_FINISHED"
    assert types(again) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_ERROR"]
    snapshot = again[1]["messages"]
    assert [(m["id"], m["role"]) for m in snapshot][:1] == [("m1", "user")]
    assert snapshot[1]["role"] == "assistant" and snapshot[1]["content"] == text_of(first)
    assert again[-1]["code"] == "nothingToRun"
    assert "m1" in again[-1]["message"] and "new user message" in again[-1]["message"]
    assert len(thread_chat(running_host, "thread-again")["turns"]) == 1


async def test_joining_a_thread_without_messages_sends_the_snapshot_and_finishes(running_host) -> None:
    await run(running_host.http_url, run_input("thread-join", "run-1", [user("m1", "hi")]))
    joined = await run(running_host.http_url, run_input("thread-join", "run-2", []))
    assert types(joined) == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert [m["role"] for m in joined[1]["messages"]] == ["user", "assistant"]


async def test_the_same_thread_continues_the_same_session(running_host) -> None:
    history = [user("m1", "first")]
    await run(running_host.http_url, run_input("thread-two", "run-1", history))
    history += [{"id": "a1", "role": "assistant", "content": "..."}, user("m2", "second")]
    events = await run(running_host.http_url, run_input("thread-two", "run-2", history))
    assert text_of(events).startswith('You said: "second"')
    turns = thread_chat(running_host, "thread-two")["turns"]
    assert [t["message"]["text"] for t in turns] == ["first", "second"]
