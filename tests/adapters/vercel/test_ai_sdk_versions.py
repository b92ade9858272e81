"""AI SDK 5, 6 and 7 side by side: each release's real `Chat` (the state machine `useChat` wraps) under its strict
schema (ai 5.0.216, 6.0.230 and 7.0.31 reject any chunk key their schema lacks), in front of the same upstreams,
written only what its version reads.

The route says which release its clients run (`client_version`), as an AI SDK 5 client's route must: its requests
look like a 6 client's. Upstreams: the built-in agent speaking AG-UI (its interrupts, one about a tool call), an
AG-UI 1.0 agent streaming every 1.0 family (the recorded corpus), and an AI SDK 7 agent streaming 7's chunks.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers import FIXTURES
from node_clients import run_vercel_chat
from servers import Served
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app

SDKS = {"5": "ai5", "6": "ai-strict", "7": "ai7-strict"}
"""The `ai` package each major's client runs here: its oldest strict release."""


def recorded_agent(path: Path, media: str = "text/event-stream") -> Starlette:
    """An upstream that answers every run with one recorded stream."""
    body = path.read_bytes()

    async def respond(request: Request) -> Response:
        return Response(body, media_type=media, headers={"x-vercel-ai-ui-message-stream": "v1"})

    return Starlette(routes=[Route("/{path:path}", respond, methods=["POST"])])


@pytest.fixture(scope="module")
def gateway() -> Iterator[str]:
    with Served(create_agent_app("ag-ui")) as agent, \
            Served(recorded_agent(FIXTURES / "ag-ui" / "agui10_everything.sse")) as agui10, \
            Served(recorded_agent(FIXTURES / "vercel" / "ai7" / "ai7_everything.sse")) as ai7:
        upstreams = {"agent": (f"{agent.url}/agui", "ag-ui"), "agui10": (f"{agui10.url}/agui", "ag-ui"),
                     "ai7": (f"{ai7.url}/api/chat", "vercel")}
        routes = [{"name": f"{name}-{sdk}", "paths": [f"/{name}/{sdk}"], "client_dialects": ["vercel"],
                   "client_version": sdk, "upstream": {"url": url, "dialect": dialect},
                   "timeouts": {"first_event": 10, "idle": 10, "total": 30}}
                  for name, (url, dialect) in upstreams.items() for sdk in SDKS]
        routes.append({"name": "agent-default", "paths": ["/agent/default"], "client_dialects": ["vercel"],
                       "upstream": {"url": upstreams["agent"][0], "dialect": "ag-ui"}})
        config = GatewayConfig.model_validate({"routes": routes})
        with Served(create_app(config, store=MemoryStore())) as served:
            yield served.url


def chat(url: str, sdk: str, steps: list[dict[str, Any]], chat_id: str) -> list[dict[str, Any]]:
    run = run_vercel_chat({"url": url, "chatId": chat_id, "sdk": SDKS[sdk], "steps": steps})
    return run["steps"]


def parts(step: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for m in step["messages"] if m["role"] == "assistant" for p in m["parts"]]


@pytest.mark.parametrize("sdk", ["6", "7"])
def test_an_approval_is_asked_on_the_tool_call_and_answered(gateway: str, sdk: str) -> None:
    asked, answered = chat(f"{gateway}/agent/{sdk}", sdk, [{"send": "please approve"}, {"approve": True}],
                           f"approve-{sdk}")
    assert asked["status"] == "ready", asked["error"]
    call = next(p for p in parts(asked) if p["type"] == "tool-delete_file")
    assert call["state"] == "approval-requested"
    assert answered["status"] == "ready", answered["error"]
    assert any(p["type"] == "text" and p["text"].startswith("Resumed ") for p in parts(answered))


def test_an_ai_sdk_5_client_answers_an_interrupt_with_a_tool_result(gateway: str) -> None:
    asked, answered = chat(f"{gateway}/agent/5", "5", [{"send": "please interrupt"},
                                                       {"toolOutputs": {"confirm": {"approved": True}}}],
                           "interrupt-5")
    assert asked["status"] == "ready", asked["error"]
    stand_in = next(p for p in parts(asked) if p["type"] == "tool-confirm")
    assert stand_in["state"] == "input-available" and stand_in["toolCallId"].startswith("interrupt-")
    assert [c["toolName"] for c in asked["toolCalls"]] == ["confirm"]  # the app's onToolCall sees it
    assert answered["status"] == "ready", answered["error"]
    said = [p["text"] for p in parts(answered) if p["type"] == "text"]
    assert said and said[-1].startswith("Resumed ") and '{"approved":true}' in said[-1]


@pytest.mark.parametrize("sdk", list(SDKS))
def test_every_ag_ui_1_0_family_reaches_each_release_it_can_read(gateway: str, sdk: str) -> None:
    (step,) = chat(f"{gateway}/agui10/{sdk}", sdk, [{"send": "go"}], f"agui10-{sdk}")
    assert step["status"] == "ready", step["error"]
    kinds = {p["type"] for p in parts(step)}
    assert {"data-activity", "data-subagent", "data-state", "reasoning", "text"} <= kinds
    assert [p["text"] for p in parts(step) if p["type"] == "text"] == ["Helper here.", "All done."]


@pytest.mark.parametrize("sdk", list(SDKS))
def test_an_ai_sdk_7_agent_reaches_each_release_as_far_as_it_reads(gateway: str, sdk: str) -> None:
    (step,) = chat(f"{gateway}/ai7/{sdk}", sdk, [{"send": "go"}], f"ai7-{sdk}")
    assert step["status"] == "ready", step["error"]
    kinds = {p["type"] for p in parts(step)}
    if sdk == "7":
        assert {"custom", "reasoning-file"} <= kinds
    else:
        assert "custom" not in kinds and "data-openai.web-search-call" in kinds  # a 7 custom part, as data
    denied = next(p for p in parts(step) if p["type"] == "tool-pay")
    assert denied["state"] == ("output-error" if sdk == "5" else "output-denied")


def test_a_route_that_names_no_version_writes_what_ai_6_and_7_read(gateway: str) -> None:
    response = httpx.post(f"{gateway}/agent/default", json={"id": "c", "trigger": "submit-message", "messages": [
        {"id": "u", "role": "user", "parts": [{"type": "text", "text": "please approve"}]}]}, timeout=30)
    assert b'"tool-approval-request"' in response.content
