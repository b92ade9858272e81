"""An MCP server's question to the user (elicitation) as an interrupt the gateway's client answers: a real MCPServer
(`mcp` 2.3.0, `tests/peers/mcp_server.py`'s `confirm` tool, which asks to confirm by a resolver) behind two
gateways that share one conversation store, as two replicas do. In 2026-07-28 the question is an `input_required`
result; the answer, taken by either replica, retries the call with the server's `requestState`. A server of the
2025 protocol only (the same server under `/legacy`) asks on the call's stream and waits: the replica that ran the
call holds it open and, given the answer, POSTs it to the server and reads the call on; the other replica, or
an answer after the route's deadline, is told the question is no longer open.
Install first: `.venv/bin/python tests/peers_env.py`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from e2e import Reply, post, request_body, user_message
from peers_env import mcp_upstream
from servers import Served

from adapters import registry
from adapters.vercel.request import INTERRUPT_CALL_PREFIX
from gateway.config import GatewayConfig
from gateway.conversations.mapper import ConversationMapper
from gateway.conversations.recorder import RunRecorder
from gateway.conversations.store import MemoryStore
from gateway.core.events import Event, Interrupt, RunError, RunFinished, RunStarted, ToolCallStart
from gateway.core.turn import Message, Resume, Turn
from gateway.server.app import create_app


class World:
    def __init__(self, replicas: list[str]) -> None:
        self.replicas = replicas
        self.http = httpx.Client(timeout=30)

    def send(self, client: str, route: str, body: dict[str, Any], replica: int = 0) -> Reply:
        return Reply(client, post(self.http, f"{self.replicas[replica]}/{route}/in", body))

    def ask(self, client: str, route: str, text: str, conversation: str, replica: int = 0
            ) -> tuple[Reply, Interrupt]:
        """The first turn: the tool's question, as the client's interrupt."""
        reply = self.send(client, route, request_body(client, [user_message(client, text)], conversation), replica)
        assert reply.response.status_code == 200, reply.response.text
        interrupts = [e for e in reply.events if isinstance(e, Interrupt)]
        assert len(interrupts) == 1, reply.events
        return reply, interrupts[0]


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with mcp_upstream() as server:
        routes = [{"name": "confirm", "paths": ["/confirm/in"], "client_dialects": ["ag-ui", "vercel"],
                   "upstream": {"url": f"{server}/mcp", "dialect": "mcp", "agent": "confirm"}},
                  {"name": "legacy-confirm", "paths": ["/legacy-confirm/in"], "client_dialects": ["ag-ui", "vercel"],
                   "upstream": {"url": f"{server}/legacy/mcp", "dialect": "mcp", "agent": "confirm"}},
                  {"name": "legacy-brief", "paths": ["/legacy-brief/in"], "client_dialects": ["ag-ui"],
                   "upstream": {"url": f"{server}/legacy/mcp", "dialect": "mcp", "agent": "confirm"},
                   "timeouts": {"total": 1.5}}]
        config = GatewayConfig.model_validate({"routes": routes, "keepalive_seconds": 0.5})
        store = MemoryStore()  # the replicas' shared conversation store
        narrow = GatewayConfig.model_validate({"routes": [  # its own gateway: a pool whose connections it alone holds
            {"name": "legacy-narrow", "paths": ["/legacy-narrow/in"], "client_dialects": ["ag-ui"],
             "upstream": {"url": f"{server}/legacy/mcp", "dialect": "mcp", "agent": "confirm", "max_connections": 2}}]})
        with Served(create_app(config, store=store)) as one, Served(create_app(config, store=store)) as two, \
                Served(create_app(narrow, store=MemoryStore())) as three:
            world = World([one.url, two.url, three.url])
            yield world
            world.http.close()


def ag_ui_answer(conversation: str, interrupt: Interrupt, payload: Any, status: str = "resolved") -> dict[str, Any]:
    return request_body("ag-ui", [user_message("ag-ui", "deploy")], conversation,
                        resume=[{"interruptId": interrupt.id, "status": status, "payload": payload}])


ERAS = [("confirm", 1), ("legacy-confirm", 0)]
"""Each era's route, and the replica that takes the answer: 2026-07-28's any (the other one here), 2025's the one
that holds the call."""


@pytest.mark.parametrize("route", ["confirm", "legacy-confirm"])
def test_an_mcp_servers_question_is_an_ag_ui_interrupt_with_its_form_as_the_response_schema(world: World,
                                                                                            route: str) -> None:
    reply, interrupt = world.ask("ag-ui", route, "deploy", f"ask-{route}")
    assert interrupt.message == "Really deploy?"
    schema = interrupt.response_schema
    assert isinstance(schema, dict) and schema["properties"]["ok"]["type"] == "boolean"
    assert schema["required"] == ["ok"]
    assert reply.finished is not None and reply.finished.outcome == "interrupt"
    assert interrupt.upstream_state is None  # the server's state stays in the gateway
    assert b"requestState" not in reply.response.content


@pytest.mark.parametrize(("route", "replica"), ERAS)
def test_an_ag_ui_answer_goes_back_to_the_server_and_the_client_gets_the_tools_text(world: World, route: str,
                                                                                    replica: int) -> None:
    conversation = f"accept-{route}"
    _, interrupt = world.ask("ag-ui", route, "deploy", conversation)
    answer = ag_ui_answer(conversation, interrupt, {"ok": True, "note": "right now"})
    done = world.send("ag-ui", route, answer, replica=replica)
    assert done.response.status_code == 200, done.response.text
    assert done.text == "deploy: done (right now)"
    assert done.finished is not None and done.finished.outcome != "interrupt"


@pytest.mark.parametrize(("route", "replica"), ERAS)
@pytest.mark.parametrize(("payload", "status", "said"), [
    (False, "resolved", "deploy: declined"),
    ({"action": "decline"}, "resolved", "deploy: declined"),
    ("yes", "resolved", "deploy: done"),
    ({"ok": False}, "resolved", "deploy: not confirmed"),
    (None, "cancelled", "deploy: cancelled"),
])
def test_an_ag_ui_answer_is_the_elicitations_accept_decline_or_cancel(world: World, route: str, replica: int,
                                                                      payload: Any, status: str, said: str) -> None:
    conversation = f"answer-{route}-{status}-{payload!r}"
    _, interrupt = world.ask("ag-ui", route, "deploy", conversation)
    done = world.send("ag-ui", route, ag_ui_answer(conversation, interrupt, payload, status), replica=replica)
    assert done.text == said


@pytest.mark.parametrize(("route", "replica"), ERAS)
@pytest.mark.parametrize(("approved", "said"), [(True, "deploy: done"), (False, "deploy: declined")])
def test_a_usechat_approval_answers_the_mcp_servers_question(world: World, route: str, replica: int, approved: bool,
                                                             said: str) -> None:
    conversation = f"vercel-{route}-{approved}"
    reply, interrupt = world.ask("vercel", route, "deploy", conversation)
    assert interrupt.message == "Really deploy?"
    assert not any(isinstance(e, ToolCallStart) for e in reply.events)  # the call standing for it is the interrupt
    part = {"type": f"tool-{interrupt.reason}", "toolCallId": INTERRUPT_CALL_PREFIX + interrupt.id,
            "state": "approval-responded",
            "input": {"message": interrupt.message}, "approval": {"id": interrupt.id, "approved": approved}}
    messages = [user_message("vercel", "deploy"), {"id": "a0", "role": "assistant", "parts": [part]}]
    done = world.send("vercel", route, request_body("vercel", messages, conversation), replica=replica)
    assert done.response.status_code == 200, done.response.text
    assert done.text == said


@pytest.mark.parametrize(("route", "replica"), ERAS)
def test_an_answer_sent_again_is_not_sent_to_the_server_twice(world: World, route: str, replica: int) -> None:
    conversation = f"twice-{route}"
    _, interrupt = world.ask("ag-ui", route, "deploy", conversation)
    answer = ag_ui_answer(conversation, interrupt, {"ok": True})
    assert world.send("ag-ui", route, answer, replica=replica).text == "deploy: done"
    again = world.send("ag-ui", route, answer, replica=replica)
    assert again.text != "deploy: done"


def test_a_2025_answer_at_the_replica_that_does_not_hold_the_call_is_told_to_ask_again(world: World) -> None:
    _, interrupt = world.ask("ag-ui", "legacy-confirm", "deploy", "elsewhere-1")
    refused = world.send("ag-ui", "legacy-confirm", ag_ui_answer("elsewhere-1", interrupt, {"ok": True}), replica=1)
    assert refused.response.status_code == 410
    assert refused.error is not None and "no longer open" in refused.error.message
    assert refused.error.code == "resume_unavailable"


def test_a_2025_answer_after_the_routes_deadline_is_told_to_ask_again(world: World) -> None:
    _, interrupt = world.ask("ag-ui", "legacy-brief", "deploy", "late-1")
    time.sleep(2)  # the route's total is 1.5s: the held call was given up
    refused = world.send("ag-ui", "legacy-brief", ag_ui_answer("late-1", interrupt, {"ok": True}))
    assert refused.response.status_code == 410
    assert refused.error is not None and "no longer open" in refused.error.message


def test_a_route_holds_at_most_half_its_upstream_connections_giving_up_the_oldest(world: World) -> None:
    _, first = world.ask("ag-ui", "legacy-narrow", "deploy", "narrow-1", replica=2)
    _, second = world.ask("ag-ui", "legacy-narrow", "ship", "narrow-2", replica=2)  # 2 connections: one call held
    refused = world.send("ag-ui", "legacy-narrow", ag_ui_answer("narrow-1", first, {"ok": True}), replica=2)
    assert refused.response.status_code == 410
    answer = request_body("ag-ui", [user_message("ag-ui", "ship")], "narrow-2",
                          resume=[{"interruptId": second.id, "status": "resolved", "payload": {"ok": True}}])
    assert world.send("ag-ui", "legacy-narrow", answer, replica=2).text == "ship: done"


# The pieces on their own: the retried call as sent, and what the gateway refuses to relay.

FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}, "note": {"type": "string"}}, "required": ["ok"]}


def asked(result: dict[str, Any], variant: str = "2026-07-28") -> list[Event]:
    """What the MCP decoder makes of a `tools/call` answered with `result`."""
    decoder = registry.get("mcp").new_decoder()
    decoder.sent(registry.get("mcp").build_request(Turn([Message("user", "deploy")], agent="confirm"), variant))
    return decoder.feed(orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": result})) + decoder.close()


def test_the_answer_retries_the_same_call_with_the_request_state_as_it_came_and_a_new_id() -> None:
    state = "v1.\u00e9 +/=" + "x" * 500
    question = {"method": "elicitation/create", "params": {"message": "Really?", "requestedSchema": FORM}}
    events = asked({"resultType": "input_required", "inputRequests": {"k": question}, "requestState": state})
    interrupt = next(e for e in events if isinstance(e, Interrupt))
    first = orjson.loads(registry.get("mcp").build_request(Turn([Message("user", "deploy")], agent="confirm"),
                                                           "2026-07-28").body)
    resume = Resume(interrupt.id, payload={"ok": True}, response_schema=FORM, upstream_state=interrupt.upstream_state)
    retry = registry.get("mcp").build_request(Turn([], agent="confirm", resume=[resume]), "2026-07-28")
    body = orjson.loads(retry.body)
    assert body["id"] != first["id"] and body["method"] == "tools/call"
    assert body["params"]["arguments"] == first["params"]["arguments"] == {"message": "deploy"}
    assert body["params"]["requestState"] == state
    assert body["params"]["inputResponses"] == {"k": {"action": "accept", "content": {"ok": True}}}
    assert body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert (retry.headers["mcp-method"], retry.headers["mcp-name"]) == ("tools/call", "confirm")


@pytest.mark.parametrize(("result", "why"), [
    ({"resultType": "input_required", "inputRequests": {"k": {"method": "sampling/createMessage", "params": {}}}},
     "sampling/createMessage"),
    ({"resultType": "input_required", "inputRequests": {"k": {"method": "elicitation/create",
                                                              "params": {"mode": "voice"}}}},
     "mode 'voice'"),
    ({"resultType": "input_required", "inputRequests": {}}, "without saying what"),
    ({"resultType": "input_required", "requestState": "s" * 70_000,
      "inputRequests": {"k": {"method": "elicitation/create", "params": {"message": "?"}}}}, "requestState"),
    ({"resultType": "input_required", "inputRequests": {str(n): {"method": "elicitation/create", "params": {}}
                                                        for n in range(17)}}, "17 questions"),
])
def test_a_question_the_gateway_cannot_ask_its_client_is_the_runs_error(result: dict[str, Any], why: str) -> None:
    events = asked(result)
    assert not any(isinstance(e, Interrupt) for e in events)
    error = events[-1]
    assert isinstance(error, RunError) and why in error.message


def test_the_store_keeps_an_interrupts_upstream_state_until_it_is_answered() -> None:
    async def run() -> tuple[Any, dict[str, Any]]:
        mapper = ConversationMapper(MemoryStore())
        ag_ui, mcp = registry.get("ag-ui"), registry.get("mcp")
        turn = Turn([Message("user", "deploy", "u1")], conversation_id="c", history="full")
        exchange = await mapper.begin("r", turn, ag_ui, mcp)
        recorder = RunRecorder()
        recorder.record([RunStarted(), Interrupt("i1", response_schema=FORM, upstream_state={"requestState": "s"}),
                      RunFinished(outcome="interrupt")])
        await mapper.finish(exchange, recorder)
        answer = Turn([Message("user", "deploy", "u1")], conversation_id="c", history="full",
                      resume=[Resume("i1", payload={"ok": True})])
        answering = await mapper.begin("r", answer, ag_ui, mcp)
        await mapper.finish(answering, RunRecorder())
        return answering.upstream_turn.resume[0].upstream_state, answering.conversation.interrupt_states

    given, kept = asyncio.run(run())
    assert given == {"requestState": "s"}
    assert kept == {}
