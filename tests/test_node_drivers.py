"""The live drivers in `node_clients` (`run_agui`, `run_vercel_chat`) against the scripted agent on a real port.

These prove the drivers themselves: the real `@ag-ui/client` `HttpAgent` and the real `ai` 7 chat state machine
run multi-step conversations over HTTP, and report what the client ended up with.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from node_clients import VercelChatRun, run_agui, run_vercel_chat
from servers import Served

from gateway.agent.server import create_agent_app

ASK_USER = {"name": "ask_user", "description": "Ask the user a question",
            "parameters": {"type": "object", "properties": {"question": {"type": "string"}},
                           "required": ["question"]}}


@pytest.fixture(scope="module")
def agui_url() -> Iterator[str]:
    with Served(create_agent_app("ag-ui")) as server:
        yield f"{server.url}/agui"


@pytest.fixture(scope="module")
def vercel_url() -> Iterator[str]:
    with Served(create_agent_app("vercel")) as server:
        yield f"{server.url}/api/chat"


def user(text: str, index: int) -> dict[str, Any]:
    return {"id": f"user-{index}", "role": "user", "content": text}


def texts(message: dict[str, Any]) -> list[str]:
    return [part["text"] for part in message["parts"] if part["type"] == "text"]


def tool_parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [part for part in message["parts"] if part["type"].startswith("tool-")]


# --------------------------------------------------------------------------- AG-UI


def test_agui_weather_run(agui_url: str) -> None:
    run = run_agui({"url": agui_url, "threadId": "t-weather",
                    "steps": [{"messages": [user("What is the weather in Berlin?", 1)]}]})
    [step] = run["steps"]
    assert step["error"] is None
    assert step["terminal"] and step["types"][0] == "RUN_STARTED" and step["types"][-1] == "RUN_FINISHED"
    assert step["finished"] == {"outcome": "success", "pendingToolCallIds": []}
    assert step["warnings"] == []
    [request] = step["requests"]
    assert request["threadId"] == "t-weather" and request["messages"] == [user("What is the weather in Berlin?", 1)]

    first, calling, result, answer = step["messages"]
    assert first["id"] == "user-1"
    assert calling["role"] == "assistant" and calling["content"] == "Let me check the weather."
    [call] = calling["toolCalls"]
    assert call["function"] == {"name": "get_weather", "arguments": '{"city":"Berlin"}'}
    assert result == {"id": result["id"], "role": "tool", "toolCallId": call["id"], "content": "sunny, 21C in Berlin"}
    assert answer["role"] == "assistant" and answer["content"] == "It is sunny, 21C in Berlin."
    assert step["newMessages"] == step["messages"][1:]


def test_agui_client_tool_round_trip(agui_url: str) -> None:
    run = run_agui({"url": agui_url, "threadId": "t-tool", "tools": [ASK_USER], "steps": [
        {"messages": [user("Please use a tool", 1)], "toolResults": {"ask_user": "blue"}},
        {},
    ]})
    asked, answered = run["steps"]
    assert asked["error"] is None and asked["terminal"]
    [call] = [c for m in asked["newMessages"] for c in m.get("toolCalls", [])]
    assert call["function"] == {"name": "ask_user", "arguments": '{"question":"demo"}'}
    assert asked["finished"] == {"outcome": "success", "pendingToolCallIds": [call["id"]]}
    [tool] = asked["toolMessages"]
    assert tool["role"] == "tool" and tool["toolCallId"] == call["id"] and tool["content"] == "blue"
    assert asked["messages"][-1] == tool  # added after the run, the way a frontend answers its tool

    assert answered["error"] is None and answered["finished"] == {"outcome": "success", "pendingToolCallIds": []}
    [request] = answered["requests"]
    assert request["messages"][-1] == tool and request["tools"][0]["name"] == "ask_user"
    assert answered["messages"][-1]["content"] == "The tool said: blue."
    assert [m["role"] for m in answered["messages"]] == ["user", "assistant", "tool", "assistant"]


def test_agui_interrupt_then_resume(agui_url: str) -> None:
    run = run_agui({"url": agui_url, "threadId": "t-interrupt", "steps": [
        {"messages": [user("Please interrupt me", 1)]},
        {"messages": [user("Just carry on", 2)]},  # no resume: the client refuses to run
        {"resume": [{"status": "resolved", "payload": "yes"}]},  # the interrupt id is filled in by the driver
    ]})
    paused, refused, resumed = run["steps"]
    assert paused["error"] is None and paused["terminal"]
    assert paused["finished"] is not None and paused["finished"]["outcome"] == "interrupt"
    [interrupt] = paused["pendingInterrupts"]
    assert interrupt["reason"] == "confirm" and paused["finished"].get("interrupts") == [interrupt]

    assert refused["error"] is not None and "pending interrupt" in refused["error"]
    assert interrupt["id"] in refused["error"]
    assert refused["requests"] == [] and refused["types"] == [] and not refused["terminal"]
    assert refused["pendingInterrupts"] == [interrupt]

    assert resumed["error"] is None and resumed["finished"] == {"outcome": "success", "pendingToolCallIds": []}
    [request] = resumed["requests"]
    assert request["resume"] == [{"interruptId": interrupt["id"], "status": "resolved", "payload": "yes"}]
    assert resumed["messages"][-1]["content"] == f'Resumed {interrupt["id"]}: "yes".'
    assert resumed["pendingInterrupts"] == []


# --------------------------------------------------------------------------- Vercel


def test_vercel_text(vercel_url: str) -> None:
    run = run_vercel_chat({"url": vercel_url, "chatId": "chat-text", "body": {"userId": "u-1"},
                           "steps": [{"send": "hello"}, {"send": "again"}]})
    first, second = run["steps"]
    for step in (first, second):
        assert step["status"] == "ready" and step["error"] is None and step["onError"] == []
        assert len(step["requests"]) == 1
    assert texts(first["messages"][-1]) == ["You said: hello. (turn 1)"]
    assert texts(second["messages"][-1]) == ["You said: again. (turn 2)"]
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user", "assistant"]
    body = run["requests"][0]
    assert body["id"] == "chat-text" and body["trigger"] == "submit-message" and body["userId"] == "u-1"
    assert "messageId" not in body
    assert body["messages"] == [{"id": body["messages"][0]["id"], "role": "user",
                                 "parts": [{"type": "text", "text": "hello"}]}]
    assert len(run["requests"][1]["messages"]) == 3 and not run["loopGuardTripped"]


def test_vercel_inkeep_body(vercel_url: str) -> None:
    run = run_vercel_chat({"url": vercel_url, "chatId": "conv-inkeep", "inkeep": True,
                           "steps": [{"send": "hello"}, {"send": "again"}]})
    assert [step["status"] for step in run["steps"]] == ["ready", "ready"]
    # Only the last message goes out; the agent keeps the history by conversationId, hence "turn 2".
    assert [(b["conversationId"], len(b["messages"]), "trigger" in b) for b in run["requests"]] == [
        ("conv-inkeep", 1, False), ("conv-inkeep", 1, False)]
    assert texts(run["steps"][1]["messages"][-1]) == ["You said: again. (turn 2)"]


def weather(url: str) -> VercelChatRun:
    return run_vercel_chat({"url": url, "chatId": "chat-weather", "maxRequests": 3,
                            "steps": [{"send": "What is the weather in Berlin?"}]})


def client_tool(url: str) -> VercelChatRun:
    return run_vercel_chat({"url": url, "chatId": "chat-tool", "maxRequests": 4, "steps": [
        {"send": "Please use a tool"}, {"toolOutputs": {"get_location": {"city": "Berlin"}}}]})


def approval(url: str) -> VercelChatRun:
    return run_vercel_chat({"url": url, "chatId": "chat-approve", "maxRequests": 4,
                            "steps": [{"send": "Please approve deleting it"}, {"approve": True}]})


def test_vercel_weather(vercel_url: str) -> None:
    run = weather(vercel_url)
    assistant = run["steps"][0]["messages"][1]
    assert assistant["role"] == "assistant"
    tool, *_ = tool_parts(assistant)
    assert tool["type"] == "tool-get_weather" and tool["state"] == "output-available"
    assert tool["input"] == {"city": "Berlin"} and tool["output"] == "sunny, 21C in Berlin"
    assert texts(assistant)[:2] == ["Let me check the weather.", "It is sunny, 21C in Berlin."]


def test_vercel_client_tool_round_trip(vercel_url: str) -> None:
    run = client_tool(vercel_url)
    asked, answered = run["steps"]
    assert asked["status"] == "ready" and len(asked["requests"]) == 1
    [call] = asked["toolCalls"]
    assert call["toolName"] == "get_location"
    [part] = tool_parts(asked["messages"][-1])
    assert part["state"] == "input-available" and part["toolCallId"] == call["toolCallId"]

    assert answered["answered"] == [call["toolCallId"]]
    continuation = answered["requests"][0]  # sent automatically after addToolOutput
    assistant_id = asked["messages"][-1]["id"]
    assert continuation["messageId"] == assistant_id and continuation["trigger"] == "submit-message"
    sent = continuation["messages"][-1]
    assert sent["id"] == assistant_id
    assert tool_parts(sent) == [{"type": "tool-get_location", "toolCallId": call["toolCallId"],
                                 "state": "output-available", "input": {}, "output": {"city": "Berlin"}}]
    final = answered["messages"][-1]
    assert final["id"] == assistant_id  # the continuation streams into the same assistant message
    assert 'The tool said: {"city":"Berlin"}.' in texts(final)


def test_vercel_approval(vercel_url: str) -> None:
    run = approval(vercel_url)
    asked, approved = run["steps"]
    assert asked["status"] == "ready" and len(asked["requests"]) == 1
    [part] = tool_parts(asked["messages"][-1])
    assert part["type"] == "tool-delete_file" and part["state"] == "approval-requested"
    assert part["input"] == {"path": "/tmp/demo"}
    approval_id = part["approval"]["id"]

    assert approved["answered"] == [approval_id]
    continuation = approved["requests"][0]
    assert continuation["messageId"] == asked["messages"][-1]["id"]
    [sent] = tool_parts(continuation["messages"][-1])
    assert sent["state"] == "approval-responded" and sent["approval"] == {"id": approval_id, "approved": True}
    assert f'Resumed {approval_id}: {{"approved":true}}.' in texts(approved["messages"][-1])


# useChat re-checks `sendAutomaticallyWhen` after every response, on the LAST STEP of the message only: without
# step boundaries a settled tool call or approval stays in "the last step" and the real chat posts again and again
# (found by these tests: weather and approval looped forever). The Vercel encoder opens a step after tool results.
@pytest.mark.parametrize(("flow", "posts"), [(weather, 1), (client_tool, 2), (approval, 2)],
                         ids=["weather", "client-tool", "approval"])
def test_vercel_no_extra_automatic_posts(vercel_url: str, flow: Any, posts: int) -> None:
    run = flow(vercel_url)
    assert not run["loopGuardTripped"]
    assert len(run["requests"]) == posts
    assert run["steps"][-1]["status"] == "ready"
