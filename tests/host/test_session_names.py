"""A 0.2.0 client names a session ``ahp-session:/<id>``; the host finds it whichever agent runs it,
also when that agent is no longer in the config (``AgentHost.session_uri``: looked up under each
configured agent first, then among every session), and an id stays unique across agents."""

from __future__ import annotations

from pathlib import Path

import pytest

from client.errors import AhpError
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import config_for, ready_session, run_turn, serving
from tests.host.runtime.agents.test_faults import fake_agent_toml
from tests.providers.fake_server import FakeProviderServer, Reply, chat_sse


async def test_a_session_of_each_agent_is_found_by_its_020_name(tmp_path: Path, frame_checker: FrameChecker) -> None:
    replies = [Reply(200, chat_sse("From fake.")), Reply(200, chat_sse("From other."))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        toml = fake_agent_toml(server.base_url) + fake_agent_toml(server.base_url).replace("[agents.fake]", "[agents.other]")
        async with serving(config_for(tmp_path, toml=toml), frame_checker) as (running, client):
            first = await ready_session(client, provider="fake")
            second = await ready_session(client, provider="other")
            assert (await run_turn(client, first, "hello"))["responseParts"][0]["content"] == "From fake."
            assert (await run_turn(client, second, "hello"))["responseParts"][0]["content"] == "From other."
            assert running.host.session_uri(second) == f"other:/{second.split(':/', 1)[1]}"
            assert running.host.session_uri("ahp-session:/not-a-session") is None
            with pytest.raises(AhpError, match="already exists"):
                await client.create_session(f"ahp-session:/{first.split(':/', 1)[1]}", provider="other")


async def test_a_session_whose_agent_left_the_config_is_still_found_and_its_id_still_taken(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    async with FakeProviderServer([Reply(200, chat_sse("Before."))], base_path="/v1") as server:
        async with serving(config_for(tmp_path, toml=fake_agent_toml(server.base_url)), frame_checker) as (_, client):
            session = await ready_session(client, provider="fake")
            await run_turn(client, session, "hello")
        # The same data directory, the agent renamed: the session's agent is gone.
        renamed = fake_agent_toml(server.base_url).replace("[agents.fake]", "[agents.renamed]")
        async with serving(config_for(tmp_path, toml=renamed), frame_checker) as (running, client):
            await client.subscribe(session)
            assert running.host.session_uri(session) == f"fake:/{session.split(':/', 1)[1]}"
            turn = await run_turn(client, session, "still there?")
            assert turn["state"] == "error" and "no longer configured" in turn["error"]["message"]
            with pytest.raises(AhpError, match="already exists"):
                await client.create_session(session, provider="renamed")
