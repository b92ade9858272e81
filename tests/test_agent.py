"""The scripted agent: the same script in every dialect, read and written with the dialects' own codecs."""

from __future__ import annotations

import asyncio
import time
import warnings
from typing import Any

import orjson
import pytest
from helpers import decode, kinds
from starlette.types import Message as AsgiMessage

from adapters import registry
from gateway.agent.script import HANG, SLOW_GAP, script
from gateway.agent.server import MAX_LOG, Agent, create_agent_app
from gateway.core.events import (
    Event,
    Interrupt,
    ReasoningDelta,
    RunError,
    RunFinished,
    RunStarted,
    StateDelta,
    StateSnapshot,
    TextDelta,
    ToolCallArgs,
    ToolCallStart,
    ToolResult,
)
from gateway.core.turn import Message, Turn

with warnings.catch_warnings():
    # Starlette 1.x wants `httpx2` for its test client and warns on plain httpx, which is what the project has.
    warnings.filterwarnings("ignore", "Using `httpx` with `starlette.testclient`")
    from starlette.testclient import TestClient

DIALECTS = ["ag-ui", "ag-kit", "vercel", "agent-respond"]
SEARCH = {"name": "search", "description": "Search the web",
          "parameters": {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                         "required": ["query", "limit"]}}


def client(dialect: str, **options: Any) -> TestClient:
    return TestClient(create_agent_app(dialect, **options))


def path(dialect: str) -> str:
    return registry.get(dialect).paths[0]


def user(dialect: str, text: str, index: int = 0) -> dict[str, Any]:
    """A user message as the dialect's clients write it."""
    if dialect == "vercel":
        return {"id": f"u{index}", "role": "user", "parts": [{"type": "text", "text": text}]}
    if dialect == "ag-ui":
        return {"id": f"u{index}", "role": "user", "content": text}
    return {"role": "user", "content": text}


def body(dialect: str, messages: list[dict[str, Any]], conversation: str = "conv-1", *,
         tools: bool = False, **extra: Any) -> dict[str, Any]:
    """A request body; `tools` offers SEARCH where the dialect can carry tools."""
    if dialect == "ag-ui":
        out: dict[str, Any] = {"threadId": conversation, "runId": "run-1", "protocolVersion": "1.0",
                               "messages": messages, "tools": [SEARCH] if tools else []}
    elif dialect == "ag-kit":
        out = {"conversationId": conversation, "messages": messages,
               "tools": [{**SEARCH, "parameters": orjson.dumps(SEARCH["parameters"]).decode()}] if tools else []}
    elif dialect == "vercel":
        out = {"id": conversation, "messages": messages, "trigger": "submit-message"}
    else:
        out = {"messages": messages, "metadata": {"test_case_id": conversation, "turn_index": len(messages)}}
    return {**out, **extra}


def ask(dialect: str, api: TestClient, text: str, **options: Any) -> list[Event]:
    response = api.post(path(dialect), json=body(dialect, [user(dialect, text)], **options))
    assert response.status_code == 200, response.text
    return decode(dialect, response.content)


def said(events: list[Event]) -> str:
    return "".join(e.delta for e in events if isinstance(e, TextDelta))


def one(events: list[Event], kind: type[Any]) -> Any:
    found = [e for e in events if isinstance(e, kind)]
    assert len(found) == 1, kinds(events)
    return found[0]


# the default answer, and who keeps history


@pytest.mark.parametrize("dialect", DIALECTS)
def test_default_answer_echoes_the_user_in_a_well_formed_run(dialect: str) -> None:
    events = ask(dialect, client(dialect), "Hello there")
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunFinished)
    assert said(events) == "You said: Hello there. (turn 1)"


@pytest.mark.parametrize("dialect", ["ag-ui", "ag-kit", "vercel"])
def test_streaming_dialects_stream_text_in_several_deltas(dialect: str) -> None:
    events = ask(dialect, client(dialect), "Hello there")
    assert sum(isinstance(e, TextDelta) for e in events) >= 3


