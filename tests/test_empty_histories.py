"""A request with nothing to answer (no message at all) is refused in the client's dialect, never answered as if
the user had said something: useChat's `messages: []`, Responses' `input: []`. Where a request may carry no new
message (an answer to an interrupt, a tool's output, an eval whose agent speaks first) it is still run."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai
import pytest
from node_clients import run_vercel_chat
from servers import Served

from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app


@pytest.fixture(scope="module")
def gateway() -> Iterator[str]:
    with Served(create_agent_app("ag-ui")) as agent, Served(create_agent_app("openai-responses")) as responses, \
            Served(create_agent_app("openai-chat")) as chat:
        config = GatewayConfig.model_validate({"routes": [{
            "name": "agent", "paths": ["/api/chat", "/v1/responses", "/agent/respond"],
            "client_dialects": ["vercel", "openai-responses", "agent-respond"],
            "upstream": {"url": f"{agent.url}/agui", "dialect": "ag-ui"}}, {
            "name": "responses", "paths": ["/responses/agent/respond"], "client_dialects": ["agent-respond"],
            "upstream": {"url": f"{responses.url}/v1/responses", "dialect": "openai-responses"}}, {
            "name": "chat", "paths": ["/chat/agent/respond"], "client_dialects": ["agent-respond"],
            "upstream": {"url": f"{chat.url}/v1/chat/completions", "dialect": "openai-chat"}}]})
        with Served(create_app(config, store=MemoryStore())) as served:
            yield served.url


def test_a_use_chat_request_without_messages_is_refused(gateway: str) -> None:
    (step,) = run_vercel_chat({"url": f"{gateway}/api/chat", "chatId": "empty", "noMessages": True,
                               "steps": [{"send": "hello"}]})["steps"]
    assert step["status"] == "error" and step["requests"][0]["messages"] == []
    assert "nothing to answer" in (step["error"] or "")
    assert not any(p.get("type") == "text" for m in step["messages"] if m["role"] == "assistant"
                   for p in m["parts"])


def test_a_responses_request_without_input_is_refused_as_openai_refuses_one(gateway: str) -> None:
    with openai.OpenAI(base_url=f"{gateway}/v1", api_key="unused", max_retries=0) as client:
        with pytest.raises(openai.UnprocessableEntityError) as refused:
            client.responses.create(model="agent", input=[])
        assert refused.value.body["param"] == "input" and "nothing to answer" in refused.value.body["message"]
        answered = client.responses.create(model="agent", input="hello")  # the same route answers a message
        assert "You said: hello" in answered.output_text


@pytest.mark.parametrize("path", ["/agent/respond", "/responses/agent/respond", "/chat/agent/respond"])
def test_an_eval_whose_agent_speaks_first_is_still_answered(gateway: str, path: str) -> None:
    """The eval platform's `messages: []`: the agent speaks first. An OpenAI upstream, which refuses an empty input
    (or list of messages) as the gateway does, is sent one empty message."""
    reply = httpx.post(gateway + path, json={"messages": [], "metadata": {"test_case_id": "first"}}, timeout=30)
    assert reply.status_code == 200, reply.text
    assert reply.json()["messages"][-1]["role"] == "assistant"
