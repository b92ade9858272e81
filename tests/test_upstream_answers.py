"""What an upstream answers reaches every client as it meant it, over HTTP: a crafted upstream
(`tests/fixtures/crafted/`) served on 127.0.0.1 in front of the gateway, each client dialect asking through its own
path and reading the reply with its own decoder; OpenAI's SDK where the reply is OpenAI's.

- a refusal is the assistant's words for every client, and still a refusal for an OpenAI one;
- an answer cut short (a model's output limit, a content filter) says so in each client's terms;
- an A2A artifact an agent replaces is the text it ends as, never its versions joined;
- Responses text said only in its `.done` events is the answer's;
- a Chat Completions server's choices beyond the first are not the run's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from e2e import DIALECTS, Reply, post, request_body, user_message
from helpers import FIXTURES, decode, encode
from node_clients import verify_agui, verify_vercel
from servers import Served
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from test_operations import metric_samples

from adapters import registry
from adapters.openai_chat.request import SEPARATOR, parse_request
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.core.events import RunFinished, TextStart
from gateway.server.app import create_app

CRAFTED = FIXTURES / "crafted"
PATHS = {"ag-ui": "/agui", "ag-kit": "/send-message", "vercel": "/api/chat", "agent-respond": "/agent/respond",
         "a2a": "/a2a", "langgraph": "/langgraph", "openai-chat": "/v1/chat/completions",
         "openai-responses": "/v1/responses", "mcp": "/mcp"}
UPSTREAMS = {"chat_refusal": "openai-chat", "responses_refusal": "openai-responses", "chat_length": "openai-chat",
             "chat_content_filter": "openai-chat", "responses_incomplete": "openai-responses",
             "responses_done_only": "openai-responses", "a2a_replaced": "a2a", "a2a_rewritten": "a2a",
             "chat_choices": "openai-chat"}
"""Each crafted stream the upstream serves, by the route that reads it (named after it), in its dialect."""
REFUSAL = "I'm sorry, I can't help with that."
CUT_SHORT = {"chat_length": "length", "chat_content_filter": "content_filter", "responses_incomplete": "length"}
SAYS_CUT_SHORT = [d for d in DIALECTS if d != "ag-kit"]
"""The client dialects with a word for an answer cut short (AG-Kit's stream just ends)."""


def crafted_upstream() -> Starlette:
    """Each crafted stream at `/<name>`, as its dialect's server sends it; no A2A agent card (the gateway then calls
    the URL as JSON-RPC 1.0)."""

    async def answer(request: Request) -> Response:
        name = request.path_params["name"]
        path = CRAFTED / UPSTREAMS[name] / f"{name}.sse"
        return Response(path.read_bytes(), media_type="text/event-stream")

    async def no_card(request: Request) -> Response:
        return Response(status_code=404)

    return Starlette(routes=[Route("/{name}/.well-known/agent-card.json", no_card),
                             Route("/{name}", answer, methods=["POST"])])


@pytest.fixture(scope="module")
def gateway() -> Iterator[str]:
    with Served(crafted_upstream()) as upstream:
        config = GatewayConfig.model_validate({"routes": [
            {"name": name, "paths": [f"/{name}{path}" for path in PATHS.values()],
             "upstream": {"url": f"{upstream.url}/{name}", "dialect": dialect}}
            for name, dialect in UPSTREAMS.items()]})
        with Served(create_app(config, store=MemoryStore())) as served:
            yield served.url


def ask(gateway: str, route: str, client: str) -> Reply:
    with httpx.Client(timeout=30) as http:
        return Reply(client, post(http, f"{gateway}/{route}{PATHS[client]}",
                                  request_body(client, [user_message(client, "hello")], f"{route}-{client}")))


@pytest.mark.parametrize("client", DIALECTS)
@pytest.mark.parametrize("route", ["chat_refusal", "responses_refusal"])
def test_a_refusal_is_the_assistants_words_for_every_client(gateway: str, route: str, client: str) -> None:
    reply = ask(gateway, route, client)
    assert reply.text == REFUSAL and isinstance(reply.events[-1], RunFinished)


@pytest.mark.parametrize("route", ["chat_refusal", "responses_refusal"])
def test_an_openai_client_gets_a_refusal_as_one(gateway: str, route: str) -> None:
    with openai.OpenAI(base_url=f"{gateway}/{route}/v1", api_key="unused", max_retries=0) as client:
        chunks = list(client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                                     stream=True))
        body = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        response = client.responses.create(model="m", input="hi")
    assert "".join(c.choices[0].delta.refusal or "" for c in chunks if c.choices) == REFUSAL
    assert not any(c.choices[0].delta.content for c in chunks if c.choices)
    assert body.choices[0].message.refusal == REFUSAL and body.choices[0].message.content is None
    parts = [part for item in response.output if item.type == "message" for part in item.content]
    assert [(part.type, getattr(part, "refusal", None)) for part in parts] == [("refusal", REFUSAL)]
    assert response.output_text == ""