def test_run_carries_the_requests_thread_and_run_ids() -> None:
    start = ask("ag-ui", client("ag-ui"), "hi", conversation="thread-9")[0]
    assert isinstance(start, RunStarted) and (start.thread_id, start.run_id) == ("thread-9", "run-1")


def test_ag_kit_agent_remembers_the_conversation_by_id() -> None:
    api = client("ag-kit")
    assert said(ask("ag-kit", api, "first")) == "You said: first. (turn 1)"
    assert said(ask("ag-kit", api, "second")) == "You said: second. (turn 2)"
    assert said(ask("ag-kit", api, "elsewhere", conversation="conv-2")) == "You said: elsewhere. (turn 1)"
    remembered = api.app.state.agent.conversations["conv-1"]  # type: ignore[attr-defined]
    assert [(m.role, m.text) for m in remembered] == [
        ("user", "first"), ("assistant", "You said: first. (turn 1)"),
        ("user", "second"), ("assistant", "You said: second. (turn 2)")]


def test_inkeep_agent_remembers_the_conversation_by_id() -> None:
    api = client("vercel")
    for turn, text in enumerate(["one", "two"], start=1):
        inkeep = {"conversationId": "ink", "messages": [{"role": "user", "content": text}]}
        response = api.post("/api/chat", json=inkeep)
        assert said(decode("vercel", response.content)) == f"You said: {text}. (turn {turn})"


@pytest.mark.parametrize("dialect", ["ag-ui", "vercel", "agent-respond"])
def test_full_history_agent_counts_the_turns_it_is_sent_and_keeps_none(dialect: str) -> None:
    api = client(dialect)
    first = ask(dialect, api, "first")
    if dialect == "vercel":
        reply = {"id": "a0", "role": "assistant", "parts": [{"type": "text", "text": said(first)}]}
    elif dialect == "ag-ui":
        reply = {"id": "a0", "role": "assistant", "content": said(first)}
    else:
        reply = {"role": "assistant", "content": said(first)}
    history = [user(dialect, "first"), reply, user(dialect, "second", 1)]
    second = decode(dialect, api.post(path(dialect), json=body(dialect, history)).content)
    assert said(second) == "You said: second. (turn 2)"
    assert said(ask(dialect, api, "again")) == "You said: again. (turn 1)"


# tools


@pytest.mark.parametrize("dialect", DIALECTS)
def test_weather_calls_a_server_tool_and_reports_its_result(dialect: str) -> None:
    events = ask(dialect, client(dialect), "What is the weather in New York?")
    start = one(events, ToolCallStart)
    assert start.name == "get_weather"
    args = "".join(e.delta for e in events if isinstance(e, ToolCallArgs))
    assert orjson.loads(args) == {"city": "New York"}
    result = one(events, ToolResult)
    assert result.tool_call_id == start.tool_call_id and "sunny, 21C in New York" in str(result.content)
    assert said(events) == "Let me check the weather.It is sunny, 21C in New York."
    assert isinstance(events[-1], RunFinished) and events[-1].outcome == "success"


def test_weather_without_a_city_is_in_paris() -> None:
    events = ask("ag-ui", client("ag-ui"), "how is the weather")
    assert "".join(e.delta for e in events if isinstance(e, ToolCallArgs)) == '{"city":"Paris"}'


def tool_result_request(dialect: str, call_id: str, name: str, output: str) -> dict[str, Any]:
    """The second leg of a client tool round trip, as each dialect's client sends it."""
    ask_text = "use a tool please"
    arguments = '{"query":"demo"}' if name == "search" else "{}"
    if dialect == "ag-ui":
        messages = [user(dialect, ask_text),
                    {"id": "a0", "role": "assistant",
                     "toolCalls": [{"id": call_id, "type": "function", "function": {"name": name,
                                                                                   "arguments": arguments}}]},
                    {"id": "t0", "role": "tool", "toolCallId": call_id, "content": output}]
        return body(dialect, messages, tools=True)
    if dialect == "ag-kit":
        return body(dialect, [{"role": "tool", "toolCallId": call_id, "content": output}], tools=True)
    if dialect == "vercel":
        part = {"type": f"tool-{name}", "toolCallId": call_id, "state": "output-available", "input": {},
                "output": output}
        return body(dialect, [user(dialect, ask_text), {"id": "a0", "role": "assistant", "parts": [part]}])
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return body(dialect, [user(dialect, ask_text), {"role": "assistant", "content": None, "tool_calls": [call]},
                          {"role": "tool", "tool_call_id": call_id, "content": output}])


