"""VS Code 1.139.1's first seconds on the wire, and 0.9.0 clients beside 0.2.0 clients.

Over a real WebSocket on 127.0.0.1 port 0: the frames VS Code sent after connecting
(tests/data/vscode-1.139.1) are replayed against this host, connected as VS Code's bridge
connects (``?tkn=``, no Origin), and what comes back is checked frame by frame.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

import ahp.dialects.v0_7
from ahp.dialects.catalogue import known_to, notification_known_to
from host.transport.server import RunningHost
from tests.conftest import TOKEN, Connect

ROOT = "ahp-root://"
FRAMES = Path(__file__).resolve().parents[1] / "data" / "vscode-1.139.1" / "client-frames.jsonl"


def vscode_frames() -> list[dict[str, Any]]:
    return [json.loads(json.loads(line)["data"]) for line in FRAMES.read_text("utf-8").splitlines() if line]


@cache
def _validator(definition: str) -> Draft202012Validator:
    schema = json.loads((Path(ahp.dialects.v0_7.__file__).parent / "spec-0.7.0" / "ahp-0.7.0.schema.json").read_text("utf-8"))
    return Draft202012Validator({"$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"})


def assert_valid(value: Any, definition: str) -> None:
    """Checked against the vendored 0.7.0 schema: 0.9.0's root and session-list shapes differ from
    it only by additions (a terminal's lifecycle), which the schema allows."""
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in _validator(definition).iter_errors(value)]
    assert errors == [], errors[:3]


