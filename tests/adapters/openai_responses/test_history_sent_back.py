"""A Responses client that sends its whole history back (`input` holding the last response's items, no
`previous_response_id`), as the `openai` SDK's users and the Agents SDK do, whether or not it asks the gateway to
store responses: the gateway finds the conversation by that history, so an upstream that keeps its own hears only
what is new. In front of cloudbase-agent-server 0.1.1, whose requests cannot carry the agent's tool calls, a
`function_call_output` is the tool's result the agent asked for, not a history it is told afresh."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from peers_env import agkit_upstream
from servers import Served

from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app

ASK_USER = {"type": "function", "name": "ask_user", "description": "Ask the human",
            "parameters": {"type": "object", "properties": {"question": {"type": "string"}}}}


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    with agkit_upstream() as agkit:
        config = GatewayConfig.model_validate({"routes": [{
            "name": "agkit", "paths": ["/v1/responses"], "client_dialects": ["openai-responses"],
            "upstream": {"url": f"{agkit}/send-message", "dialect": "ag-kit"}}]})
        with Served(create_app(config, store=MemoryStore())) as gateway, \
                openai.OpenAI(base_url=f"{gateway.url}/v1", api_key="unused", max_retries=0, timeout=30) as sdk:
            yield sdk


@pytest.mark.parametrize("store", [True, False])
@pytest.mark.parametrize("stream", [False, True])
def test_a_function_call_output_in_the_whole_history_is_answered_by_the_agent(client: openai.OpenAI, store: bool,
                                                                              stream: bool) -> None:
    items: list[Any] = [{"role": "user", "content": f"use the tool please ({store}, {stream})"}]
    asked = client.responses.create(model="agkit", input=items, tools=[ASK_USER], store=store)
    call = next(o for o in asked.output if o.type == "function_call")
    items += [o.model_dump(exclude_none=True) for o in asked.output]
    items.append({"type": "function_call_output", "call_id": call.call_id, "output": "Berlin"})
    if stream:
        with client.responses.stream(model="agkit", input=items, tools=[ASK_USER], store=store) as events:
            answered = events.get_final_response()
    else:
        answered = client.responses.create(model="agkit", input=items, tools=[ASK_USER], store=store)
    assert [o.type for o in answered.output] == ["message"]
    assert answered.output_text == "Tool ask_user said: Berlin. history=3"  # the thread the call was made in


def test_a_deleted_response_is_not_found_by_its_transcript_either(client: openai.OpenAI) -> None:
    """`DELETE /v1/responses/{id}` removes the conversation as the response left it, the copy kept for a client
    that sends the whole history back included: that history is then one the gateway has never seen."""
    items: list[Any] = [{"role": "user", "content": "use the tool please (deleted)"}]
    asked = client.responses.create(model="agkit", input=items, tools=[ASK_USER])
    call = next(o for o in asked.output if o.type == "function_call")
    client.responses.delete(asked.id)
    items += [o.model_dump(exclude_none=True) for o in asked.output]
    items.append({"type": "function_call_output", "call_id": call.call_id, "output": "Berlin"})
    again = client.responses.create(model="agkit", input=items, tools=[ASK_USER])
    assert "Tool ask_user said: Berlin." not in again.output_text  # a new conversation, without the call