@pytest.mark.parametrize("dialect", DIALECTS)
def test_client_tool_is_called_then_its_result_answered(dialect: str) -> None:
    api = client(dialect)
    first = ask(dialect, api, "use a tool please", tools=True)
    start = one(first, ToolCallStart)
    offered = dialect in ("ag-ui", "ag-kit")
    assert start.name == ("search" if offered else "get_location")
    args = "".join(e.delta for e in first if isinstance(e, ToolCallArgs))
    assert orjson.loads(args) == ({"query": "demo"} if offered else {})
    assert not any(isinstance(e, ToolResult) for e in first)
    assert isinstance(first[-1], RunFinished)

    second = api.post(path(dialect), json=tool_result_request(dialect, start.tool_call_id, start.name, "42"))
    assert said(decode(dialect, second.content)) == "The tool said: 42."


def test_ag_ui_client_tool_run_lists_the_call_as_pending() -> None:
    raw = client("ag-ui").post("/agui", json=body("ag-ui", [user("ag-ui", "tool time")], tools=True)).content
    finished = orjson.loads(raw.strip().split(b"\n\n")[-1].removeprefix(b"data: "))
    assert finished["type"] == "RUN_FINISHED" and len(finished["outcome"]["pendingToolCallIds"]) == 1


def test_without_a_tool_keyword_offered_tools_are_not_called() -> None:
    events = ask("ag-ui", client("ag-ui"), "just chat", tools=True)
    assert not any(isinstance(e, ToolCallStart) for e in events)


# interrupts


@pytest.mark.parametrize("dialect", ["ag-ui", "ag-kit", "vercel"])
def test_approve_asks_to_approve_a_tool_call(dialect: str) -> None:
    events = ask(dialect, client(dialect), "Please approve this")
    start = one(events, ToolCallStart)
    interrupt = one(events, Interrupt)
    assert start.name == "delete_file" and interrupt.id.startswith("int-")
    assert interrupt.reason == "tool_approval"
    if dialect != "ag-kit":
        assert interrupt.tool_call_id == start.tool_call_id
    if dialect == "ag-ui":
        assert interrupt.message == "Delete /tmp/demo?"
        assert isinstance(events[-1], RunFinished) and events[-1].outcome == "interrupt"


@pytest.mark.parametrize("dialect", ["ag-ui", "ag-kit", "vercel"])
def test_plain_interrupt_asks_to_confirm(dialect: str) -> None:
    interrupt = one(ask(dialect, client(dialect), "INTERRUPT me"), Interrupt)
    assert interrupt.id.startswith("int-")
    if dialect != "vercel" or interrupt.reason:
        assert interrupt.reason == "confirm"
    assert interrupt.payload == {"options": ["yes", "no"]}


def test_agent_respond_reports_an_interrupt_in_its_last_message() -> None:
    response = client("agent-respond").post("/agent/respond", json=body("agent-respond", [user("x", "approve it")]))
    messages = response.json()["messages"]
    assert messages[0]["tool_calls"][0]["function"]["name"] == "delete_file"
    assert messages[-1]["content"].startswith("[interrupted]") and "Delete /tmp/demo?" in messages[-1]["content"]


def test_ag_ui_resume_answers_the_interrupt() -> None:
    api = client("ag-ui")
    interrupt = one(ask("ag-ui", api, "interrupt"), Interrupt)
    resume = [{"interruptId": interrupt.id, "status": "resolved", "payload": "yes"}]
    events = decode("ag-ui", api.post("/agui", json=body("ag-ui", [user("ag-ui", "interrupt")], resume=resume)).content)
    assert said(events) == f'Resumed {interrupt.id}: "yes".'


