"""Human in the loop on the gateway's `/mcp` (2025-06-18, 2025-11-25), with the official clients (`mcp` 2.3.0's
Python `Client`, `@modelcontextprotocol/sdk` 1.32.2's TypeScript `Client`) and the built-in agent behind the route,
which asks to approve a tool call on the word "approve": a client without elicitation reads the question in the
result and answers by a later call with the same `conversation_id`; a client that declared elicitation is asked
in band (`elicitation/create` on the call's stream), and its accept, decline or cancel answers the interrupt while
the same call goes on. Install first: `.venv/bin/python tests/peers_env.py` and `npm ci --prefix tests/clients`.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import orjson
import pytest
from node_clients import run_mcp
from peers_env import run_mcp_client
from redis_server import RedisServer
from servers import Served
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters import registry
from adapters.mcp import elicitation, resumption
from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.core import events as canonical
from gateway.core.ids import new_id
from gateway.core.turn import Resume, approves
from gateway.server.app import create_app
from gateway.server.endpoints import named_routes
from tests.adapters.mcp.test_resumption import sse_events

Plan = list[dict[str, Any]]


def python_client(url: str, plan: Plan) -> list[dict[str, Any]]:
    run = run_mcp_client(url, plan)
    assert run.error is None, run.error
    return run.steps


def typescript_client(url: str, plan: Plan) -> list[dict[str, Any]]:
    run = run_mcp(url, plan)
    assert run["error"] is None, run["error"]
    return run["steps"]


CLIENTS = {"python": python_client, "typescript": typescript_client}
Send = Callable[[str, Plan], list[dict[str, Any]]]


@pytest.fixture(params=sorted(CLIENTS))
def send(request: pytest.FixtureRequest) -> Send:
    return CLIENTS[request.param]


ASKS = {"name": {"type": "object", "properties": {"name": {"type": "string", "title": "Name"}}, "required": ["name"]},
        "address": {"type": "object", "properties": {"address": {"type": "object", "properties": {
            "city": {"type": "string"}}}}}}
"""The `responseSchema`s the talking agent's interrupts declare, by the word that asks for one: a form MCP allows,
and a nested one it does not."""


def talking_agent() -> Starlette:
    """An AG-UI agent (the AG-UI dialect's own parser and encoder) that talks before it asks: a few words, then an
    interrupt (a tool approval, or one with the `ASKS` schema the message names); an answer to it, in words that
    say what came: its status, its payload, and whether it approves."""
    dialect = registry.get("ag-ui")

    async def run(request: Request) -> Response:
        turn = dialect.parse_request(orjson.loads(await request.body()))
        events: list[canonical.Event] = [canonical.RunStarted(thread_id=turn.conversation_id or "t", run_id="r")]
        said = new_id("msg")
        if turn.resume:
            words = [f"{r.interrupt_id} {r.status} {orjson.dumps(r.payload).decode()} approves={approves(r)}. "
                     for r in turn.resume]
        else:
            words = ["Let me ", "see what ", "I can ", "do."]
        events += [canonical.TextStart(said), *(canonical.TextDelta(said, w) for w in words), canonical.TextEnd(said)]
        if not turn.resume:
            text = turn.messages[-1].text
            schema = next((ASKS[word] for word in ASKS if word in text), None)
            call = new_id("call")
            if schema is None:
                events += [canonical.ToolCallStart(call, "delete_file"), canonical.ToolCallEnd(call)]
            events.append(canonical.Interrupt(new_id("int"), reason="input" if schema else "tool_approval",
                                              message="Your name?" if schema else "Delete /tmp/demo?",
                                              tool_call_id=None if schema else call, response_schema=schema))
        events.append(canonical.RunFinished(outcome="interrupt" if not turn.resume else "success"))
        encoder = dialect.new_encoder(turn)
        return Response(encoder.encode(events), encoder.status_code, encoder.headers)

    return Starlette(routes=[Route("/agui", run, methods=["POST"])])


@pytest.fixture(scope="module")
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture(scope="module")
def url(store: MemoryStore) -> Iterator[str]:
    with Served(create_agent_app("ag-ui", pace=0.01)) as agent, Served(talking_agent()) as talking:
        routes = [{"name": "helper", "paths": ["/helper"], "client_dialects": ["mcp"],
                   "upstream": {"url": f"{agent.url}/agui", "dialect": "ag-ui"}},
                  {"name": "talker", "paths": ["/talker"], "client_dialects": ["mcp"],
                   "upstream": {"url": f"{talking.url}/agui", "dialect": "ag-ui"}}]
        config = GatewayConfig.model_validate({"routes": routes, "keepalive_seconds": 0.5})
        with Served(create_app(config, store=store)) as gateway:
            yield f"{gateway.url}/mcp"


def call(message: str, conversation: str | None = None, tool: str = "helper", **step: Any) -> dict[str, Any]:
    arguments = {"message": message} | ({"conversation_id": conversation} if conversation else {})
    return {"call": tool, "arguments": arguments, **step}


def result(step: dict[str, Any]) -> dict[str, Any]:
    assert "error" not in step, step
    assert step["isError"] is False, step
    return step


def test_a_client_without_elicitation_answers_by_a_later_call_with_the_conversation_id(url: str, send: Send) -> None:
    [asked] = send(url, [call("please approve the deletion")])
    asked = result(asked)
    conversation = asked["structured"]["conversation_id"]
    [interrupt] = asked["structured"]["interrupts"]
    assert interrupt["reason"] == "tool_approval" and interrupt["toolCallId"]
    assert "Delete /tmp/demo?" in asked["content"][0]
    assert f'call helper again with conversation_id "{conversation}"' in asked["content"][0]
    assert "elicited" not in asked

    [answered] = send(url, [call("yes", conversation)])
    assert result(answered)["content"] == [f'Resumed {interrupt["id"]}: "yes".']
    assert "interrupts" not in answered["structured"]

    [then] = send(url, [call("and now?", conversation)])  # nothing waits: a message again
    assert result(then)["content"] == ["You said: and now?. (turn 2)"]


def test_a_later_call_to_a_conversation_waiting_for_nothing_is_the_users_message(url: str, send: Send) -> None:
    [first] = send(url, [call("hello")])
    conversation = result(first)["structured"]["conversation_id"]
    [second] = send(url, [call("yes", conversation)])
    assert result(second)["content"] == ["You said: yes. (turn 2)"]


def test_a_yes_or_no_in_words_answers_an_approval_as_said() -> None:
    assert approves(Resume("int-1", payload="yes")) is True
    assert approves(Resume("int-1", payload="No.")) is False
    assert approves(Resume("int-1", payload="deny")) is False
    assert approves(Resume("int-1", payload="delete it, please")) is True  # not a no


def asked_in_band(step: dict[str, Any]) -> dict[str, Any]:
    """The one `elicitation/create` the call brought, which asks for an approval."""
    [asked] = step["elicited"]
    assert asked["message"] == "Delete /tmp/demo?"
    assert asked["requestedSchema"]["properties"]["approved"]["type"] == "boolean"
    return dict(asked)


def increasing(step: dict[str, Any]) -> None:
    """Progress across both runs of the call keeps increasing for its token."""
    at = [progress for progress, _, _ in step["progress"]]
    assert at and all(later > earlier for earlier, later in itertools.pairwise(at)), at


def test_an_accepted_elicitation_approves_and_the_same_call_goes_on(url: str, send: Send) -> None:
    [step] = send(url, [call("please approve the deletion", elicit={"action": "accept",
                                                                     "content": {"approved": True}})])
    asked_in_band(result(step))
    [said] = step["content"]
    assert said.startswith("Resumed int-") and said.endswith(': {"approved":true}.')
    assert "interrupts" not in step["structured"] and step["structured"]["conversation_id"]
    increasing(step)
    assert step["progress"][-1][2] == said  # the second run's text is the call's progress too


def test_a_declined_elicitation_denies_the_approval(url: str, send: Send) -> None:
    [step] = send(url, [call("please approve the deletion", elicit={"action": "decline"})])
    asked_in_band(result(step))
    assert step["content"][0].endswith(': {"approved":false}.')
    increasing(step)


def test_a_cancelled_elicitation_cancels_the_interrupt(url: str, send: Send) -> None:
    [step] = send(url, [call("please approve the deletion", elicit={"action": "cancel"})])
    asked_in_band(result(step))
    assert step["content"][0].endswith(": null.")  # cancelled: no payload
    assert "interrupts" not in step["structured"]


def test_an_answer_after_the_deadline_ends_the_call_with_the_question(url: str, send: Send,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(elicitation, "ANSWER_WAIT_S", 1.0)
    [step] = send(url, [call("please approve the deletion", elicit={"action": "accept", "after": 2.5,
                                                                     "content": {"approved": True}})])
    asked_in_band(result(step))
    conversation = step["structured"]["conversation_id"]
    [interrupt] = step["structured"]["interrupts"]
    assert "Delete /tmp/demo?" in step["content"][0] and conversation in step["content"][0]
    [late] = send(url, [call("no", conversation)])  # the late answer answered nothing: a later call does
    assert result(late)["content"] == [f'Resumed {interrupt["id"]}: "no".']


def test_progress_goes_on_increasing_across_the_runs_of_one_call(url: str, send: Send) -> None:
    [step] = send(url, [call("delete it", tool="talker", elicit={"action": "accept", "content": {"approved": True}})])
    asked_in_band(result(step))
    messages = [message for _, _, message in step["progress"]]
    assert "Let me see what I can do." in messages  # the first run's, before it asked
    assert messages[-1] == step["content"][0] and "resolved" in messages[-1]
    increasing(step)
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(messages))  # the text so far
    [said] = step["content"]  # both runs' text: one call's answer
    assert said.startswith("Let me see what I can do.\n\nint_") and said.endswith(
        'resolved {"approved":true} approves=True. ')


def test_an_interrupts_own_schema_is_the_form_and_its_content_the_answer(url: str, send: Send) -> None:
    [step] = send(url, [call("your name", tool="talker", elicit={"action": "accept", "content": {"name": "Ada"}})])
    [asked] = result(step)["elicited"]
    assert asked["requestedSchema"] == ASKS["name"] and asked["message"] == "Your name?"
    assert step["content"][0].endswith('resolved {"name":"Ada"} approves=True. ')


def test_a_schema_mcp_does_not_allow_is_asked_as_one_text(url: str, send: Send) -> None:
    [step] = send(url, [call("your address", tool="talker", elicit={"action": "accept",
                                                                     "content": {"answer": "Paris"}})])
    [asked] = result(step)["elicited"]
    assert asked["requestedSchema"]["properties"] == {"answer": {"type": "string", "title": "Answer"}}
    assert step["content"][0].endswith('resolved "Paris" approves=True. ')


def test_a_declined_question_that_is_no_approval_is_cancelled(url: str, send: Send) -> None:
    [step] = send(url, [call("your name", tool="talker", elicit={"action": "decline"})])
    assert result(step)["content"][0].endswith("cancelled null approves=False. ")


def test_the_answer_may_come_to_another_replica_than_the_one_holding_the_call() -> None:
    """Two gateways sharing Redis: the call's stream on one, the client's answer POSTed to the other (as a load
    balancer may send it), which keeps it where the first finds it."""
    redis = RedisServer()
    redis.start()
    try:
        with Served(create_agent_app("ag-ui", pace=0.01)) as agent:
            routes = [{"name": "helper", "paths": ["/helper"], "client_dialects": ["mcp"],
                       "upstream": {"url": f"{agent.url}/agui", "dialect": "ag-ui"}}]
            config = GatewayConfig.model_validate({"routes": routes, "store": {"url": redis.url}})
            with Served(create_app(config)) as one, Served(create_app(config)) as two, \
                    httpx.Client(timeout=10) as http:
                steps = across_replicas(http, f"{one.url}/mcp", f"{two.url}/mcp")
    finally:
        redis.stop()
    asked, answered, ended = steps
    assert asked["method"] == "elicitation/create" and answered == 202
    [said] = ended["result"]["content"]
    assert said["text"].startswith("Resumed int-") and said["text"].endswith(': {"approved":true}.')


def test_a_client_that_leaves_while_asked_answers_later_and_comes_back_for_the_rest(url: str) -> None:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    with httpx.Client(timeout=10) as http:
        headers["mcp-session-id"] = http.post(url, json=initialize({"elicitation": {}})).headers["mcp-session-id"]
        with http.stream("POST", url, json=tool_call("please approve"), headers=headers) as stream:
            asked = next(e for e in sse_events(stream.iter_lines())
                         if e.get("message") and e["message"].get("method") == "elicitation/create")
        time.sleep(0.3)  # gone: the call waits on for its answer, which may come with the client back
        late = {"jsonrpc": "2.0", "id": asked["message"]["id"],
                "result": {"action": "accept", "content": {"approved": True}}}
        answered = http.post(url, json=late, headers=headers).status_code
        resumed = http.get(url, headers={**{k: v for k, v in headers.items() if k != "content-type"},
                                         "accept": "text/event-stream", "last-event-id": asked["id"]})
    rest = list(sse_events(iter(resumed.text.splitlines())))
    run, _, number = asked["id"].rpartition("/")
    assert answered == 202 and resumed.status_code == 200
    assert [e["id"] for e in rest] == [f"{run}/{n}" for n in range(int(number) + 1, int(number) + 1 + len(rest))]
    assert rest[-1]["message"]["id"] == 2
    assert rest[-1]["message"]["result"]["content"][0]["text"].endswith('{"approved":true}.')


def initialize(capabilities: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}}


def tool_call(message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "helper", "arguments": {"message": message}}}


def across_replicas(http: httpx.Client, one: str, two: str) -> list[Any]:
    """A raw client: a session opened on `one` that elicits, a call on `one` that asks, its answer POSTed to
    `two`; the question, the answer's status and the call's response."""
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    opened = http.post(one, json=initialize({"elicitation": {}}))
    headers["mcp-session-id"] = opened.headers["mcp-session-id"]
    steps: list[Any] = []
    with http.stream("POST", one, json=tool_call("please approve"), headers=headers) as stream:
        for line in stream.iter_lines():
            if not line.startswith("data:") or not line[5:].strip():  # the stream's priming event has no data
                continue
            message = orjson.loads(line[5:])
            if message.get("method") == "elicitation/create":
                steps.append(message)
                answer = {"jsonrpc": "2.0", "id": message["id"],
                          "result": {"action": "accept", "content": {"approved": True}}}
                steps.append(http.post(two, json=answer, headers=headers).status_code)
            elif message.get("id") == 2:
                steps.append(message)
    return steps


def test_the_form_is_the_interrupts_schema_only_where_the_clients_version_allows_it() -> None:
    titled = {"type": "object", "properties": {"size": {"type": "string", "oneOf": [{"const": "s", "title": "S"}]}}}
    assert elicitation.form_for({"responseSchema": titled}) == (titled, False)
    assert elicitation.form_for({"responseSchema": titled}, enums_of_2025_11=False)[0]["properties"] == {
        "answer": {"type": "string", "title": "Answer"}}  # 2025-06-18 has untitled enums only
    assert elicitation.form_for({"responseSchema": {"type": "boolean"}}) == (
        {"type": "object", "properties": {"answer": {"type": "boolean"}}, "required": ["answer"]}, True)
    assert elicitation.form_for({"responseSchema": ASKS["address"], "toolCallId": "c1"}) == (
        elicitation.APPROVAL, False)  # nested: not a form MCP allows; about a tool call: an approval


def test_a_call_past_the_runs_one_answer_may_chain_ends_with_the_last_runs_result(
        url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(named_routes, "MAX_RUNS", 1)
    monkeypatch.setattr(resumption, "MAX_RUNS", 1)  # what the call's last run says: no more questions
    [step] = python_client(url, [call("please approve", elicit={"action": "accept", "content": {"approved": True}})])
    assert "elicited" not in result(step)  # not asked: no run may follow
    assert step["structured"]["interrupts"] and "Delete /tmp/demo?" in step["content"][0]