class Peer:
    """A bare WebSocket client that sends raw frames and keeps every frame it receives."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.received: list[dict[str, Any]] = []
        self._changed = asyncio.Event()
        self._reader = asyncio.create_task(self._read())
        self._next_id = 1000

    @classmethod
    async def open(cls, running: RunningHost, query: str = f"tkn={TOKEN}") -> Peer:
        from websockets.asyncio.client import connect

        url = f"ws://{running.address}:{running.port}/?{query}"
        return cls(await connect(url, max_size=None))  # like VS Code's bridge: no Origin header

    async def _read(self) -> None:
        async for text in self.ws:
            self.received.append(json.loads(text))
            self._changed.set()

    async def send(self, frame: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(frame))

    async def until(self, condition: Callable[[], Any], timeout: float = 10) -> Any:
        async def wait() -> Any:
            while not (found := condition()):
                self._changed.clear()
                await self._changed.wait()
            return found

        return await asyncio.wait_for(wait(), timeout)

    def reply(self, msg_id: Any) -> dict[str, Any] | None:
        return next((f for f in self.received if f.get("id") == msg_id and "method" not in f), None)

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        msg_id = self._next_id
        await self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return await self.until(lambda: self.reply(msg_id))

    async def initialize(self, client_id: str, versions: list[str], subscriptions: tuple[str, ...] = (ROOT,)) -> dict[str, Any]:
        return await self.request("initialize", {"channel": ROOT, "protocolVersions": versions, "clientId": client_id,
                                                 "initialSubscriptions": list(subscriptions)})

    def actions(self) -> list[dict[str, Any]]:
        return [f["params"] for f in self.received if f.get("method") == "action"]

    async def close(self) -> None:
        await self.ws.close()
        self._reader.cancel()


def assert_only_what_0_9_0_knows(frames: list[dict[str, Any]]) -> None:
    for frame in frames:
        method = frame.get("method")
        if method == "action":
            action_type = frame["params"]["action"]["type"]
            assert known_to("0.9.0", action_type), action_type
            assert_valid(frame["params"], "ActionEnvelope")
        elif method is not None:
            assert notification_known_to("0.9.0", method), method


async def test_vscode_connects_and_its_first_seconds_get_answers_without_errors(
        running_host: RunningHost, connect: Connect) -> None:
    old_client = await connect()  # a 0.2.0 client with a session, so the session list is not empty
    session = await old_client.create_session()
    frames = vscode_frames()
    peer = await Peer.open(running_host)
    initialize, rest = frames[0], frames[1:]
    assert initialize["params"]["protocolVersions"] == ["0.9.0", "0.7.0", "0.6.0", "0.5.2", "0.5.1"]

    await peer.send(initialize)
    answer = await peer.until(lambda: peer.reply(initialize["id"]))
    for frame in rest:  # VS Code sends the rest in one burst once initialize is answered
        await peer.send(frame)
    requests = [f for f in rest if "id" in f]
    dispatches = [f["params"] for f in rest if f["method"] == "dispatchAction"]
    await peer.until(lambda: all(peer.reply(f["id"]) for f in requests) and len(peer.actions()) >= len(dispatches))
    await peer.request("ping", {"channel": ROOT})  # anything still on its way arrives before this answer

    # initialize: 0.9.0, with a root snapshot whose agents are this host's agents and their models
    result = answer["result"]
    assert result["protocolVersion"] == "0.9.0"
    assert_valid(result, "InitializeResult")
    assert result["serverSeq"] >= 0 and result["defaultDirectory"].startswith("file://")
    [snapshot] = result["snapshots"]
    assert snapshot["resource"] == ROOT
    root = snapshot["state"]
    agents = {agent.provider: agent.info() for agent in running_host.host.agents.values()}
    assert [a["provider"] for a in root["agents"]] == list(agents)
    for shown in root["agents"]:
        assert shown["models"] == agents[shown["provider"]]["models"] and shown["models"]
    assert root["activeSessions"] == 1
    assert root["config"]["schema"]["properties"]["telemetryLevel"]["type"] == "string"

    # every dispatch echoed with serverSeq and origin, in order; the repeated clientSeq 0s too
    echoes = peer.actions()
    assert len(echoes) == len(dispatches) == 34
    assert [d["clientSeq"] for d in dispatches[:7]] == [0] * 7
    for sent, echo in zip(dispatches, echoes):
        assert echo["action"] == sent["action"] and echo["channel"] == ROOT
        assert echo["origin"] == {"clientId": initialize["params"]["clientId"], "clientSeq": sent["clientSeq"]}
        assert "rejectionReason" not in echo
    seqs = [echo["serverSeq"] for echo in echoes]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs) and seqs[0] > result["serverSeq"]

    # listSessions, twice, in the paged shape; pings; and not one error
    for frame in requests:
        reply = peer.reply(frame["id"])
        assert "error" not in reply, reply
        if frame["method"] == "listSessions":
            assert_valid(reply["result"], "ListSessionsResult")
            [item] = reply["result"]["items"]
            assert item["resource"] == running_host.host.session_uri(session) and item["createdAt"].endswith("Z") and "nextCursor" not in reply["result"]
        else:
            assert frame["method"] == "ping" and reply["result"] is None
    # setClientManagedSettingsPermissions got no frame: every frame is accounted for
    assert len(peer.received) == 1 + len(echoes) + len(requests) + 1
    assert_only_what_0_9_0_knows(peer.received)

    # the host merged every pushed setting into the root config, declared or not
    values = running_host.host.store.state(ROOT)["config"]["values"]
    for sent in dispatches:
        for key in sent["action"]["config"]:
            assert key in values
    assert values["telemetryLevel"] == "all" and values["sandbox"]["enabled"] == "off"
    await old_client.ping()
    assert old_client.state(ROOT)["config"]["values"] == values  # the 0.2.0 client saw it all too
    await peer.close()


async def test_a_0_2_0_and_a_0_9_0_client_each_see_root_changes_in_their_own_dialect(
        running_host: RunningHost, connect: Connect) -> None:
    old = await connect()
    new = await Peer.open(running_host)
    await new.initialize("new-client", ["0.9.0"])

    new_seq = 5
    await new.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {
        "channel": ROOT, "clientSeq": new_seq, "action": {"type": "root/configChanged", "config": {"telemetryLevel": "error"}}}})
    echo = await new.until(lambda: next(iter(new.actions()), None))
    assert echo["origin"] == {"clientId": "new-client", "clientSeq": new_seq}
    await old.wait_for(lambda m, e: old.state(ROOT)["config"]["values"].get("telemetryLevel") == "error", timeout=5)

    seq = old.dispatch(ROOT, {"type": "root/configChanged", "config": {"http.proxy": "http://proxy:3128"}})
    assert (await old.outcome(seq)).accepted
    echo = await new.until(lambda: next((a for a in new.actions() if "http.proxy" in a["action"]["config"]), None))
    assert echo["origin"] == {"clientId": old.client_id, "clientSeq": seq}

    # A session made by the 0.2.0 client: its summary reaches each in its own shape.
    old_events = old.subscribe_events()
    session = await old.create_session()
    added = await new.until(lambda: next((f["params"] for f in new.received if f.get("method") == "root/sessionAdded"), None))
    # 0.9.0 names it <provider>:/<id>, 0.2.0 ahp-session:/<id>: the same <id>.
    assert added["summary"]["resource"] == running_host.host.session_uri(session) == "offline:/" + session.split(":/", 1)[1]
    assert isinstance(added["summary"]["createdAt"], str)
    assert_valid(added, "SessionAddedParams")
    while True:
        note = await asyncio.wait_for(old_events.get(), 5)
        if note.method == "root/sessionAdded":
            assert isinstance(note.params["summary"]["createdAt"], int)
            break
    await new.until(lambda: any(a["action"]["type"] == "root/activeSessionsChanged" for a in new.actions()))
    await new.request("ping", {"channel": ROOT})
    assert_only_what_0_9_0_knows(new.received)
    await new.close()


async def test_a_terminal_in_the_root_list_has_a_lifecycle_for_0_9_0_only(running_host: RunningHost, connect: Connect) -> None:
    old = await connect()
    new = await Peer.open(running_host)
    await new.initialize("new-client", ["0.9.0"])
    terminal = "ahp-terminal:/listed"
    await old.request("createTerminal", {"channel": terminal, "claim": {"kind": "client", "clientId": old.client_id}})
    shown = await new.until(lambda: next((a["action"]["terminals"] for a in new.actions()
                                          if a["action"]["type"] == "root/terminalsChanged"), None))
    assert shown == [{"resource": terminal, "title": shown[0]["title"], "claim": {"kind": "client", "clientId": old.client_id},
                      "lifecycle": {"status": "running"}}]
    await old.wait_for(lambda m, e: any(t["resource"] == terminal for t in old.state(ROOT).get("terminals") or []), timeout=5)
    assert all("lifecycle" not in t for t in old.state(ROOT)["terminals"])
    await old.request("disposeTerminal", {"channel": terminal})
    await new.close()


async def test_unsupported_versions_get_minus_32005_listing_every_served_version(running_host: RunningHost) -> None:
    peer = await Peer.open(running_host)
    reply = await peer.initialize("c", ["0.6.0", "0.5.2", "0.5.1"])
    assert reply["error"]["code"] == -32005
    assert reply["error"]["data"] == {"supportedVersions": ["1.0.0", "0.9.0", "0.7.0", "0.2.0"]}
    for version in ("1.0.0", "0.9.0", "0.7.0", "0.2.0"):
        assert version in reply["error"]["message"]
    await asyncio.wait_for(peer._reader, 5)  # the host closes the connection


async def test_a_malformed_version_is_invalid_params_naming_it(running_host: RunningHost) -> None:
    peer = await Peer.open(running_host)
    reply = await peer.initialize("c", ["0.9.0", "0.9"])
    assert reply["error"]["code"] == -32602 and "protocolVersions[1]" in reply["error"]["message"]
    assert (await peer.initialize("c", ["0.7.3"]))["result"]["protocolVersion"] == "0.7.3"
    await peer.close()


async def test_a_0_9_0_client_sending_0_2_0_actions_is_refused_clearly_and_goes_on(
        running_host: RunningHost, connect: Connect) -> None:
    old = await connect()
    session = running_host.host.session_uri(await old.create_session())
    new = await Peer.open(running_host)
    await new.initialize("new-client", ["0.9.0"])
    store = running_host.host.store
    seq_before = store.seq
    for client_seq, (channel, action) in enumerate([
        (session, {"type": "session/turnStarted", "turnId": "t1", "userMessage": {"text": "hi"}}),
        (ROOT, {"type": "session/delta", "turnId": "t1", "partId": "p", "content": "x"}),
        (session, {"type": "chat/turnStarted", "turnId": "t1", "startedAt": "2026-11-26T00:00:00.000Z",
                   "message": {"text": "hi", "origin": {"kind": "user"}}}),
    ]):
        await new.send({"jsonrpc": "2.0", "method": "dispatchAction",
                        "params": {"channel": channel, "clientSeq": client_seq, "action": action}})
    rejections = await new.until(lambda: [a for a in new.actions() if "rejectionReason" in a] if len(new.actions()) >= 3 else None)
    assert [r["origin"]["clientSeq"] for r in rejections] == [0, 1, 2]
    assert "AHP 0.2.0 action" in rejections[0]["rejectionReason"] and "chat/turnStarted" in rejections[0]["rejectionReason"]
    assert "AHP 0.2.0 action" in rejections[1]["rejectionReason"]
    assert "belongs on a chat channel" in rejections[2]["rejectionReason"]
    assert rejections[0]["action"]["type"] == "session/turnStarted"  # the client's own action, echoed back
    assert store.seq == seq_before
    # ...and the connection is still usable
    assert (await new.request("ping", {"channel": ROOT}))["result"] is None
    reply = await new.request("subscribe", {"channel": session})
    assert reply["result"]["snapshot"]["state"]["defaultChat"].startswith("ahp-chat://default/")
    reply = await new.request("createSession", {"channel": "copilotcli:/0b5e1f2a-8f0e-4a3c-9d1e-3c9e2b7a6f10", "provider": "offline"})
    assert reply["error"]["code"] == -32602 and "session URI" in reply["error"]["message"]  # its scheme is its provider
    reply = await new.request("listSessions", {"channel": ROOT, "limit": "all"})
    assert reply["error"]["code"] == -32602 and "limit" in reply["error"]["message"]
    await new.close()


async def test_automations_answer_honestly_on_0_9_0_and_do_not_exist_on_0_7_0(running_host: RunningHost) -> None:
    new = await Peer.open(running_host)
    await new.initialize("new-client", ["0.9.0"])
    assert (await new.request("listAutomationTriggerDefinitions", {"channel": ROOT}))["result"] == {"items": []}
    reply = await new.request("runAutomation", {"channel": "ahp-automations://", "automation": "ahp-automation:/a", "requestId": "r"})
    assert reply["error"]["code"] == -32008 and "no automations" in reply["error"]["message"]
    reply = await new.request("fetchAutomationRuns", {"channel": "ahp-automations://", "automation": "ahp-automation:/a"})
    assert reply["error"]["code"] == -32008
    seven = await Peer.open(running_host)
    await seven.initialize("seven", ["0.7.0"])
    reply = await seven.request("listAutomationTriggerDefinitions", {"channel": ROOT})
    assert reply["error"]["code"] == -32601 and "AHP 0.7.0" in reply["error"]["message"]
    await new.close()
    await seven.close()


async def test_list_sessions_pages_for_newer_clients(running_host: RunningHost, connect: Connect) -> None:
    old = await connect()
    made = [await old.create_session() for _ in range(5)]
    new = await Peer.open(running_host)
    await new.initialize("new-client", ["0.9.0"])
    seen: list[str] = []
    cursor = None
    for _ in range(5):
        params = {"channel": ROOT, "limit": 2, **({"cursor": cursor} if cursor else {})}
        result = (await new.request("listSessions", params))["result"]
        assert len(result["items"]) <= 2
        seen += [item["resource"] for item in result["items"]]
        cursor = result.get("nextCursor")
        if cursor is None:
            break
    assert sorted(seen) == sorted(running_host.host.session_uri(uri) for uri in made) and len(seen) == 5
    all_at_once = (await new.request("listSessions", {"channel": ROOT}))["result"]
    assert [item["resource"] for item in all_at_once["items"]] == seen
    modified = [item["modifiedAt"] for item in all_at_once["items"]]
    assert modified == sorted(modified, reverse=True)
    assert await old.list_sessions()  # a 0.2.0 client still gets the plain list
    await new.close()


async def test_reconnect_replays_through_the_dialect(running_host: RunningHost, connect: Connect) -> None:
    new = await Peer.open(running_host)
    await new.initialize("again", ["0.9.0"])
    seen = (await new.request("ping", {"channel": ROOT}))
    assert seen["result"] is None
    last = running_host.host.store.seq
    await new.close()
    old = await connect()
    await old.create_session()  # root/activeSessionsChanged while the 0.9.0 client is away
    old.dispatch(ROOT, {"type": "root/configChanged", "config": {"telemetryLevel": "crash"}})
    await old.ping()
    back = await Peer.open(running_host)
    reply = await back.request("reconnect", {"channel": ROOT, "clientId": "again", "lastSeenServerSeq": last,
                                             "subscriptions": [ROOT, "ahp-session:/x"]})
    result = reply["result"]
    assert result["type"] == "replay" and result["missing"] == ["ahp-session:/x"]
    types = [envelope["action"]["type"] for envelope in result["actions"]]
    assert "root/configChanged" in types and "root/activeSessionsChanged" in types
    assert all(known_to("0.9.0", t) for t in types)
    # the reconnected connection speaks 0.9.0: automations exist, createChat is "not yet"
    assert (await back.request("listAutomationTriggerDefinitions", {"channel": ROOT}))["result"] == {"items": []}
    await back.close()


@pytest.mark.parametrize("query", [f"tkn={TOKEN}", f"token={TOKEN}"])
async def test_the_token_is_taken_as_tkn_or_token(running_host: RunningHost, query: str) -> None:
    peer = await Peer.open(running_host, query)
    assert (await peer.request("ping", {"channel": ROOT}))["result"] is None
    await peer.close()


@pytest.mark.parametrize("query", ["tkn=wrong", "token=wrong", "", f"tkn={TOKEN}x", f"token=wrong&tkn={TOKEN}"])
async def test_a_missing_or_wrong_token_is_refused(running_host: RunningHost, query: str) -> None:
    from websockets.exceptions import ConnectionClosed, InvalidStatus

    with pytest.raises((InvalidStatus, ConnectionClosed)):
        peer = await Peer.open(running_host, query)
        await peer.request("ping", {"channel": ROOT})


async def test_an_origin_is_still_refused_with_tkn(running_host: RunningHost) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidStatus

    with pytest.raises((InvalidStatus, ConnectionClosed)):
        ws = await connect(f"ws://{running_host.address}:{running_host.port}/?tkn={TOKEN}", origin="https://evil.example")
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"channel": ROOT}}))
        await asyncio.wait_for(ws.recv(), 5)



async def test_agents_advertise_more_chats_and_forks_as_vs_codes_own_host_does(running_host: RunningHost) -> None:
    """VS Code only forks a conversation (and opens more chats) for an agent whose ``capabilities``
    advertise it, as its own agent host's do (``multipleChats``)."""
    for version in ("0.9.0", "0.7.0"):
        peer = await Peer.open(running_host)
        [root] = (await peer.initialize(f"client-{version}", [version]))["result"]["snapshots"]
        assert root["state"]["agents"]
        for agent in root["state"]["agents"]:
            assert agent["capabilities"] == {"multipleChats": {"fork": True}}
            assert_valid(agent, "AgentInfo")
        await peer.close()