def test_ag_kit_resume_needs_no_messages() -> None:
    api = client("ag-kit")
    interrupt = one(ask("ag-kit", api, "approve the deletion"), Interrupt)
    resume = {"interruptId": interrupt.id, "payload": '{"approved":true}'}
    response = api.post("/send-message", json={"conversationId": "conv-1", "resume": resume})
    assert said(decode("ag-kit", response.content)) == f'Resumed {interrupt.id}: {{"approved":true}}.'


def test_vercel_approval_response_resumes_the_run() -> None:
    api = client("vercel")
    events = ask("vercel", api, "approve the deletion")
    start, interrupt = one(events, ToolCallStart), one(events, Interrupt)
    part = {"type": "tool-delete_file", "toolCallId": start.tool_call_id, "state": "approval-responded",
            "input": {"path": "/tmp/demo"}, "approval": {"id": interrupt.id, "approved": True}}
    messages = [user("vercel", "approve the deletion"), {"id": "a0", "role": "assistant", "parts": [part]}]
    response = api.post("/api/chat", json=body("vercel", messages))
    assert said(decode("vercel", response.content)) == f'Resumed {interrupt.id}: {{"approved":true}}.'


# other scripts


@pytest.mark.parametrize("dialect", DIALECTS)
def test_fail_ends_the_run_with_an_error(dialect: str) -> None:
    response = client(dialect).post(path(dialect), json=body(dialect, [user(dialect, "please FAIL")]))
    if dialect == "agent-respond":  # its decoder reads bodies; the status is the proxy's to judge
        assert response.status_code == 502
        assert response.json() == {"error": {"code": "agent_error", "message": "scripted failure"},
                                   "messages": [{"role": "assistant", "content": "Working on it..."}]}
        return
    assert response.status_code == 200
    events = decode(dialect, response.content)
    error = events[-1]
    assert isinstance(error, RunError) and "scripted failure" in error.message
    assert not any(isinstance(e, RunFinished) for e in events)
    if dialect == "ag-ui":
        assert error.code == "agent_error" and said(events) == "Working on it..."


def test_state_sends_a_snapshot_then_a_patch() -> None:
    events = ask("ag-ui", client("ag-ui"), "show state")
    assert one(events, StateSnapshot).snapshot == {"count": 0}
    assert one(events, StateDelta).patch == [{"op": "replace", "path": "/count", "value": 1}]
    assert said(events) == "The count is now 1."


def test_think_reasons_before_answering() -> None:
    events = ask("ag-ui", client("ag-ui"), "think hard")
    reasoning = [i for i, e in enumerate(events) if isinstance(e, ReasoningDelta)]
    text = [i for i, e in enumerate(events) if isinstance(e, TextDelta)]
    assert reasoning and text and max(reasoning) < min(text)


def test_slow_spaces_twenty_deltas_whatever_the_pace() -> None:
    run = script(Turn([Message("user", "slow please")]), [Message("user", "slow please")])
    deltas = [delay for delay, e in run.timeline if isinstance(e, TextDelta)]
    assert len(deltas) == 20 and deltas[1:] == [SLOW_GAP] * 19


def test_silent_waits_before_the_run_starts_and_hang_after() -> None:
    silent = script(Turn([Message("user", "silent")]), [Message("user", "silent")])
    assert silent.timeline[0] == (HANG, silent.timeline[0][1]) and isinstance(silent.timeline[0][1], RunStarted)
    hang = script(Turn([Message("user", "hang")]), [Message("user", "hang")])
    assert [delay for delay, _ in hang.timeline[:3]] == [0.0, 0.0, 0.0]
    assert any(delay == HANG for delay, _ in hang.timeline[3:])


def test_a_tool_result_is_answered_whatever_the_user_said() -> None:
    history = [Message("user", "hang"), Message("tool", "done", tool_call_id="c")]
    run = script(Turn(history), history)
    assert all(delay == 0 for delay, _ in run.timeline)


def test_pace_spaces_the_events() -> None:
    started = time.monotonic()
    events = ask("ag-ui", client("ag-ui", pace=0.01), "hi")
    assert time.monotonic() - started >= 0.01 * (len(events) - 1)


# the server


