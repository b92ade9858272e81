"""The official `openai` SDK in strict mode (`_strict_response_validation=True`: every answer validated against the
SDK's own types) through the gateway, in front of the built-in agent speaking every dialect: each of the agent's
scenarios (text, a tool it runs, a client tool, an approval, an interrupt, reasoning, state, a failure) in Chat
Completions and Responses, in one body, streamed and through the SDK's `stream()` helpers, with any warning an
error. An approval or interrupt a Responses client is asked is answered with an `mcp_approval_response`.

One gateway serves the whole module, a route per upstream dialect under `/<dialect>/v1`, each in front of the agent
speaking that dialect."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import openai
import orjson
import pytest
from helpers import sse_payloads
from openai.types.responses import Response, ResponseErrorEvent
from servers import Served

from adapters import registry
from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig, Route, Store, Upstream
from gateway.core.events import Event, RunFinished, RunStarted, TextDelta, TextEnd, TextStart, Usage
from gateway.core.turn import Turn
from gateway.server.app import create_app

UPSTREAMS = ["ag-ui", "ag-kit", "vercel", "agent-respond", "a2a", "langgraph", "openai-chat", "openai-responses"]
SAY = {"text": "hello", "server-tool": "what is the weather in Paris", "client-tool": "use the tool to ask me",
       "approve": "approve deleting the file", "interrupt": "interrupt me", "think": "think about it",
       "state": "show me the state", "fail": "please fail"}
"""What the user says for each scenario of the built-in agent (`gateway.agent.script`'s keywords)."""
MODES = ["body", "stream", "helper"]
QUESTION = {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"],
            "additionalProperties": False}
CHAT_TOOLS: Any = [{"type": "function", "function": {"name": "ask_user", "description": "Ask the human",
                                                     "parameters": QUESTION, "strict": True}}]
RESPONSES_TOOLS: Any = [{"type": "function", "name": "ask_user", "description": "Ask the human",
                         "parameters": QUESTION, "strict": True}]
"""Strict, as the SDK's `stream()` helpers require of tools they parse the arguments of."""
WEATHER = ["Let me check the weather.", "It is sunny, 21C in Paris."]


@pytest.fixture(scope="module")
def gateway() -> Iterator[str]:
    with ExitStack() as stack:
        agents = {d: stack.enter_context(Served(create_agent_app(d))) for d in UPSTREAMS}
        routes = [Route(name=d, paths=[f"/{d}/v1/chat/completions", f"/{d}/v1/responses"],
                        client_dialects=["openai-chat", "openai-responses"],
                        upstream=Upstream(url=agent.url + registry.get(d).paths[0], dialect=d))
                  for d, agent in agents.items()]
        gw = stack.enter_context(Served(create_app(GatewayConfig(routes=routes, store=Store(url="memory://")))))
        yield gw.url


@pytest.fixture
def client(gateway: str, upstream: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{gateway}/{upstream}/v1", api_key="unused", max_retries=0, timeout=30,
                       _strict_response_validation=True) as c, warnings.catch_warnings():
        warnings.simplefilter("error")  # the SDK's serializer warnings about what its types do not hold
        yield c


def _carries(upstream: str, feature: str) -> bool:
    return feature in registry.get(upstream).carries


# -- Chat Completions


@dataclass
class Completion:
    """What a Chat Completions client makes of an answer, whichever way it came."""

    text: str = ""
    reasoning: str = ""
    calls: list[str] = field(default_factory=list)
    finish_reason: str | None = None


def _complete(client: openai.OpenAI, mode: str, upstream: str, text: str) -> Completion:
    ask: Any = {"model": upstream, "messages": [{"role": "user", "content": text}], "tools": CHAT_TOOLS}
    if mode == "stream":
        seen = Completion()
        for chunk in client.chat.completions.create(**ask, stream=True, stream_options={"include_usage": True}):
            for choice in chunk.choices:
                seen.text += choice.delta.content or ""
                seen.reasoning += (choice.delta.model_extra or {}).get("reasoning_content") or ""
                seen.calls += [c.function.name for c in choice.delta.tool_calls or () if c.function and c.function.name]
                seen.finish_reason = choice.finish_reason or seen.finish_reason
        return seen
    if mode == "helper":
        with client.chat.completions.stream(**ask) as stream:
            for _ in stream:
                pass
            completion = stream.get_final_completion()
    else:
        completion = client.chat.completions.create(**ask)
    choice = completion.choices[0]
    return Completion(choice.message.content or "", (choice.message.model_extra or {}).get("reasoning_content") or "",
                      [c.function.name for c in choice.message.tool_calls or () if c.type == "function"],
                      choice.finish_reason)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scenario", [s for s in SAY if s != "fail"])
@pytest.mark.parametrize("upstream", UPSTREAMS)
def test_chat_completions_answers_pass_the_sdks_strict_validation(client: openai.OpenAI, upstream: str,
                                                                  scenario: str, mode: str) -> None:
    seen = _complete(client, mode, upstream, SAY[scenario])
    asked = "ask_user" if _carries(upstream, "tool_definitions") else "get_location"
    expected = {
        "text": Completion("You said: hello. (turn 1)", finish_reason="stop"),
        "server-tool": Completion("\n\n".join(WEATHER), finish_reason="stop"),
        "think": Completion("After some thought: think about it.", finish_reason="stop",
                            reasoning="The user wants me to think. So I will." if _carries(upstream, "reasoning")
                            else ""),
        "state": Completion("The count is now 1.", finish_reason="stop"),
    }
    if scenario == "client-tool":  # an agent-respond agent says so too: its platform cannot run the client's tools
        assert (seen.calls, seen.finish_reason) == ([asked], "tool_calls")
    elif scenario in ("approve", "interrupt"):  # a completion can only say so
        assert "[interrupted] The agent paused for human input" in seen.text
    else:
        assert seen == expected[scenario]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("upstream", UPSTREAMS)
def test_a_failing_run_is_the_sdks_error_in_chat_completions(client: openai.OpenAI, upstream: str, mode: str) -> None:
    with pytest.raises(openai.APIError, match="scripted failure"):
        _complete(client, mode, upstream, SAY["fail"])


@pytest.mark.parametrize("upstream", ["ag-kit"])  # the built-in agent reports usage; AG-Kit cannot carry it
def test_a_chat_completion_reports_no_usage_when_the_agent_reported_none(client: openai.OpenAI,
                                                                         upstream: str) -> None:
    completion = client.chat.completions.create(model=upstream, messages=[{"role": "user", "content": "hello"}])
    assert completion.usage is None


@pytest.mark.parametrize("upstream", ["ag-ui"])
def test_a_chat_completion_reports_the_usage_the_agent_reported(client: openai.OpenAI, upstream: str) -> None:
    completion = client.chat.completions.create(model=upstream, messages=[{"role": "user", "content": "hello"}])
    assert completion.usage is not None  # the built-in agent's: a token a word
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (1, 5)


@pytest.mark.parametrize("upstream", ["ag-kit"])  # an agent that keeps the history: the gateway must find it
def test_a_chat_client_that_sends_back_a_reply_of_two_messages_continues_its_conversation(client: openai.OpenAI,
                                                                                          upstream: str) -> None:
    messages: Any = [{"role": "user", "content": SAY["server-tool"]}]
    reply = client.chat.completions.create(model=upstream, messages=messages).choices[0].message.content
    messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": "hello"}]
    again = client.chat.completions.create(model=upstream, messages=messages).choices[0].message.content
    assert (reply, again) == ("\n\n".join(WEATHER), "You said: hello. (turn 2)")


# -- Responses


def _respond(client: openai.OpenAI, mode: str, **ask: Any) -> Response:
    """The response as the client has it once the answer is whole."""
    if mode == "stream":
        events = list(client.responses.create(**ask, stream=True))
        assert events[-1].type == "response.completed", events[-1].type
        return events[-1].response
    if mode == "helper":
        with client.responses.stream(**ask) as stream:
            for _ in stream:
                pass
            return stream.get_final_response()
    return client.responses.create(**ask)


def _items(response: Response, kind: str) -> list[Any]:
    return [item for item in response.output if item.type == kind]


def _texts(response: Response) -> list[str]:
    """The messages' texts; an empty one (AG-UI's agent opens one for a call to belong to) says nothing."""
    return [part.text for item in _items(response, "message") for part in item.content
            if part.type == "output_text" and part.text]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scenario", [s for s in SAY if s not in ("fail", "approve", "interrupt")])
@pytest.mark.parametrize("upstream", UPSTREAMS)
def test_responses_pass_the_sdks_strict_validation(client: openai.OpenAI, upstream: str, scenario: str,
                                                   mode: str) -> None:
    response = _respond(client, mode, model=upstream, input=SAY[scenario], tools=RESPONSES_TOOLS)
    assert response.status == "completed"
    texts = _texts(response)
    if scenario == "text":
        assert texts == ["You said: hello. (turn 1)"]
    elif scenario == "server-tool":
        assert "\n\n".join(texts) == "\n\n".join(WEATHER)  # a Chat Completions upstream joins them itself
        ran = [(c.name, c.output, c.error) for c in _items(response, "mcp_call")]
        assert ran == ([("get_weather", "sunny, 21C in Paris", None)] if _carries(upstream, "server_tools") else [])
    elif scenario == "client-tool":
        asked = "ask_user" if _carries(upstream, "tool_definitions") else "get_location"
        assert [c.name for c in _items(response, "function_call")] == [asked]
        assert all(text.startswith("[pending tools]") for text in texts)  # an agent-respond agent says so too
    elif scenario == "think":
        assert texts == ["After some thought: think about it."]
        reasoning = ["".join(s.text for s in r.summary) for r in _items(response, "reasoning")]
        assert reasoning == (["The user wants me to think. So I will."] if _carries(upstream, "reasoning") else [])
    else:
        assert texts == ["The count is now 1."]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scenario", ["approve", "interrupt"])
@pytest.mark.parametrize("upstream", UPSTREAMS)
def test_responses_ask_for_approval_in_a_response_that_completes(client: openai.OpenAI, upstream: str, scenario: str,
                                                                 mode: str) -> None:
    asked = _respond(client, mode, model=upstream, input=SAY[scenario])
    assert asked.status == "completed" and asked.incomplete_details is None
    requests = _items(asked, "mcp_approval_request")
    if not _carries(upstream, "interrupts"):  # its agent could only say so
        assert requests == [] and any("[interrupted]" in text for text in _texts(asked))
        return
    assert len(requests) == 1
    request = requests[0]
    if scenario == "approve" and upstream != "a2a":  # about the agent's call (A2A's interrupt is its task's)
        assert (request.name, orjson.loads(request.arguments)) == ("delete_file", {"path": "/tmp/demo"})
    else:  # a question, in the words the upstream's dialect carries (AG-Kit's has no message)
        question = orjson.loads(request.arguments)
        said = "Delete /tmp/demo?" if scenario == "approve" else "Continue?"
        assert request.name == question["reason"] and question.get("message", said) == said
        if upstream != "a2a":
            assert question["reason"] == "confirm" and question["payload"] == {"options": ["yes", "no"]}


UNANSWERED = pytest.mark.xfail(strict=True, reason="a Vercel agent's own question is answered only by a useChat "
                                                   "client, through the call that stands for it")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("upstream", "scenario"), [
    pytest.param(upstream, scenario, marks=UNANSWERED if (upstream, scenario) == ("vercel", "interrupt") else ())
    for upstream in UPSTREAMS if _carries(upstream, "interrupts") for scenario in ("approve", "interrupt")])
