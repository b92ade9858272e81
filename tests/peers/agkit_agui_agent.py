"""A real AG-Kit AG-UI server (`cloudbase-agent-server` 0.1.22, `AgentServiceApp`) over a scripted agent.

Runs in its own venv (`tests/peers/requirements-agkit-agui.txt`, with `ag-ui-protocol` pinned below 1.0: the server
imports `ThinkingStartEvent`, which 1.0 removed), never in the gateway's:

    .peers/agkit-agui/bin/python -m uvicorn --app-dir tests/peers agkit_agui_agent:app --host 127.0.0.1 --port 0

Routes (registered by the server): `POST /send-message` (also `POST /v1/aibot/bots/{agent_id}/send-message`, the
id ignored), `GET /healthz` (also `GET /v1/aibot/bots/healthz`).

The request is an AG-UI `RunAgentInput` (camelCase; snake_case names are accepted too). The server fills in `tools`,
`context`, `state` and `forwardedProps` when missing, generates `runId` and any missing message `id`, makes
`threadId` optional, and accepts unknown top-level keys (`extra="allow"`). `messages` is required (it may be `[]`);
a body that is not JSON or fails validation gets HTTP 400 `{"error": {"code": "INVALID_REQUEST", "message": ...},
"requestId": <x-request-id or "unknown">}`. The top-level `resume` array of ag-ui-protocol 0.1.22 is validated (a
malformed entry is a 400) and handed to the agent untouched; this agent ignores it: only
`forwardedProps.command.resume` (the convention of AG-Kit's LangGraph adapter, `Command(resume=...)`) resumes. The
server keeps no history and the AG-UI client sends the whole conversation on every run, so this agent keeps none
either: "user turn <n>" counts the user messages in the request. With no `threadId` the agent makes one up (as the
LangGraph adapter does) and RUN_STARTED/RUN_FINISHED carry it; RUN_ERROR then says `thread_id: "unknown"`.

What the agent does, first match wins:

    a resume (`forwardedProps.command.resume`)  "Resumed with <json of the payload>."
    a tool message last in the request         "Tool <name> said: <content>." (name from the request's assistant
                                               `toolCalls`, else from the calls this process made, else "unknown")
    last user text containing
      "fail"       TEXT_MESSAGE_START and one CONTENT "partial answer...", then raises: the server sends two
                   RUN_ERRORs (the first with `message` = the exception text and no `code`, the second with
                   "Failed to process agent request: ..." and code INTERNAL_ERROR, both with snake_case `run_id`/
                   `thread_id` extras) and then ends the body normally, with no RUN_FINISHED
      "slow"       40 TEXT_MESSAGE_CONTENT "chunk <i> ", 0.1 s apart
      "weather"    server tool get_weather(city="Paris"): TOOL_CALL_START, two TOOL_CALL_ARGS, TOOL_CALL_END,
                   TOOL_CALL_RESULT "sunny, 21C in Paris", then "It is sunny, 21C in Paris."
      "think"      THINKING_START, THINKING_TEXT_MESSAGE_START/CONTENT x2/END, THINKING_END, then
                   "I have thought about it."
      "interrupt"  CUSTOM on_interrupt, value '{"question": "Delete /tmp/demo?"}' (a JSON string), then
      or "approve" RUN_FINISHED. The agent puts the interrupt's id in the CUSTOM's `rawEvent` and an interrupt
                   `outcome` on RUN_FINISHED; the server drops both, so the client sees no id at all
      "tool"       calls the first tool of the request's `tools` (a client tool) with {"question": "Proceed?"},
                   left pending (START/ARGS x2/END, no result); with no tools, "No client tool was offered."
    anything else  "Hello! You said: <text>. This is user turn <n>."

Every run is framed by RUN_STARTED and RUN_FINISHED (rebuilt by the server with only `threadId` and `runId`), text
goes out as TEXT_MESSAGE_START/CONTENT/END, and events are `data: <json>\\n\\n` frames with no `event:` line and
no `[DONE]`.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    Interrupt,
    RunAgentInput,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ThinkingTextMessageContentEvent,
    ThinkingTextMessageEndEvent,
    ThinkingTextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from cloudbase_agent.server import AgentServiceApp

STEP = 0.01  # seconds between events: enough for them to leave in separate writes

TOOL_NAMES: dict[str, str] = {}  # tool call id -> name, for every call this process made


def _text(text: str, pieces: int = 2) -> Iterator[BaseEvent]:
    message_id = str(uuid.uuid4())
    yield TextMessageStartEvent(message_id=message_id, role="assistant")
    size = max(1, -(-len(text) // pieces))
    for start in range(0, len(text), size):
        yield TextMessageContentEvent(message_id=message_id, delta=text[start:start + size])
    yield TextMessageEndEvent(message_id=message_id)


def _tool_call(call_id: str, name: str, args: dict[str, Any]) -> Iterator[BaseEvent]:
    TOOL_NAMES[call_id] = name
    encoded = json.dumps(args)
    yield ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name)
    yield ToolCallArgsEvent(tool_call_id=call_id, delta=encoded[:8])
    yield ToolCallArgsEvent(tool_call_id=call_id, delta=encoded[8:])
    yield ToolCallEndEvent(tool_call_id=call_id)


def _tool_name(run: RunAgentInput, call_id: str) -> str:
    for message in run.messages:
        for call in getattr(message, "tool_calls", None) or []:
            if call.id == call_id:
                return str(call.function.name)
    return TOOL_NAMES.get(call_id, "unknown")


def _user_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(getattr(part, "text", "") for part in content or [])


async def _script(run: RunAgentInput) -> AsyncIterator[BaseEvent]:
    props = run.forwarded_props if isinstance(run.forwarded_props, dict) else {}
    command = props.get("command")
    if isinstance(command, dict) and "resume" in command:
        for event in _text(f"Resumed with {json.dumps(command['resume'])}."):
            yield event
        return
    last = run.messages[-1] if run.messages else None
    if last is not None and last.role == "tool":
        for event in _text(f"Tool {_tool_name(run, last.tool_call_id)} said: {last.content}."):
            yield event
        return
    text = _user_text(last.content) if last is not None and last.role == "user" else ""
    prompt = text.lower()
    if "fail" in prompt:
        message_id = str(uuid.uuid4())
        yield TextMessageStartEvent(message_id=message_id, role="assistant")
        yield TextMessageContentEvent(message_id=message_id, delta="partial answer...")
        raise RuntimeError("scripted upstream failure")
    if "slow" in prompt:
        message_id = str(uuid.uuid4())
        yield TextMessageStartEvent(message_id=message_id, role="assistant")
        for i in range(40):
            yield TextMessageContentEvent(message_id=message_id, delta=f"chunk {i} ")
            await asyncio.sleep(0.1 - STEP)  # run() waits STEP after each event
        yield TextMessageEndEvent(message_id=message_id)
    elif "weather" in prompt:
        call_id = f"call_weather_{uuid.uuid4().hex[:8]}"
        for event in _tool_call(call_id, "get_weather", {"city": "Paris"}):
            yield event
        result = "sunny, 21C in Paris"
        yield ToolCallResultEvent(message_id=str(uuid.uuid4()), tool_call_id=call_id, content=result, role="tool")
        for event in _text(f"It is {result}."):
            yield event
    elif "think" in prompt:
        yield ThinkingStartEvent(title="Thinking")
        yield ThinkingTextMessageStartEvent()
        yield ThinkingTextMessageContentEvent(delta="Let me think ")
        yield ThinkingTextMessageContentEvent(delta="about this step by step.")
        yield ThinkingTextMessageEndEvent()
        yield ThinkingEndEvent()
        for event in _text("I have thought about it."):
            yield event
    elif "interrupt" in prompt or "approve" in prompt:
        interrupt_id = f"int_{uuid.uuid4().hex[:8]}"
        yield CustomEvent(name="on_interrupt", value=json.dumps({"question": "Delete /tmp/demo?"}),
                          raw_event={"id": interrupt_id})
        outcome = RunFinishedInterruptOutcome(interrupts=[Interrupt(id=interrupt_id, reason="confirmation",
                                                                    message="Delete /tmp/demo?")])
        yield RunFinishedEvent(thread_id=run.thread_id, run_id=run.run_id, outcome=outcome)
    elif "tool" in prompt:
        if run.tools:
            call_id = f"call_client_{uuid.uuid4().hex[:8]}"
            for event in _tool_call(call_id, run.tools[0].name, {"question": "Proceed?"}):
                yield event
        else:
            for event in _text("No client tool was offered."):
                yield event
    else:
        turn = sum(1 for message in run.messages if message.role == "user")
        for event in _text(f"Hello! You said: {text}. This is user turn {turn}."):
            yield event


class ScriptedAgent:
    """What `cloudbase-agent-server` needs of an agent: `run(RunAgentInput)` yielding AG-UI events."""

    name = "scripted"

    async def run(self, run: RunAgentInput) -> AsyncIterator[BaseEvent]:
        if not run.thread_id:
            run = run.model_copy(update={"thread_id": str(uuid.uuid4())})
        yield RunStartedEvent(thread_id=run.thread_id, run_id=run.run_id)
        finished = False
        async for event in _script(run):
            finished = isinstance(event, RunFinishedEvent)
            yield event
            await asyncio.sleep(STEP)
        if not finished:
            yield RunFinishedEvent(thread_id=run.thread_id, run_id=run.run_id)


def create_agent() -> dict[str, Any]:
    return {"agent": ScriptedAgent()}


app = AgentServiceApp().build(create_agent)