@pytest.mark.parametrize("dialect", DIALECTS)
def test_bad_bodies_get_the_gateways_json_errors(dialect: str) -> None:
    api = client(dialect)
    invalid = api.post(path(dialect), json={"messages": "nope"})
    assert invalid.status_code == 422 and invalid.json()["error"]["code"] == "invalid_request"
    malformed = api.post(path(dialect), content=b"{not json", headers={"content-type": "application/json"})
    assert malformed.status_code == 400 and malformed.json()["error"]["code"] == "malformed_request"


def test_request_log_shows_what_reached_the_agent_and_can_be_cleared() -> None:
    api = client("ag-kit")
    sent = body("ag-kit", [user("ag-kit", "hi")])
    api.post("/send-message", json=sent, headers={"authorization": "Bearer t", "x-trace": "1"})
    api.post("/send-message", json=["not an object"])
    log = api.get("/_requests").json()
    assert log[0]["path"] == "/send-message" and log[0]["body"] == sent
    assert log[0]["headers"]["authorization"] == "Bearer t" and log[0]["headers"]["x-trace"] == "1"
    assert log[1]["body"] is None
    assert api.delete("/_requests").json() == {"cleared": 2}
    assert api.get("/_requests").json() == []
    assert api.app.state.agent.log.maxlen == MAX_LOG  # type: ignore[attr-defined]


def test_paths_health_and_an_explicit_path() -> None:
    api = client("ag-ui")
    assert api.get("/healthz").text == "ok"
    assert api.post("/send-message", json=body("ag-ui", [user("ag-ui", "hi")])).status_code == 200
    custom = client("ag-ui", path="/custom")
    assert custom.post("/custom", json=body("ag-ui", [user("ag-ui", "hi")])).status_code == 200
    assert custom.post("/agui", json={}).status_code in (404, 405)
    assert custom.get("/_disconnects").json() == 0


# cancellation


def test_cancelled_stream_is_counted_as_a_disconnect() -> None:
    async def scenario() -> int:
        agent = Agent(registry.get("ag-ui"))
        run = script(Turn([Message("user", "hang")]), [Message("user", "hang")])
        first = asyncio.Event()

        async def consume() -> None:
            async for _ in agent.stream(run.timeline, registry.get("ag-ui").new_encoder(None)):
                first.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(first.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return agent.disconnects

    assert asyncio.run(scenario()) == 1


async def call_asgi(dialect: str, text: str, *, leave_after_first_body: bool) -> tuple[Any, list[AsgiMessage]]:
    """Drive the app as an ASGI 2.3 server would, the client leaving at once or after the first body chunk."""
    app = create_agent_app(dialect)
    sent: list[AsgiMessage] = []
    left = asyncio.Event()
    if not leave_after_first_body:
        left.set()
    request = orjson.dumps(body(dialect, [user(dialect, text)]))
    inbox: list[AsgiMessage] = [{"type": "http.request", "body": request, "more_body": False}]

    async def receive() -> AsgiMessage:
        if inbox:
            return inbox.pop()
        await left.wait()
        return {"type": "http.disconnect"}

    async def send(message: AsgiMessage) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and message.get("body"):
            left.set()

    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": path(dialect), "raw_path": path(dialect).encode(),
             "query_string": b"", "root_path": "", "headers": [(b"content-type", b"application/json")],
             "server": ("testserver", 80), "client": ("testclient", 1)}
    await asyncio.wait_for(app(scope, receive, send), 5)
    return app, sent


@pytest.mark.parametrize("dialect", ["ag-ui", "agent-respond"])
def test_silent_agent_stops_waiting_when_the_client_leaves(dialect: str) -> None:
    app, sent = asyncio.run(call_asgi(dialect, "silent", leave_after_first_body=False))
    assert app.state.agent.disconnects == 1
    assert all(m["type"] != "http.response.body" or not m.get("body") for m in sent)


@pytest.mark.parametrize("dialect", ["ag-ui", "ag-kit", "vercel"])
def test_hanging_stream_is_cancelled_when_the_client_leaves(dialect: str) -> None:
    app, sent = asyncio.run(call_asgi(dialect, "hang", leave_after_first_body=True))
    assert app.state.agent.disconnects == 1
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 200
