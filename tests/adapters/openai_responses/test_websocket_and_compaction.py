"""Responses over a WebSocket and `POST /v1/responses/compact`, with the official `openai` SDK
(`client.responses.connect()`, `client.responses.compact()`) and a bare `websockets` client, through the gateway in
front of the built-in agent: a response, sequential responses on one connection, a `store: false` continuation on
its socket, another connection not knowing it, a failed continuation evicting it, a client leaving mid-run, bad
messages; a compaction continued from its item.

The built-in agent says which turn of the conversation it is answering ("(turn N)"): a continuation that lost its
history would be turn 1 again."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import orjson
import pytest
from servers import Served
from websockets.sync.client import connect

from gateway.agent.server import create_agent_app
from gateway.config import Cors, GatewayConfig, Route, Store, Upstream
from gateway.server.app import create_app

UPSTREAMS = {"ag-ui": "/agui", "a2a": "/a2a"}
"""One that takes the whole history each turn, one that keeps it."""
_ENDED = ("response.completed", "response.incomplete", "response.failed", "error")


class World:
    def __init__(self, agent: str, gateway: str) -> None:
        self.agent = agent
        self.url = gateway + "/v1"
        self.socket_url = self.url.replace("http://", "ws://") + "/responses"


@pytest.fixture(scope="module", params=list(UPSTREAMS))
def world(request: pytest.FixtureRequest) -> Iterator[World]:
    dialect = request.param
    with Served(create_agent_app(dialect)) as agent:
        route = Route(name="agent", client_dialects=["openai-responses", "openai-chat"],
                      upstream=Upstream(url=agent.url + UPSTREAMS[dialect], dialect=dialect),
                      cors=Cors(allow_origins=["https://app.example"]))
        with Served(create_app(GatewayConfig(routes=[route], store=Store(url="memory://")))) as gw:
            yield World(agent.url, gw.url)


@pytest.fixture
def full_history(request: pytest.FixtureRequest) -> None:
    """A compaction's history is one the upstream may not have heard in that shape (assistant turns a client wrote,
    a user message never sent): an upstream that keeps the history itself refuses it, as it refuses any unheard
    history a client sends (409, `HistoryConflict`)."""
    if request.node.callspec.params["world"] != "ag-ui":
        pytest.skip("the upstream keeps the history itself")


@pytest.fixture
def client(world: World) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=world.url, api_key="unused", max_retries=0, timeout=30) as c:
        yield c


def _turn(connection: Any, **request: Any) -> list[Any]:
    """One request on an SDK connection: its events, up to the terminal one."""
    connection.response.create(model="agent", **request)
    events = []
    for event in connection:
        events.append(event)
        if event.type in _ENDED:
            return events
    raise AssertionError(f"the connection ended after {[e.type for e in events]}")


def _text(events: list[Any]) -> str:
    final = events[-1].response
    return "".join(part.text for item in final.output if item.type == "message" for part in item.content)


def test_a_response_streams_its_semantic_events_over_the_socket(client: openai.OpenAI) -> None:
    with client.responses.connect() as connection:
        events = _turn(connection, input="hello")
    types = [e.type for e in events]
    assert types[0] == "response.created" and types[-1] == "response.completed"
    assert "response.output_text.delta" in types
    assert [e.sequence_number for e in events] == list(range(1, len(events) + 1))
    assert _text(events) == "You said: hello. (turn 1)"


def test_responses_on_one_connection_run_one_after_another(client: openai.OpenAI) -> None:
    with client.responses.connect() as connection:
        first = _turn(connection, input="first", store=False)
        second = _turn(connection, input="second", store=False)
    assert [_text(first), _text(second)] == ["You said: first. (turn 1)", "You said: second. (turn 1)"]
    assert first[-1].response.id != second[-1].response.id
    assert second[0].sequence_number == 1  # each response numbers its own events


def test_a_store_false_response_is_continued_on_its_socket_with_only_new_input(client: openai.OpenAI) -> None:
    with client.responses.connect() as connection:
        first = _turn(connection, input="remember cobalt", store=False)
        second = _turn(connection, input="what was it", store=False, previous_response_id=first[-1].response.id)
        third = _turn(connection, input="and again", store=False, previous_response_id=second[-1].response.id)
    assert _text(second) == "You said: what was it. (turn 2)"
    assert _text(third) == "You said: and again. (turn 3)"
    assert second[-1].response.previous_response_id == first[-1].response.id


def test_a_stored_response_is_continued_over_the_socket_from_the_store(client: openai.OpenAI) -> None:
    first = client.responses.create(model="agent", input="hello")
    with client.responses.connect() as connection:
        events = _turn(connection, input="again", previous_response_id=first.id)
    assert _text(events) == "You said: again. (turn 2)"


def test_another_connection_does_not_know_a_store_false_response(client: openai.OpenAI) -> None:
    with client.responses.connect() as connection:
        first = _turn(connection, input="remember copper", store=False)
    with client.responses.connect() as connection:
        refused = _turn(connection, input="what was it", store=False, previous_response_id=first[-1].response.id)
        recovered = _turn(connection, input="start again", store=False)
    assert refused[-1].type == "error" and len(refused) == 1
    assert refused[-1].error.code == "previous_response_not_found"
    assert refused[-1].error.param == "previous_response_id" and refused[-1].status == 404
    assert _text(recovered) == "You said: start again. (turn 1)"


def test_a_failed_continuation_evicts_the_response_it_followed(client: openai.OpenAI) -> None:
    with client.responses.connect() as connection:
        first = _turn(connection, input="remember ember", store=False)
        previous = first[-1].response.id
        failed = _turn(connection, store=False, previous_response_id=previous,
                       input=[{"type": "function_call_output", "call_id": "call_missing", "output": "x"}])
        retried = _turn(connection, input="try again", store=False, previous_response_id=previous)
    assert failed[-1].type == "error" and "call_missing" in failed[-1].error.message
    assert failed[-1].status == 422
    assert retried[-1].type == "error" and retried[-1].error.code == "previous_response_not_found"


def test_a_failing_run_ends_in_band_and_evicts_what_it_followed(client: openai.OpenAI) -> None:
    with client.responses.connect() as connection:
        first = _turn(connection, input="hello", store=False)
        failed = _turn(connection, input="please fail", store=False, previous_response_id=first[-1].response.id)
        retried = _turn(connection, input="again", store=False, previous_response_id=first[-1].response.id)
    assert [e.type for e in failed if e.type in _ENDED] == ["response.failed"]
    assert failed[-1].response.error.message == "scripted failure"
    assert retried[-1].error.code == "previous_response_not_found"


def test_a_client_that_leaves_mid_run_cancels_the_upstream(world: World) -> None:
    with httpx.Client() as http:
        before = http.get(world.agent + "/_disconnects").json()
        with connect(world.socket_url) as socket:
            socket.send(orjson.dumps({"type": "response.create", "model": "agent", "input": "hang on"}).decode())
            while orjson.loads(socket.recv(timeout=10))["type"] != "response.output_text.delta":
                pass
        deadline = time.monotonic() + 5
        while http.get(world.agent + "/_disconnects").json() == before:
            assert time.monotonic() < deadline, "the upstream's run went on after its client left"
            time.sleep(0.05)


def test_bad_messages_get_an_error_event_and_the_connection_goes_on(world: World) -> None:
    def refused(socket: Any, message: str) -> dict[str, Any]:
        socket.send(message)
        event: dict[str, Any] = orjson.loads(socket.recv(timeout=10))
        assert event["type"] == "error" and isinstance(event["status"], int), event
        assert isinstance(event["error"]["code"], str) and isinstance(event["error"]["message"], str), event
        return event

    with connect(world.socket_url) as socket:
        assert refused(socket, "not json")["error"]["code"] == "malformed_request"
        assert refused(socket, "[1, 2]")["status"] == 400
        assert refused(socket, '{"type": "response.cancel"}')["error"]["param"] == "type"
        streamed = refused(socket, '{"type": "response.create", "model": "agent", "input": "x", "stream": true}')
        assert streamed["error"]["param"] == "stream"
        assert refused(socket, '{"type": "response.create", "input": "no model"}')["error"]["param"] == "model"
        socket.send(orjson.dumps({"type": "response.create", "model": "agent", "input": "still here"}).decode())
        while (event := orjson.loads(socket.recv(timeout=10)))["type"] != "response.completed":
            assert event["type"] != "error", event
        assert event["response"]["output"][0]["content"][0]["text"] == "You said: still here. (turn 1)"


def test_a_browser_page_of_an_origin_the_route_does_not_allow_cannot_open_the_socket(world: World) -> None:
    with connect(world.socket_url, origin="https://app.example") as socket:  # type: ignore[arg-type]
        socket.send(orjson.dumps({"type": "response.create", "model": "agent", "input": "hi"}).decode())
        assert orjson.loads(socket.recv(timeout=10))["type"] == "response.created"
    with pytest.raises(Exception, match="403"):
        connect(world.socket_url, origin="https://evil.example")  # type: ignore[arg-type]


def test_a_compaction_is_continued_from_its_item_with_the_whole_history(client: openai.OpenAI,
                                                                        full_history: None) -> None:
    compacted = client.responses.compact(model="agent", input=[
        {"role": "user", "content": "remember slate"},
        {"role": "assistant", "content": "OK."},
        {"role": "user", "content": "compress this"},
        {"role": "assistant", "content": "Done."},
    ])
    assert compacted.object == "response.compaction" and [i.type for i in compacted.output] == ["compaction"]
    item = compacted.output[0].model_dump(exclude_none=True)
    over_http = client.responses.create(model="agent", input=[item, {"role": "user", "content": "go on"}])
    assert over_http.output_text == "You said: go on. (turn 3)"
    with client.responses.connect() as connection:
        events = _turn(connection, store=False, input=[item, {"role": "user", "content": "and on"}])
        after = _turn(connection, store=False, input="further", previous_response_id=events[-1].response.id)
    assert _text(events) == "You said: and on. (turn 3)"
    assert _text(after) == "You said: further. (turn 4)"


def test_a_compaction_of_a_stored_response_holds_its_conversation(client: openai.OpenAI,
                                                                  full_history: None) -> None:
    first = client.responses.create(model="agent", input="hello")
    compacted = client.responses.compact(model="agent", previous_response_id=first.id, input="and this")
    item = compacted.output[0].model_dump(exclude_none=True)
    after = client.responses.create(model="agent", input=[item, {"role": "user", "content": "go on"}])
    assert after.output_text == "You said: go on. (turn 3)"


def test_a_compaction_needs_a_model_and_an_item_of_the_gateways(world: World, client: openai.OpenAI) -> None:
    with httpx.Client() as http:
        missing = http.post(world.url + "/responses/compact", json={"input": "compact this"})
        assert missing.status_code in (400, 422) and missing.json()["error"]["param"] == "model"
        unknown = http.post(world.url + "/responses/compact", json={"model": "agent",
                                                                     "previous_response_id": "resp_nowhere"})
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "previous_response_not_found"
    forged = {"type": "compaction", "encrypted_content": "gAAAA-someone-elses"}
    with pytest.raises(openai.UnprocessableEntityError, match="compaction"):
        client.responses.create(model="agent", input=[forged, {"role": "user", "content": "go on"}])  # type: ignore[list-item]
