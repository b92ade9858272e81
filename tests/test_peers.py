"""The real third-party upstreams of `tests/peers_env.py`, called directly (no gateway) and read with our decoders.

One process per peer for the whole module. Each scenario pins what the real server sends, so a gateway test built
on these peers knows what it starts from. Install the peers first: `.venv/bin/python tests/peers_env.py`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from helpers import decode
from peers_env import agkit_upstream, pydantic_upstream

from gateway.core.events import (
    Event,
    Interrupt,
    ReasoningDelta,
    RunError,
    RunFinished,
    RunStarted,
    TextDelta,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
)

ASK_USER = {"name": "ask_user", "description": "Ask the human a question",
            "parameters": {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}}


@dataclass
class Wire:
    status: int
    headers: httpx.Headers
    body: bytes
    complete: bool
    """False when the server broke the response off (an incomplete chunked body)."""


def post(url: str, body: dict[str, Any]) -> Wire:
    chunks: list[bytes] = []
    with httpx.stream("POST", url, json=body, headers={"accept": "text/event-stream"}, timeout=30) as response:
        try:
            chunks.extend(response.iter_bytes())
            complete = True
        except httpx.RemoteProtocolError:
            complete = False
    return Wire(response.status_code, response.headers, b"".join(chunks), complete)


def run(dialect: str, url: str, body: dict[str, Any]) -> list[Event]:
    wire = post(url, body)
    assert wire.status == 200, wire.body
    assert wire.complete, wire.body
    assert wire.headers["content-type"].startswith("text/event-stream")
    return decode(dialect, wire.body)


def text(events: list[Event]) -> str:
    return "".join(e.delta for e in events if isinstance(e, TextDelta))


def reasoning(events: list[Event]) -> str:
    return "".join(e.delta for e in events if isinstance(e, ReasoningDelta))


def tool_calls(events: list[Event]) -> list[tuple[str, str]]:
    names = {e.tool_call_id: e.name for e in events if isinstance(e, ToolCallStart)}
    args = {call: "".join(e.delta for e in events if isinstance(e, ToolCallArgs) and e.tool_call_id == call)
            for call in names}
    return [(names[call], args[call]) for call in names]


def results(events: list[Event]) -> list[Any]:
    return [e.content for e in events if isinstance(e, ToolResult)]


def well_formed(events: list[Event]) -> None:
    assert isinstance(events[0], RunStarted)
    assert isinstance(events[-1], RunFinished | RunError)
    assert not any(isinstance(e, RunError) for e in events[:-1])


def first_deltas(url: str, body: dict[str, Any], count: int) -> float:
    """Seconds until `count` text chunks arrived; the stream is then dropped."""
    started = time.monotonic()
    seen = 0
    with httpx.stream("POST", url, json=body, timeout=30) as response:
        for chunk in response.iter_bytes():
            seen += chunk.count(b"chunk ")
            if seen >= count:
                break
    return time.monotonic() - started


# --- pydantic-ai: AG-UI -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pydantic() -> Iterator[str]:
    with pydantic_upstream() as url:
        yield url


def agui_body(*messages: dict[str, Any], tools: list[dict[str, Any]] | None = None,
              protocol: str | None = "1.0") -> dict[str, Any]:
    body: dict[str, Any] = {"threadId": "thread-1", "runId": "run-1", "messages": list(messages),
                            "tools": tools or [], "context": [], "state": {}, "forwardedProps": {}}
    if protocol is not None:
        body["protocolVersion"] = protocol
    return body


def user(text: str, message_id: str = "msg-1") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": text}


def test_pydantic_agui_text(pydantic: str) -> None:
    events = run("ag-ui", f"{pydantic}/ag-ui", agui_body(user("hello there")))
    well_formed(events)
    assert text(events) == "Hello! You said: hello there. This is user turn 1."
    assert events[-1] == RunFinished()


def test_pydantic_agui_server_tool(pydantic: str) -> None:
    events = run("ag-ui", f"{pydantic}/ag-ui", agui_body(user("What is the weather in Paris?")))
    well_formed(events)
    assert tool_calls(events) == [("get_weather", '{"city": "Paris"}')]
    assert results(events) == ["sunny, 21C in Paris"]
    assert text(events) == "Tool get_weather said: sunny, 21C in Paris."


def test_pydantic_agui_reasoning(pydantic: str) -> None:
    events = run("ag-ui", f"{pydantic}/ag-ui", agui_body(user("think first")))
    well_formed(events)
    assert reasoning(events) == "The user wants me to think. Done thinking."
    assert text(events) == "I have thought about it."


def test_pydantic_agui_frontend_tool_is_left_pending(pydantic: str) -> None:
    events = run("ag-ui", f"{pydantic}/ag-ui", agui_body(user("use the frontend tool"), tools=[ASK_USER]))
    well_formed(events)
    assert tool_calls(events) == [("ask_user", '{"question": "Proceed?"}')]
    assert results(events) == []
    assert events[-1] == RunFinished()


@pytest.mark.parametrize("protocol", ["1.0", None])
def test_pydantic_agui_lists_pending_calls_only_to_a_1_0_client(pydantic: str, protocol: str | None) -> None:
    wire = post(f"{pydantic}/ag-ui", agui_body(user("tool"), tools=[ASK_USER], protocol=protocol))
    assert (b'"pendingToolCallIds":["call_frontend_1"]' in wire.body) == (protocol == "1.0")


def test_pydantic_agui_answers_a_client_tool_result(pydantic: str) -> None:
    history = [user("use the frontend tool"),
               {"id": "msg-2", "role": "assistant", "content": "",
                "toolCalls": [{"id": "call_frontend_1", "type": "function",
                               "function": {"name": "ask_user", "arguments": '{"question": "Proceed?"}'}}]},
               {"id": "msg-3", "role": "tool", "toolCallId": "call_frontend_1", "content": "yes"}]
    events = run("ag-ui", f"{pydantic}/ag-ui", agui_body(*history, tools=[ASK_USER]))
    well_formed(events)
    assert text(events) == "Tool ask_user said: yes."


def test_pydantic_agui_failure(pydantic: str) -> None:
    events = run("ag-ui", f"{pydantic}/ag-ui", agui_body(user("please fail")))
    assert isinstance(events[-1], RunError)
    assert events[-1].message == "scripted upstream failure"


def test_pydantic_agui_streams_as_it_goes(pydantic: str) -> None:
    assert first_deltas(f"{pydantic}/ag-ui", agui_body(user("slow")), 3) < 2.0  # all 40 take 4 s


# --- pydantic-ai: Vercel AI ---------------------------------------------------------------------------------------


def vercel_body(*texts: str) -> dict[str, Any]:
    messages = [{"id": f"m-{i}", "role": "user", "parts": [{"type": "text", "text": t}]} for i, t in enumerate(texts)]
    return {"trigger": "submit-message", "id": "chat-1", "messages": messages}


def test_pydantic_vercel_text(pydantic: str) -> None:
    wire = post(f"{pydantic}/vercel", vercel_body("hello"))
    assert wire.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert wire.body.endswith(b"data: [DONE]\n\n")
    events = decode("vercel", wire.body)
    well_formed(events)
    assert text(events) == "Hello! You said: hello. This is user turn 1."


def test_pydantic_vercel_reads_the_whole_history(pydantic: str) -> None:
    body = vercel_body("What is the weather in Paris?")
    body["messages"].append({"id": "m-a", "role": "assistant", "parts": [
        {"type": "step-start"},
        {"type": "tool-get_weather", "toolCallId": "call_weather_1", "state": "output-available",
         "input": {"city": "Paris"}, "output": "sunny, 21C in Paris"},
        {"type": "step-start"},
        {"type": "text", "text": "Tool get_weather said: sunny, 21C in Paris.", "state": "done"}]})
    body["messages"].append({"id": "m-b", "role": "user", "parts": [{"type": "text", "text": "thanks"}]})
    events = run("vercel", f"{pydantic}/vercel", body)
    assert text(events) == "Hello! You said: thanks. This is user turn 2."


def test_pydantic_vercel_server_tool(pydantic: str) -> None:
    events = run("vercel", f"{pydantic}/vercel", vercel_body("weather?"))
    well_formed(events)
    assert tool_calls(events) == [("get_weather", '{"city": "Paris"}')]
    assert results(events) == ["sunny, 21C in Paris"]
    assert text(events) == "Tool get_weather said: sunny, 21C in Paris."


def test_pydantic_vercel_reasoning(pydantic: str) -> None:
    events = run("vercel", f"{pydantic}/vercel", vercel_body("think"))
    assert reasoning(events) == "The user wants me to think. Done thinking."
    assert text(events) == "I have thought about it."


def test_pydantic_vercel_has_no_client_tools(pydantic: str) -> None:
    events = run("vercel", f"{pydantic}/vercel", vercel_body("use a tool"))
    assert tool_calls(events) == []
    assert text(events) == "No frontend tool was offered."


def test_pydantic_vercel_failure(pydantic: str) -> None:
    wire = post(f"{pydantic}/vercel", vercel_body("fail"))
    assert b'"type":"finish-step"' in wire.body and b'"start-step"' not in wire.body  # a step that never started
    last = decode("vercel", wire.body)[-1]
    assert isinstance(last, RunError)
    assert last.message == "scripted upstream failure"


def test_pydantic_vercel_streams_as_it_goes(pydantic: str) -> None:
    assert first_deltas(f"{pydantic}/vercel", vercel_body("slow"), 3) < 2.0


# --- AG-Kit: cloudbase-agent-server 0.1.1 -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def agkit() -> Iterator[str]:
    with agkit_upstream() as url:
        yield f"{url}/send-message"


def send(conversation: str, *messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"conversationId": conversation, "messages": list(messages), **extra}


def said(content: str) -> dict[str, Any]:
    return {"role": "user", "content": content}


def test_agkit_text_and_the_agent_keeps_the_history(agkit: str) -> None:
    first = run("ag-kit", agkit, send("k-text", said("hello"), tools=[{**ASK_USER, "parameters": '{"type":"object"}'}]))
    well_formed(first)
    assert text(first) == "echo: hello | thread=k-text | tools=['ask_user'] | history=1"
    second = run("ag-kit", agkit, send("k-text", said("again")))
    assert text(second) == "echo: again | thread=k-text | tools=[] | history=3"
    assert second[-1] == RunFinished()


def test_agkit_server_tool(agkit: str) -> None:
    events = run("ag-kit", agkit, send("k-weather", said("What is the weather in Paris?")))
    well_formed(events)
    assert tool_calls(events) == [("get_weather", '{"city": "Paris"}')]
    assert results(events) == ["sunny, 21C in Paris"]
    assert text(events) == "Tool get_weather said: sunny, 21C in Paris. history=3"


def test_agkit_client_tool_then_its_result(agkit: str) -> None:
    events = run("ag-kit", agkit, send("k-tool", said("use a tool"), tools=[ASK_USER]))
    well_formed(events)
    assert tool_calls(events) == [("ask_user", '{"question": "Proceed?"}')]
    assert results(events) == []
    assert any(isinstance(e, ToolCallEnd) for e in events)
    call_id = next(e.tool_call_id for e in events if isinstance(e, ToolCallStart))
    answer = run("ag-kit", agkit, send("k-tool", {"role": "tool", "content": "yes", "toolCallId": call_id}))
    assert text(answer) == "Tool ask_user said: yes. history=3"


def test_agkit_interrupt_then_resume(agkit: str) -> None:
    events = run("ag-kit", agkit, send("k-interrupt", said("interrupt me")))
    interrupts = [e for e in events if isinstance(e, Interrupt)]
    assert len(interrupts) == 1
    assert interrupts[0].id.startswith("int_")
    assert interrupts[0].reason == "agent requested interrupt"
    assert interrupts[0].payload == {"question": "Delete the file?", "steps": ["delete file"]}
    # The server drops `interruptId`: the agent names the interrupt it resumes from its own record.
    resumed = run("ag-kit", agkit, {"conversationId": "k-interrupt",
                                    "resume": {"interruptId": interrupts[0].id, "payload": '{"approved":true}'}})
    assert text(resumed) == f'Resumed {interrupts[0].id} with {{"approved":true}}. history=2'


def test_agkit_failure_cuts_the_stream(agkit: str) -> None:
    wire = post(agkit, send("k-fail", said("please fail")))
    assert wire.status == 200
    assert not wire.complete  # no error event, no [DONE]: the chunked body just stops
    assert b"[DONE]" not in wire.body
    events = decode("ag-kit", wire.body)
    assert text(events) == "partial answer..."
    assert isinstance(events[-1], RunError)


def test_agkit_rejects_a_resume_payload_that_is_not_a_string(agkit: str) -> None:
    wire = post(agkit, {"conversationId": "k-422", "resume": {"interruptId": "i", "payload": {"approved": True}}})
    assert wire.status == 422
    assert wire.headers["content-type"] == "application/json"


def test_agkit_streams_as_it_goes(agkit: str) -> None:
    assert first_deltas(agkit, send("k-slow", said("slow")), 3) < 2.0