def test_an_mcp_approval_response_answers_the_agent(client: openai.OpenAI, upstream: str, scenario: str,
                                                    mode: str) -> None:
    asked = _respond(client, mode, model=upstream, input=SAY[scenario])
    request = _items(asked, "mcp_approval_request")[0]
    answered = _respond(client, mode, model=upstream, previous_response_id=asked.id,
                        input=[{"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}])
    in_their_words = {"a2a": f'Resumed {request.id}: "yes".',  # an A2A client says yes to the task
                      "langgraph": 'Resumed : {"approved":true}.'}  # LangGraph's one answer names no interrupt
    assert _texts(answered) == [in_their_words.get(upstream, f'Resumed {request.id}: {{"approved":true}}.')]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("upstream", UPSTREAMS)
def test_a_failing_run_is_the_sdks_error_in_responses(client: openai.OpenAI, upstream: str, mode: str) -> None:
    with pytest.raises(openai.APIError, match="scripted failure"):
        _respond(client, mode, model=upstream, input=SAY["fail"])


@pytest.mark.parametrize("upstream", ["ag-ui"])
def test_the_error_event_of_a_failing_response_is_the_sdks(client: openai.OpenAI, upstream: str) -> None:
    """The SDK raises on an `error` frame before it reads it as its `ResponseErrorEvent`: read it here."""
    with client.responses.with_streaming_response.create(model=upstream, input=SAY["fail"], stream=True) as raw:
        frames = [orjson.loads(line[6:]) for line in raw.iter_lines() if line.startswith("data: {")]
    errors = [frame for frame in frames if frame["type"] == "error"]
    assert [ResponseErrorEvent.model_validate(e).message for e in errors] == ["scripted failure"]
    assert errors[0]["error"]["message"] == "scripted failure"  # the Open Responses shape, beside the SDK's


@pytest.mark.parametrize("stream", [False, True])
def test_a_response_whose_agent_reported_usage_is_the_sdks(stream: bool) -> None:
    run: list[Event] = [RunStarted(thread_id="t", run_id="r"), TextStart("m"), TextDelta("m", "hi"), TextEnd("m"),
                        Usage(input_tokens=5, output_tokens=3, cached_input_tokens=2), RunFinished()]
    encoder = registry.get("openai-responses").new_encoder(Turn(metadata={"openai_responses": {"stream": stream}}))
    body = encoder.encode(run)
    last = orjson.loads(body) if not stream else orjson.loads(sse_payloads(body)[-2])["response"]
    usage = Response.model_validate(last).usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (5, 3, 8)
    assert (usage.input_tokens_details.cached_tokens, usage.input_tokens_details.cache_write_tokens) == (2, 0)
