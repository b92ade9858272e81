"""A real third-party OpenAI-compatible server as the upstream of every client dialect: LiteLLM's proxy 1.108.7
(`tests/peers/litellm_proxy.py`), answering with its mock responses, in front of the real `@ag-ui/client` and `ai`
clients, the other dialects' exact request shapes, `langgraph-sdk` and the `openai` SDK itself. Text, a second turn,
usage, and LiteLLM's error object becoming each client's own error."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest
from e2e import Reply, post, request_body, user_message
from node_clients import run_agui, run_vercel_chat
from peers_env import LITELLM_KEY, litellm_upstream, run_langgraph_client
from servers import Served

from adapters import registry
from gateway.config import GatewayConfig, Route, Store, Upstream
from gateway.core.events import RunError, RunFinished, Usage
from gateway.server.app import create_app

CLIENTS = ["ag-ui", "ag-kit", "vercel", "agent-respond", "a2a", "langgraph", "openai-chat", "openai-responses"]
PATHS = {"ag-ui": "/agui", "ag-kit": "/send-message", "vercel": "/api/chat", "agent-respond": "/agent/respond",
         "a2a": "/a2a", "langgraph": "/langgraph", "openai-chat": "/v1/chat/completions",
         "openai-responses": "/v1/responses"}
SAID = "Hello from LiteLLM."


@pytest.fixture(scope="module")
def gateway() -> Iterator[str]:
    """Two routes in front of LiteLLM: `text` asks its model mock-text, `fail` mock-fail."""
    with litellm_upstream() as litellm:
        routes = [Route(name=name, paths=[f"/{name}{path}" for path in PATHS.values()],
                        upstream=Upstream(url=litellm + "/v1/chat/completions", dialect="openai-chat",
                                          model=f"mock-{name}", headers={"Authorization": f"Bearer {LITELLM_KEY}"}))
                  for name in ("text", "fail")]
        with Served(create_app(GatewayConfig(routes=routes, store=Store(url="memory://")))) as gw:
            yield gw.url


@pytest.mark.parametrize("client", CLIENTS)
def test_every_client_gets_the_models_answer_over_two_turns(gateway: str, client: str) -> None:
    with httpx.Client(timeout=30) as http:
        first = Reply(client, post(http, f"{gateway}/text{PATHS[client]}",
                                   request_body(client, [user_message(client, "hello")], f"ll-{client}")))
        history = [user_message(client, "hello"), {"role": "assistant", "content": first.text},
                   user_message(client, "again")]
        if client == "vercel":
            history[1] = {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": first.text}]}
        elif client == "ag-ui":
            history[1]["id"] = "a1"
        elif registry.get(client).history == "delta":  # its client sends only what is new (A2A refuses more)
            history = history[-1:]
        second = Reply(client, post(http, f"{gateway}/text{PATHS[client]}",
                                    request_body(client, history, f"ll-{client}")))
    for reply in (first, second):
        assert isinstance(reply.events[-1], RunFinished), reply.events
        assert reply.text == SAID


@pytest.mark.parametrize("client", CLIENTS)
def test_litellms_error_object_becomes_each_clients_error(gateway: str, client: str) -> None:
    with httpx.Client(timeout=30) as http:
        reply = Reply(client, post(http, f"{gateway}/fail{PATHS[client]}",
                                   request_body(client, [user_message(client, "hello")], f"llf-{client}")))
    assert isinstance(reply.events[-1], RunError)
    assert "mock internal server error" in reply.events[-1].message


def test_ag_ui_client_reads_the_answer_and_the_usage_litellm_reported(gateway: str) -> None:
    run = run_agui({"url": f"{gateway}/text/agui", "threadId": "ll-agui-client",
                    "steps": [{"messages": [{"role": "user", "content": "hello"}]}]})
    step = run["steps"][0]
    assert step["error"] is None and step["warnings"] == [] and step["terminal"]
    assert "".join(m.get("content") or "" for m in step["newMessages"] if m["role"] == "assistant") == SAID
    with httpx.Client(timeout=30) as http:
        reply = Reply("ag-ui", post(http, f"{gateway}/text/agui", request_body("ag-ui", [user_message(
            "ag-ui", "hello")], "ll-usage")))
    usage = [e for e in reply.events if isinstance(e, Usage)]
    assert usage and usage[0].total_tokens


def test_usechat_reads_the_answer(gateway: str) -> None:
    run = run_vercel_chat({"url": f"{gateway}/text/api/chat", "chatId": "ll-vercel", "steps": [{"send": "hello"}]})
    step = run["steps"][0]
    assert step["error"] is None and not step["timedOut"]
    assistant = next(m for m in reversed(step["messages"]) if m["role"] == "assistant")
    assert "".join(p["text"] for p in assistant["parts"] if p["type"] == "text") == SAID


def test_the_openai_sdk_through_the_gateway_to_litellm(gateway: str) -> None:
    with openai.OpenAI(base_url=f"{gateway}/text/v1", api_key="unused", max_retries=0) as client:
        chunks = list(client.chat.completions.create(model="text", messages=[{"role": "user", "content": "hi"}],
                                                     stream=True, stream_options={"include_usage": True}))
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == SAID
        assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
        first = client.responses.create(model="text", input="hi")
        second = client.responses.create(model="text", input="again", previous_response_id=first.id)
        assert first.output_text == second.output_text == SAID


def test_langgraph_sdk_holds_a_thread_with_litellm(gateway: str) -> None:
    """`langgraph-sdk`'s client on a thread: each turn goes to LiteLLM with the whole history."""
    url = f"{gateway}/text/langgraph"
    thread = str(run_langgraph_client(url, "create-thread").parts[0]["thread_id"])
    first = run_langgraph_client(url, "stream", thread=thread, text="hello")
    second = run_langgraph_client(url, "stream", thread=thread, text="again")
    assert first.error is None and second.error is None, (first.error, second.error)
    assert first.text == second.text == SAID
    state = run_langgraph_client(url, "state", thread=thread)
    assert [m["type"] for m in state.parts[0]["values"]["messages"]] == ["human", "ai", "human", "ai"]