def test_a_refusal_sent_back_in_a_chat_history_is_the_assistants_words() -> None:
    turn = parse_request({"model": "m", "messages": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": None, "refusal": REFUSAL},
        {"role": "user", "content": "why?"}]})
    assert [(m.role, m.text) for m in turn.messages] == [("user", "hi"), ("assistant", REFUSAL), ("user", "why?")]


@pytest.mark.parametrize("client", SAYS_CUT_SHORT)
@pytest.mark.parametrize("route", sorted(CUT_SHORT))
def test_an_answer_cut_short_says_so_in_every_clients_terms(gateway: str, route: str, client: str) -> None:
    reply = ask(gateway, route, client)
    assert reply.finished is not None and reply.finished.stop_reason == CUT_SHORT[route]
    assert reply.text.startswith("The answer is" if route != "chat_content_filter" else "Here is how to")


def test_an_ag_kit_client_cannot_be_told_and_that_is_counted(gateway: str) -> None:
    reply = ask(gateway, "chat_length", "ag-kit")
    with httpx.Client(timeout=10) as http:
        samples = metric_samples(http, gateway)
    assert reply.finished is not None and reply.text == "The answer is forty"
    assert samples["agent_gateway_events_dropped_total", (
        ("client_dialect", "ag-kit"), ("kind", "stop_reason"), ("upstream_dialect", "openai-chat"))] >= 1


def test_the_openai_sdk_reads_a_cut_answers_finish_reason_and_status(gateway: str) -> None:
    with openai.OpenAI(base_url=f"{gateway}/chat_length/v1", api_key="unused", max_retries=0) as client:
        chunks = list(client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}],
                                                     stream=True))
        response = client.responses.create(model="m", input="hi")
        stored = client.responses.retrieve(response.id)
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["length"]
    for said in (response, stored):
        assert said.status == "incomplete" and said.incomplete_details is not None
        assert said.incomplete_details.reason == "max_output_tokens"


def test_the_ag_ui_and_ai_sdk_clients_accept_an_answer_cut_short() -> None:
    events = decode("openai-chat", (CRAFTED / "openai-chat" / "chat_content_filter.sse").read_bytes())
    agui = verify_agui({"cut": encode("ag-ui", events)})["cut"]
    vercel = verify_vercel({"cut": encode("vercel", events)})["cut"]
    assert agui["ok"], agui
    assert agui["types"][-1] == "RUN_FINISHED"
    assert vercel["ok"] and vercel["in_band_error"] is None, vercel


@pytest.mark.parametrize("client", DIALECTS)
def test_an_a2a_artifact_replaced_as_it_grows_is_its_last_text(gateway: str, client: str) -> None:
    assert ask(gateway, "a2a_replaced", client).text == "The answer is 42."


@pytest.mark.parametrize("client", DIALECTS)
def test_an_a2a_artifact_rewritten_after_it_was_shown_is_a_message_of_its_own(gateway: str, client: str) -> None:
    reply = ask(gateway, "a2a_rewritten", client)
    # What the client was shown stays; then the rewrite (a completion's messages a paragraph apart).
    assert reply.text.replace(SEPARATOR, "") == "The answer is 41.The answer is 42."
    if "messages" in registry.get(client).carries:
        assert _texts(reply.events) == ["The answer is 41.", "The answer is 42."]


@pytest.mark.parametrize("client", DIALECTS)
def test_responses_text_said_only_when_done_is_the_answer(gateway: str, client: str) -> None:
    assert ask(gateway, "responses_done_only", client).text == "Said only when done."


def test_choices_beyond_the_first_are_left_out_of_every_clients_answer_and_counted(gateway: str) -> None:
    for client in DIALECTS:
        assert ask(gateway, "chat_choices", client).text == "First answer.", client
    with httpx.Client(timeout=10) as http:
        samples = metric_samples(http, gateway)
    assert samples["agent_gateway_events_dropped_total", (
        ("client_dialect", "ag-ui"), ("kind", "upstream_other_run"), ("upstream_dialect", "openai-chat"))] == 4


def _texts(events: list[Any]) -> list[str]:
    texts: dict[str, str] = {}
    for e in events:
        if isinstance(e, TextStart):
            texts[e.message_id] = ""
        elif type(e).__name__ == "TextDelta":
            texts[e.message_id] += e.delta
    return [t for t in texts.values() if t]
