"""Mapping that loses nothing silently, through the real clients: a history the gateway never saw reaches an
upstream that keeps its own, the gateway's own output is recognised however a client rebuilds it, a body with no
readable user text is refused, an interrupt about a tool call is asked on that call, and an answer sent twice is
passed on once.

The upstreams are the built-in agent speaking AG-Kit (it keeps each conversation and counts the user turns it has
heard: "(turn N)") and the Inkeep look-alike (`tests/inkeep_upstream.py`: one text id reused around its data parts).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from e2e import post
from inkeep_upstream import create_inkeep_app
from node_clients import run_agui, run_vercel_chat
from servers import Served

from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app


class World:
    def __init__(self, gateway: str, agkit: str, http: httpx.Client) -> None:
        self.gateway = gateway
        self.agkit = agkit
        self.http = http

    def upstream_requests(self) -> list[dict[str, Any]]:
        return list(self.http.get(f"{self.agkit}/_requests").json())


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with Served(create_agent_app("ag-kit")) as agkit, Served(create_inkeep_app()) as inkeep:
        timeouts = {"first_event": 10, "idle": 10, "total": 30}
        config = GatewayConfig.model_validate({"routes": [
            {"name": "agkit", "paths": ["/agui", "/api/chat", "/agent/respond"],
             "upstream": {"url": f"{agkit.url}/send-message", "dialect": "ag-kit"}, "timeouts": timeouts},
            {"name": "inkeep", "paths": ["/inkeep/agui"], "client_dialects": ["ag-ui"],
             "upstream": {"url": f"{inkeep.url}/run/api/chat", "dialect": "vercel"}, "timeouts": timeouts},
        ]})
        with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=30) as http:
            yield World(gateway.url, agkit.url, http)


def assistant_text(messages: list[dict[str, Any]]) -> str:
    return "".join(m.get("content") or "" for m in messages if m["role"] == "assistant")


# -- a history the gateway never saw


def test_an_ag_ui_client_with_a_history_of_its_own_is_answered_from_all_of_it(world: World) -> None:
    history = [{"id": "h1", "role": "user", "content": "My name is Ada."},
               {"id": "h2", "role": "assistant", "content": "Nice to meet you, Ada."},
               {"id": "h3", "role": "user", "content": "What is my name?"}]
    run = run_agui({"url": f"{world.gateway}/agui", "threadId": "fresh-thread-with-history",
                    "steps": [{"messages": history}]})
    step = run["steps"][0]
    assert step["error"] is None and step["warnings"] == []
    # The agent heard both user turns: the whole history went into a new upstream conversation.
    assert assistant_text(step["newMessages"]) == "You said: What is my name?. (turn 2)"
    sent = world.upstream_requests()[-1]["body"]
    assert [(m["role"], m["content"]) for m in sent["messages"]] == [
        ("user", "My name is Ada."), ("assistant", "Nice to meet you, Ada."), ("user", "What is my name?")]


def test_an_eval_golden_transcript_reaches_the_agent_whole(world: World) -> None:
    transcript = [{"role": "user", "content": "I ordered a lamp."},
                  {"role": "assistant", "content": "Which order number?"},
                  {"role": "user", "content": "Order 42."}]
    response = post(world.http, f"{world.gateway}/agent/respond",
                    {"messages": transcript, "metadata": {"test_case_id": "golden-1", "turn_index": 2}})
    assert response.status_code == 200
    assert response.json()["messages"][-1]["content"] == "You said: Order 42.. (turn 2)"


# -- the gateway's own output, however a client rebuilds it


def test_a_plain_second_turn_of_an_ag_ui_client_in_front_of_inkeep_is_answered(world: World) -> None:
    # Inkeep reuses one text id around its data parts: the AG-UI client gets (and sends back) several messages
    # where the agent said one.
    run = run_agui({"url": f"{world.gateway}/inkeep/agui", "threadId": "inkeep-two-turns", "steps": [
        {"messages": [{"role": "user", "content": "make a plan"}]},
        {"messages": [{"role": "user", "content": "hello"}]},
    ]})
    first, second = run["steps"]
    assert first["error"] is None and first["warnings"] == []
    assert [m["content"] for m in first["newMessages"] if m["role"] == "assistant"] == [
        "Planning.", "Searching.", "Done."]
    assert second["error"] is None, second["error"]
    assert assistant_text(second["newMessages"]) == "You said: hello. This is user turn 2."


# -- no readable user text


def test_a_vercel_body_on_agent_respond_is_refused_naming_its_path(world: World) -> None:
    response = post(world.http, f"{world.gateway}/agent/respond", {
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}]})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "unknown_dialect" and "/api/chat" in error["message"]


def test_an_agent_respond_user_message_without_content_is_a_422_naming_it(world: World) -> None:
    response = post(world.http, f"{world.gateway}/agent/respond", {
        "messages": [{"role": "user", "content": None}], "metadata": {"test_case_id": "t"}})
    assert response.status_code == 422
    assert response.json()["error"]["details"][0]["field"] == "messages[0]"


def test_a_user_message_of_unknown_parts_on_api_chat_is_a_422_naming_them(world: World) -> None:
    response = post(world.http, f"{world.gateway}/api/chat", {
        "id": "chat-unknown-part", "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "input_text", "text": "hello"}]}]})
    assert response.status_code == 422
    detail = response.json()["error"]["details"][0]
    assert detail["field"] == "messages[0]" and "input_text" in detail["message"]


def test_a_user_message_of_data_parts_reaches_the_agent_as_their_json(world: World) -> None:
    response = post(world.http, f"{world.gateway}/api/chat", {
        "id": "chat-data-only", "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "data-choice", "data": {"pick": 2}}]}]})
    assert response.status_code == 200
    assert world.upstream_requests()[-1]["body"]["messages"] == [{"role": "user", "content": '{"choice":{"pick":2}}'}]


# -- an interrupt about a tool call


def test_an_ag_kit_interrupt_naming_its_tool_call_asks_use_chat_on_that_call(world: World) -> None:
    run = run_vercel_chat({"url": f"{world.gateway}/api/chat", "chatId": "chat-approve-call", "steps": [
        {"send": "please approve"}, {"approve": True}]})
    asked, answered = run["steps"]
    assert asked["status"] == "ready", asked["error"]
    tools = [p for p in asked["messages"][-1]["parts"] if p["type"].startswith("tool-")]
    assert [(p["type"], p["state"]) for p in tools] == [("tool-delete_file", "approval-requested")]
    assert answered["status"] == "ready", answered["error"]
    sent = world.upstream_requests()[-1]["body"]
    assert sent["resume"]["interruptId"] == tools[0]["approval"]["id"]
    assert orjson.loads(sent["resume"]["payload"]) == {"approved": True}
    last = answered["messages"][-1]
    assert any(p["type"] == "text" and p["text"].startswith("Resumed ") for p in last["parts"])


# -- an answer sent twice


def test_an_answer_sent_again_is_not_passed_on_nor_read_as_the_users_words(world: World) -> None:
    run = run_agui({"url": f"{world.gateway}/agui", "threadId": "answered-twice", "steps": [
        {"messages": [{"role": "user", "content": "please interrupt"}]},
        {"resume": [{"status": "resolved", "payload": "yes"}]},
    ]})
    asked, answered = run["steps"]
    interrupt = asked["pendingInterrupts"][0]["id"]
    assert answered["error"] is None and assistant_text(answered["newMessages"]).startswith(f"Resumed {interrupt}")
    before = len(world.upstream_requests())
    again = run_agui({"url": f"{world.gateway}/agui", "threadId": "answered-twice", "steps": [
        {"messages": [*answered["messages"]], "resume": [{"interruptId": interrupt, "status": "resolved",
                                                           "payload": "yes"}]}]})
    step = again["steps"][0]
    assert step["error"] is not None and "409" in step["error"] and "already answered" in step["error"]
    assert len(world.upstream_requests()) == before  # the agent was not called
