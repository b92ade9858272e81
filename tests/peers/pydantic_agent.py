"""A real pydantic-ai agent, served as an AG-UI and a Vercel AI upstream, with a scripted model instead of an LLM.

Runs in its own venv (`tests/peers/requirements-pydantic.txt`), never in the gateway's:

    .peers/pydantic/bin/python -m uvicorn --app-dir tests/peers pydantic_agent:app --host 127.0.0.1 --port 0

Routes: `POST /ag-ui` (AG-UI `RunAgentInput` -> AG-UI events, `AGUIAdapter`), `POST /vercel` (AI SDK `useChat`
body -> UI message stream, `VercelAIAdapter` at `sdk_version=6`), `POST /vercel5` (the same at `sdk_version=5`, the
adapter's default: no tool approvals), `GET /healthz`.

The model's answer depends on the last message of the history. A tool return (a server tool that just ran, or a
client tool's result sent back by the client) is answered with "Tool <name> said: <content>.". Otherwise the last
user text decides, first match wins:

    "fail"               the model raises: AG-UI RUN_ERROR, Vercel `error`
    "slow"               40 text chunks "chunk <i> ", 0.1 s apart (4 s in all)
    "weather"            calls the server tool get_weather(city="Paris"), whose result the next model turn reads back
    "think"              reasoning, then text
    "approve"            calls delete_file, a tool that needs the human's approval: AG-UI interrupt outcome,
                         Vercel `tool-approval-request` (sdk 6); once approved it runs and its result is read back
    "frontend" / "tool"  calls the first tool the client offered (AG-UI `tools[]`) and leaves it pending
    anything else        "Hello! You said: <text>. This is user turn <n>."
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import (
    AgentInfo,
    DeltaThinkingCalls,
    DeltaThinkingPart,
    DeltaToolCall,
    DeltaToolCalls,
    FunctionModel,
)
from pydantic_ai.ui.ag_ui import AGUIAdapter
from pydantic_ai.ui.vercel_ai import VercelAIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

STEP = 0.01  # seconds between chunks: enough for the chunks to leave in separate writes

Chunk = str | DeltaToolCalls | DeltaThinkingCalls


def _user_texts(messages: list[ModelMessage]) -> list[str]:
    texts: list[str] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart):
                    content = part.content
                    texts.append(content if isinstance(content, str) else " ".join(str(c) for c in content))
    return texts


async def _say(*chunks: str) -> AsyncIterator[str]:
    for chunk in chunks:
        await asyncio.sleep(STEP)
        yield chunk


async def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Chunk]:
    last = messages[-1]
    returns = [p for p in last.parts if isinstance(p, ToolReturnPart)] if isinstance(last, ModelRequest) else []
    if returns:
        async for chunk in _say(f"Tool {returns[0].tool_name} said: ", str(returns[0].content), "."):
            yield chunk
        return

    texts = _user_texts(messages)
    text = texts[-1] if texts else ""
    prompt = text.lower()
    if "fail" in prompt:
        raise RuntimeError("scripted upstream failure")
    if "slow" in prompt:
        for i in range(40):
            yield f"chunk {i} "
            await asyncio.sleep(0.1)
        return
    if "weather" in prompt:
        # Arguments in two fragments, so the stream carries more than one args delta.
        yield {0: DeltaToolCall(name="get_weather", json_args='{"city": ', tool_call_id="call_weather_1")}
        await asyncio.sleep(STEP)
        yield {0: DeltaToolCall(json_args='"Paris"}')}
        return
    if "think" in prompt:
        yield {0: DeltaThinkingPart(content="The user wants me to think. ")}
        await asyncio.sleep(STEP)
        yield {0: DeltaThinkingPart(content="Done thinking.")}
        await asyncio.sleep(STEP)
        yield "I have thought about it."
        return
    if "approve" in prompt:
        yield {0: DeltaToolCall(name="delete_file", json_args='{"path": "/tmp/demo"}', tool_call_id="call_delete_1")}
        return
    if "frontend" in prompt or "tool" in prompt:
        offered = [t for t in info.function_tools if t.kind == "external"]
        if offered:
            yield {0: DeltaToolCall(name=offered[0].name, json_args='{"question": "Proceed?"}',
                                    tool_call_id="call_frontend_1")}
            return
        async for chunk in _say("No frontend tool was offered."):
            yield chunk
        return
    async for chunk in _say("Hello! ", f"You said: {text}. ", f"This is user turn {len(texts)}."):
        yield chunk


agent = Agent(FunctionModel(stream_function=scripted_model, model_name="scripted"), name="scripted-upstream",
              output_type=[str, DeferredToolRequests])


@agent.tool_plain
def get_weather(city: str) -> str:
    """Get the current weather for a city."""
    return f"sunny, 21C in {city}"


@agent.tool_plain(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file; the human approves first."""
    return f"deleted {path}"


async def ag_ui(request: Request) -> Response:
    return await AGUIAdapter.dispatch_request(request, agent=agent)


async def vercel(request: Request) -> Response:
    # sdk_version 6: tool approvals travel as `tool-approval-request` / `approval-responded` parts.
    return await VercelAIAdapter.dispatch_request(request, agent=agent, sdk_version=6)


async def vercel5(request: Request) -> Response:
    return await VercelAIAdapter.dispatch_request(request, agent=agent, sdk_version=5)


async def healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


app = Starlette(routes=[
    Route("/ag-ui", ag_ui, methods=["POST"]),
    Route("/vercel", vercel, methods=["POST"]),
    Route("/vercel5", vercel5, methods=["POST"]),
    Route("/healthz", healthz, methods=["GET"]),
])
