"""A real AG-Kit `send-message` server (`cloudbase-agent-server` 0.1.1, the simple dialect) over a scripted agent.

Runs in its own venv (`tests/peers/requirements-agkit.txt`), never in the gateway's:

    .peers/agkit/bin/python -m uvicorn --app-dir tests/peers agkit_agent:app --host 127.0.0.1 --port 0

Routes (registered by the server): `POST /send-message`, `GET /healthz`.

The server keeps no history: it hands the agent only the messages of the request (with fresh ids) as an AG-UI
`RunAgentInput` whose `thread_id` is the `conversationId`, and maps the agent's AG-UI events to its own. So the agent
keeps each thread's history here, in memory, and "history" below counts the messages of the thread before this reply:
the user and tool messages it was sent and the assistant messages it produced.

What the agent does, first match wins:

    a resume (`forwarded_props.command.resume`)  "Resumed <interrupt id> with <payload>. history=<n>"
    a tool message last in the request         "Tool <name> said: <content>. history=<n>" (name from the thread)
    last user text containing
      "fail"       "partial answer...", then raises: the server sends no error event and no [DONE], and the
                   chunked body is cut off (curl exit 18, httpx RemoteProtocolError)
      "slow"       40 text chunks "chunk <i> ", 0.1 s apart
      "weather"    server tool get_weather(city="Paris") with its result, then text
      "interrupt"  CUSTOM on_interrupt: the server sends `interrupt {id, reason, payload}`
      "tool"       calls the first tool of the request's `tools` (a client tool), left pending; with no tools,
                   "No client tool was offered. history=<n>"
    anything else  "echo: <text> | thread=<id> | tools=<names> | history=<n>"

Text goes out as TEXT_MESSAGE_CHUNK: the 0.1.1 server reads TEXT_MESSAGE_CONTENT's text from
`raw_event["data"]["chunk"]["content"]` and cuts the stream off when there is no raw event, while for a chunk it
falls back to `delta` (START/END and RUN_STARTED/FINISHED are sent for form: the server drops them). The
interrupt's id travels in the CUSTOM event's `raw_event`, which the server copies to `id`.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    RunAgentInput,
    RunFinishedEvent,
    RunStartedEvent,
    TextMessageChunkEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from cloudbase_agent.server import AGKitAPIApp

STEP = 0.01  # seconds between chunks: enough for the chunks to leave in separate writes


@dataclass
class Thread:
    messages: list[dict[str, Any]] = field(default_factory=list)
    tool_names: dict[str, str] = field(default_factory=dict)  # tool call id -> tool name
    interrupt_id: str | None = None  # the open interrupt: the server does not forward `resume.interruptId`


THREADS: dict[str, Thread] = {}


def _text(text: str, pieces: int = 2) -> Iterator[BaseEvent]:
    message_id = str(uuid.uuid4())
    yield TextMessageStartEvent(message_id=message_id, role="assistant")
    size = max(1, -(-len(text) // pieces))
    for start in range(0, len(text), size):
        yield TextMessageChunkEvent(message_id=message_id, delta=text[start:start + size])
    yield TextMessageEndEvent(message_id=message_id)


def _tool_call(thread: Thread, call_id: str, name: str, args: dict[str, Any]) -> Iterator[BaseEvent]:
    thread.tool_names[call_id] = name
    thread.messages.append({"role": "assistant", "tool_call": call_id, "name": name})
    encoded = json.dumps(args)
    yield ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name)
    yield ToolCallArgsEvent(tool_call_id=call_id, delta=encoded[:8])
    yield ToolCallArgsEvent(tool_call_id=call_id, delta=encoded[8:])
    yield ToolCallEndEvent(tool_call_id=call_id)


def _reply(thread: Thread, text: str) -> Iterator[BaseEvent]:
    yield from _text(f"{text} history={len(thread.messages)}")
    thread.messages.append({"role": "assistant", "content": text})


async def _script(run: RunAgentInput, thread: Thread) -> AsyncIterator[BaseEvent]:
    props = run.forwarded_props if isinstance(run.forwarded_props, dict) else {}
    command = props.get("command")
    if isinstance(command, dict) and "resume" in command:
        interrupt_id, thread.interrupt_id = thread.interrupt_id, None
        for event in _reply(thread, f"Resumed {interrupt_id} with {command['resume']}."):
            yield event
        return
    last = run.messages[-1] if run.messages else None
    if last is not None and last.role == "tool":
        name = thread.tool_names.get(last.tool_call_id, "unknown")
        for event in _reply(thread, f"Tool {name} said: {last.content}."):
            yield event
        return
    text = last.content if last is not None and last.role == "user" and isinstance(last.content, str) else ""
    prompt = text.lower()
    if "fail" in prompt:
        for event in _text("partial answer..."):
            yield event
        raise RuntimeError("scripted upstream failure")
    if "slow" in prompt:
        message_id = str(uuid.uuid4())
        for i in range(40):
            yield TextMessageChunkEvent(message_id=message_id, delta=f"chunk {i} ")
            await asyncio.sleep(0.1 - STEP)  # run() waits STEP after each event
        thread.messages.append({"role": "assistant", "content": "slow"})
    elif "weather" in prompt:
        call_id = f"call_weather_{uuid.uuid4().hex[:8]}"
        for event in _tool_call(thread, call_id, "get_weather", {"city": "Paris"}):
            yield event
        result = "sunny, 21C in Paris"
        yield ToolCallResultEvent(message_id=str(uuid.uuid4()), tool_call_id=call_id, content=result, role="tool")
        thread.messages.append({"role": "tool", "tool_call": call_id, "content": result})
        for event in _reply(thread, f"Tool get_weather said: {result}."):
            yield event
    elif "interrupt" in prompt:
        thread.interrupt_id = f"int_{uuid.uuid4().hex[:8]}"
        payload = {"question": "Delete the file?", "steps": ["delete file"]}
        yield CustomEvent(name="on_interrupt", value=json.dumps(payload), raw_event=thread.interrupt_id)
        thread.messages.append({"role": "assistant", "interrupt": thread.interrupt_id, "payload": payload})
    elif "tool" in prompt:
        if run.tools:
            call_id = f"call_client_{uuid.uuid4().hex[:8]}"
            for event in _tool_call(thread, call_id, run.tools[0].name, {"question": "Proceed?"}):
                yield event
        else:
            for event in _reply(thread, "No client tool was offered."):
                yield event
    else:
        tools = [t.name for t in run.tools or []]
        for event in _reply(thread, f"echo: {text} | thread={run.thread_id} | tools={tools} |"):
            yield event


class ScriptedAgent:
    """What `cloudbase-agent-server` needs of an agent: `run(RunAgentInput)` yielding AG-UI events."""

    name = "scripted"

    async def run(self, run: RunAgentInput) -> AsyncIterator[BaseEvent]:
        thread = THREADS.setdefault(run.thread_id, Thread())
        thread.messages.extend(m.model_dump(exclude_none=True) for m in run.messages)
        yield RunStartedEvent(thread_id=run.thread_id, run_id=run.run_id)
        async for event in _script(run, thread):
            yield event
            await asyncio.sleep(STEP)
        yield RunFinishedEvent(thread_id=run.thread_id, run_id=run.run_id)


def create_agent() -> dict[str, Any]:
    return {"agent": ScriptedAgent()}


app = AGKitAPIApp(auto_detect_env=False).build(create_agent)
