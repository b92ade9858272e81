"""The official `openai` Python SDK and the OpenAI Agents SDK through the gateway, in front of the built-in agent
speaking every other dialect: Chat Completions and Responses, streamed and in one body, multi-turn (the whole
history, `previous_response_id`, `conversation`), client tool round trips, errors, stored responses, `/v1/models`."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from agents.models.openai_responses import OpenAIResponsesModel
from redis_server import RedisServer
from servers import Served

from adapters import registry
from gateway.agent.server import create_agent_app
from gateway.config import Auth, GatewayConfig, Route, Store, Upstream
from gateway.server.app import create_app

set_tracing_disabled(True)  # the SDK would send its traces to OpenAI

UPSTREAMS = ["ag-ui", "ag-kit", "vercel", "agent-respond", "a2a", "openai-chat", "openai-responses"]
PATHS = {"ag-ui": "/agui", "ag-kit": "/send-message", "vercel": "/api/chat", "agent-respond": "/agent/respond",
         "a2a": "/a2a", "openai-chat": "/v1/chat/completions", "openai-responses": "/v1/responses"}
ASK_USER = {"type": "function", "function": {"name": "ask_user", "description": "Ask the human",
                                             "parameters": {"type": "object",
                                                            "properties": {"question": {"type": "string"}},
                                                            "required": ["question"]}}}


@pytest.fixture(scope="module", params=UPSTREAMS)
def gateway(request: pytest.FixtureRequest) -> Iterator[str]:
    """The gateway at `<url>/v1`, in front of the built-in agent speaking `request.param`."""
    dialect = request.param
    with Served(create_agent_app(dialect)) as agent:
        route = Route(name="agent", client_dialects=["openai-chat", "openai-responses"],
                      upstream=Upstream(url=agent.url + PATHS[dialect], dialect=dialect))
        with Served(create_app(GatewayConfig(routes=[route], store=Store(url="memory://")))) as gw:
            yield gw.url + "/v1"


@pytest.fixture
def offers_tools(request: pytest.FixtureRequest) -> None:
    """Client tools reach only upstreams whose requests carry tool definitions; the others' agents declare their
    own (the translation matrix's "lossy: client tool")."""
    upstream = request.node.callspec.params["gateway"]
    if "tool_definitions" not in registry.get(upstream).carries:
        pytest.skip(f"{upstream} requests carry no client tools")


@pytest.fixture
def client(gateway: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=gateway, api_key="unused", max_retries=0, timeout=30) as c:
        yield c


def test_chat_completions_stream_the_agents_text_with_usage_and_a_finish_reason(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(model="agent", messages=[{"role": "user", "content": "hello"}],
                                            stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "You said: hello. (turn 1)"
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["stop"]
    assert chunks[-1].choices == [] and chunks[-1].usage is not None


def test_chat_completions_round_trip_a_client_tool(client: openai.OpenAI, offers_tools: None) -> None:
    messages: list[dict[str, object]] = [{"role": "user", "content": "use the tool to ask me"}]
    first = client.chat.completions.create(model="agent", messages=messages, tools=[ASK_USER])  # type: ignore[arg-type]
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.tool_calls
    call = choice.message.tool_calls[0]
    assert call.function.name == "ask_user" and call.function.arguments == '{"question":"demo"}'
    messages += [choice.message.model_dump(exclude_none=True),
                 {"role": "tool", "tool_call_id": call.id, "content": "blue"}]
    second = client.chat.completions.create(model="agent", messages=messages, tools=[ASK_USER])  # type: ignore[arg-type]
    assert second.choices[0].message.content == "The tool said: blue."


def test_responses_continue_from_previous_response_id(client: openai.OpenAI) -> None:
    first = client.responses.create(model="agent", input="hello")
    assert first.status == "completed" and first.output_text == "You said: hello. (turn 1)"
    second = client.responses.create(model="agent", input="again", previous_response_id=first.id)
    assert second.output_text == "You said: again. (turn 2)"
    assert second.previous_response_id == first.id


def test_responses_stream_semantic_events_and_round_trip_a_function_call(client: openai.OpenAI,
                                                                         offers_tools: None) -> None:
    tools = [{"type": "function", "name": "ask_user", "parameters": ASK_USER["function"]["parameters"]}]  # type: ignore[index]
    with client.responses.stream(model="agent", input="use the tool to ask me", tools=tools) as stream:  # type: ignore[arg-type]
        events = list(stream)
        final = stream.get_final_response()
    numbers = [e.sequence_number for e in events]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    assert events[0].type == "response.created" and events[-1].type == "response.completed"
    calls = [item for item in final.output if item.type == "function_call"]
    assert [c.name for c in calls] == ["ask_user"]
    after = client.responses.create(model="agent", previous_response_id=final.id, tools=tools,  # type: ignore[arg-type]
                                    input=[{"type": "function_call_output", "call_id": calls[0].call_id,
                                            "output": "blue"}])
    assert after.output_text == "The tool said: blue."


def test_a_failing_run_raises_in_both_apis(client: openai.OpenAI) -> None:
    with pytest.raises(openai.APIError, match="scripted failure"):
        list(client.chat.completions.create(model="agent", messages=[{"role": "user", "content": "please fail"}],
                                            stream=True))
    with pytest.raises(openai.APIError, match="scripted failure"):
        list(client.responses.create(model="agent", input="please fail", stream=True))


# -- one upstream is enough for what the gateway alone answers


@pytest.mark.parametrize("gateway", ["ag-ui"], indirect=True)
def test_a_stored_response_is_read_back_cancelled_only_while_running_and_deleted(client: openai.OpenAI) -> None:
    created = client.responses.create(model="agent", input="hello")
    again = client.responses.retrieve(created.id)
    assert again.status == "completed" and again.output_text == created.output_text
    with pytest.raises(openai.BadRequestError):
        client.responses.cancel(created.id)
    client.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(created.id)


@pytest.mark.parametrize("gateway", ["ag-ui"], indirect=True)
def test_an_unknown_previous_response_is_a_404_naming_it(client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        client.responses.create(model="agent", input="hi", previous_response_id="resp_nothing")
    assert caught.value.code == "previous_response_not_found"


@pytest.mark.parametrize("gateway", ["ag-kit"], indirect=True)
def test_a_conversation_keeps_its_history_and_a_fork_from_an_older_response_forgets_the_later_turns(
        client: openai.OpenAI) -> None:
    first = client.responses.create(model="agent", input="one", conversation="conv-sdk-1")
    second = client.responses.create(model="agent", input="two", conversation="conv-sdk-1")
    assert first.output_text.endswith("(turn 1)") and second.output_text.endswith("(turn 2)")
    a = client.responses.create(model="agent", input="a")
    b = client.responses.create(model="agent", input="b", previous_response_id=a.id)
    fork = client.responses.create(model="agent", input="c", previous_response_id=a.id)
    assert b.output_text.endswith("(turn 2)") and fork.output_text == "You said: c. (turn 2)"


@pytest.mark.parametrize("gateway", ["ag-ui"], indirect=True)
def test_bad_input_is_an_openai_error_naming_the_field(client: openai.OpenAI) -> None:
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        client.responses.create(model="agent", input=[{"type": "message", "role": "wizard", "content": "x"}])
    assert caught.value.param == "input[0].role"
    with pytest.raises(openai.APIStatusError) as chat:
        client.chat.completions.create(model="agent", messages=[])
    assert chat.value.status_code in (400, 422) and "messages" in str(chat.value)


@pytest.mark.parametrize("gateway", ["ag-ui"], indirect=True)
def test_the_models_list_names_the_route(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == ["agent"]
    assert client.models.retrieve("agent").id == "agent"


def test_models_lists_only_the_routes_a_key_opens() -> None:
    with Served(create_agent_app("ag-ui")) as agent:
        routes = [Route(name=name, paths=[f"/{name}/v1/chat/completions"], client_dialects=["openai-chat"],
                        auth=Auth(keys=[f"key-{name}"]), upstream=Upstream(url=agent.url + "/agui", dialect="ag-ui"))
                  for name in ("alpha", "beta")]
        with Served(create_app(GatewayConfig(routes=routes, store=Store(url="memory://")))) as gw, \
                openai.OpenAI(base_url=gw.url + "/alpha/v1", api_key="key-alpha", max_retries=0) as alpha:
            assert [m.id for m in alpha.models.list()] == ["alpha"]
            with pytest.raises(openai.AuthenticationError):
                openai.OpenAI(base_url=gw.url + "/beta/v1", api_key="key-alpha", max_retries=0).models.list()


# -- the OpenAI Agents SDK, with the gateway as its model provider


@function_tool
def ask_user(question: str) -> str:
    """Ask the human a question."""
    return "green"


@pytest.mark.parametrize("gateway", ["ag-ui", "openai-responses"], indirect=True)
@pytest.mark.parametrize("api", ["responses", "chat"])
def test_the_agents_sdk_runs_its_tool_for_the_agent_and_gets_the_answer(gateway: str, api: str) -> None:
    async def run() -> str:
        client = openai.AsyncOpenAI(base_url=gateway, api_key="unused", max_retries=0)
        model = OpenAIResponsesModel("agent", client) if api == "responses" else \
            OpenAIChatCompletionsModel("agent", client)
        agent = Agent(name="front", instructions="Be brief.", tools=[ask_user], model=model)
        try:
            result = await Runner.run(agent, "use the tool to ask me", max_turns=4)
        finally:
            await client.close()
        return str(result.final_output)

    assert asyncio.run(run()) == "The tool said: green."


# -- stored responses are runs (gateway.core.queries): found, cancelled and deleted wherever they run


def _streaming(client: openai.OpenAI, text: str) -> tuple[list[Any], threading.Thread]:
    """A response streaming in a thread (what its client gets), once its first text has come."""
    events: list[Any] = []

    def read() -> None:
        with client.responses.create(model="agent", input=text, stream=True) as stream:
            events.extend(stream)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not any(e.type == "response.output_text.delta" for e in events) and time.monotonic() < deadline:
        time.sleep(0.02)
    return events, thread


@pytest.mark.parametrize("gateway", ["ag-ui"], indirect=True)
def test_a_running_response_is_in_progress_and_a_cancel_stops_it_for_good(client: openai.OpenAI) -> None:
    events, thread = _streaming(client, "hang on")
    response_id = events[0].response.id
    running = client.responses.retrieve(response_id)
    cancelled = client.responses.cancel(response_id)
    thread.join(10)
    after = client.responses.retrieve(response_id)
    assert running.status == "in_progress" and cancelled.status == after.status == "cancelled"
    assert events[-1].type == "response.incomplete" and events[-1].response.incomplete_details.reason == "cancelled"
    with pytest.raises(openai.BadRequestError):
        client.responses.cancel(response_id)


@pytest.mark.parametrize("gateway", ["ag-ui"], indirect=True)
def test_a_deleted_response_is_gone_and_cannot_be_continued(client: openai.OpenAI) -> None:
    first = client.responses.create(model="agent", input="hello")
    deleted = client.responses.delete(first.id)
    with pytest.raises(openai.NotFoundError) as caught:
        client.responses.create(model="agent", input="again", previous_response_id=first.id)
    assert deleted is None and caught.value.code == "previous_response_not_found"
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(first.id)


def test_a_response_is_only_its_callers() -> None:
    with Served(create_agent_app("ag-ui")) as agent:
        route = Route(name="agent", client_dialects=["openai-responses"], auth=Auth(keys=["key-a", "key-b"]),
                      upstream=Upstream(url=agent.url + "/agui", dialect="ag-ui"))
        with Served(create_app(GatewayConfig(routes=[route], store=Store(url="memory://")))) as gw, \
                openai.OpenAI(base_url=gw.url + "/v1", api_key="key-a", max_retries=0) as a, \
                openai.OpenAI(base_url=gw.url + "/v1", api_key="key-b", max_retries=0) as b:
            mine = a.responses.create(model="agent", input="hello")
            for ask in (lambda: b.responses.retrieve(mine.id), lambda: b.responses.cancel(mine.id),
                        lambda: b.responses.delete(mine.id),
                        lambda: b.responses.create(model="agent", input="hi", previous_response_id=mine.id)):
                with pytest.raises(openai.NotFoundError):
                    ask()
            assert a.responses.retrieve(mine.id).output_text == mine.output_text


def test_a_response_running_on_one_replica_is_read_and_cancelled_through_another() -> None:
    with RedisServer() as redis, Served(create_agent_app("ag-ui")) as agent:
        route = Route(name="agent", client_dialects=["openai-responses"],
                      upstream=Upstream(url=agent.url + "/agui", dialect="ag-ui"))
        config = GatewayConfig(routes=[route], store=Store(url=redis.url))
        with Served(create_app(config)) as one, Served(create_app(config)) as two, \
                openai.OpenAI(base_url=one.url + "/v1", api_key="unused", max_retries=0) as first, \
                openai.OpenAI(base_url=two.url + "/v1", api_key="unused", max_retries=0) as second:
            events, thread = _streaming(first, "hang on")
            response_id = events[0].response.id
            running = second.responses.retrieve(response_id)
            cancelled = second.responses.cancel(response_id)
            thread.join(10)
            after = first.responses.retrieve(response_id)
            continued = second.responses.create(model="agent", input="again", previous_response_id=response_id)
    assert running.status == "in_progress" and cancelled.status == after.status == "cancelled"
    assert events[-1].type == "response.incomplete" and not thread.is_alive()
    assert continued.output_text == "You said: again. (turn 2)"
