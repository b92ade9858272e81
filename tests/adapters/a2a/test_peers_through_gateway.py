"""A2A through the gateway, with real peers on both sides: `a2a-sdk` 1.3.0's server (`tests/peers/a2a_agent.py`)
as the upstream of the other dialects' clients, and `a2a-sdk`'s and `@a2a-js/sdk` 1.3.0's clients in front of the
other dialects' upstreams (the built-in agent speaking each). Install first: `.venv/bin/python tests/peers_env.py`
and `npm ci --prefix tests/clients`."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from e2e import Reply, post, request_body, user_message
from node_clients import run_a2a_send
from peers_env import a2a_upstream, run_a2a_client
from servers import Served, free_port

from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig, Route, Store, Upstream
from gateway.core.events import Interrupt, RunFinished, ToolCallStart, ToolResult
from gateway.server.app import create_app

OTHERS = ["ag-ui", "ag-kit", "vercel", "agent-respond"]
PATHS = {"ag-ui": "/agui", "ag-kit": "/send-message", "vercel": "/api/chat", "agent-respond": "/agent/respond"}


@pytest.fixture(scope="module")
def peer() -> Iterator[str]:
    with a2a_upstream() as url:
        yield url


@pytest.fixture(scope="module")
def grpc_peer() -> Iterator[str]:
    """The same agent serving gRPC too, which its card lists first."""
    with a2a_upstream(grpc=True) as url:
        yield url


COUNTED = {"jsonrpc": "jsonrpc", "http-json": "rest", "grpc": "grpc"}
"""Each binding by the name the peer counts its calls under (`/bindings`)."""


@pytest.fixture(params=list(COUNTED))
def agent(request: pytest.FixtureRequest) -> Iterator[str]:
    """The a2a-sdk agent, called on the binding its card prefers: JSON-RPC; HTTP+JSON (its twin under
    `/rest-only`, whose card offers nothing else); or gRPC (listed first): checked after the test by the calls each
    binding got."""
    binding = str(request.param)
    peer = str(request.getfixturevalue("grpc_peer" if binding == "grpc" else "peer"))
    before = httpx.get(peer + "/bindings").json()
    yield peer + "/rest-only" if binding == "http-json" else peer
    after = httpx.get(peer + "/bindings").json()
    counted = COUNTED[binding]
    assert after[counted] > before[counted]
    assert all(after[other] == before[other] for other in after if other != counted), (before, after)


def gateway(url: str, dialect: str, variant: str | None = None, grpc_port: int | None = None) -> Served:
    route = Route(name="a2a-test", upstream=Upstream(url=url, dialect=dialect, variant=variant))
    return Served(create_app(GatewayConfig.model_validate({"routes": [route], "store": Store(url="memory://"),
                                                           "a2a": {"grpc_port": grpc_port}})))


def ask(http: httpx.Client, base: str, client: str, text: str, conversation: str, **extra: Any) -> Reply:
    body = request_body(client, [user_message(client, text)], conversation, **extra)
    return Reply(client, post(http, base + PATHS[client], body))


# -- an A2A agent as the upstream


@pytest.mark.parametrize("client", OTHERS)
def test_every_client_talks_to_an_a2a_agent_found_by_its_card(agent: str, client: str) -> None:
    with gateway(agent, "a2a") as gw, httpx.Client(timeout=30) as http:
        reply = ask(http, gw.url, client, "hello there", f"card-{client}")
    assert isinstance(reply.events[-1], RunFinished), reply.events
    assert "echo: hello there" in reply.text and "history=1" in reply.text


def test_the_conversation_is_the_a2a_context_and_only_the_new_message_goes_up(agent: str) -> None:
    """AG-UI sends its whole history each turn; the A2A agent keeps its own by contextId, so it gets one message."""
    with gateway(agent, "a2a") as gw, httpx.Client(timeout=30) as http:
        first = ask(http, gw.url, "ag-ui", "hello there", "thread-history")
        history = [user_message("ag-ui", "hello there"),
                   {"id": "a1", "role": "assistant", "content": first.text}, user_message("ag-ui", "and again")]
        second = Reply("ag-ui", post(http, gw.url + "/agui", request_body("ag-ui", history, "thread-history")))
    context = re.search(r"context=(\S+)", first.text)
    assert context is not None and "history=1" in first.text
    assert context[1] != "thread-history"  # the caller's own context upstream (see test_security.py)
    assert "echo: and again" in second.text and f"context={context[1]}" in second.text
    assert "history=2" in second.text  # the agent's own tally of the context: one user message per turn


def test_an_a2a_agents_tool_activity_reaches_the_client_as_tool_calls(agent: str) -> None:
    with gateway(agent, "a2a") as gw, httpx.Client(timeout=30) as http:
        reply = ask(http, gw.url, "ag-ui", "what is the weather in Paris?", "thread-weather")
    assert [e.name for e in reply.events if isinstance(e, ToolCallStart)] == ["get_weather"]
    assert [e.content for e in reply.events if isinstance(e, ToolResult)] == ["sunny, 21C in Paris"]
    assert reply.text == "Tool get_weather said: sunny, 21C in Paris."


def test_input_required_is_an_interrupt_and_the_answer_continues_the_same_task(agent: str) -> None:
    with gateway(agent, "a2a") as gw, httpx.Client(timeout=30) as http:
        asked = ask(http, gw.url, "ag-ui", "please interrupt", "thread-interrupt")
        interrupt = next(e for e in asked.events if isinstance(e, Interrupt))
        answer = request_body("ag-ui", [user_message("ag-ui", "please interrupt")], "thread-interrupt",
                              resume=[{"interruptId": interrupt.id, "status": "resolved", "payload": "yes"}])
        resumed = Reply("ag-ui", post(http, gw.url + "/agui", answer))
    assert interrupt.reason == "input_required" and interrupt.message == "Continue? (yes/no)"
    assert isinstance(asked.events[-1], RunFinished) and asked.events[-1].outcome == "interrupt"
    assert resumed.text == "Resumed with yes", resumed.events


def test_a_failed_task_is_the_clients_error(agent: str) -> None:
    with gateway(agent, "a2a") as gw, httpx.Client(timeout=30) as http:
        reply = ask(http, gw.url, "vercel", "this will fail", "chat-fail")
    assert "partial answer..." in reply.text
    assert reply.error is not None and reply.error.message == "scripted upstream failure"


def test_an_agent_that_does_not_stream_is_sent_SendMessage(peer: str) -> None:
    with gateway(peer + "/plain", "a2a") as gw, httpx.Client(timeout=30) as http:
        reply = ask(http, gw.url, "ag-ui", "hello plain", "thread-plain")
    assert "echo: hello plain" in reply.text and isinstance(reply.events[-1], RunFinished)


@pytest.mark.parametrize("variant", ["0.3", "rest"])
def test_a_configured_variant_calls_that_binding(peer: str, variant: str) -> None:
    with gateway(peer, "a2a", variant) as gw, httpx.Client(timeout=30) as http:
        reply = ask(http, gw.url, "ag-kit", f"hello {variant}", f"conv-{variant}")
    assert f"echo: hello {variant}" in reply.text and isinstance(reply.events[-1], RunFinished)


def test_a_client_that_leaves_cancels_the_a2a_task(agent: str) -> None:
    """An A2A task outlives its stream: the gateway sends CancelTask for the run it abandons."""
    with gateway(agent, "a2a") as gw:
        body = request_body("ag-ui", [user_message("ag-ui", "hang on")], "thread-leaves")
        with httpx.stream("POST", gw.url + "/agui", content=orjson.dumps(body), timeout=30,
                          headers={"content-type": "application/json"}) as response:
            for line in response.iter_lines():
                if "TEXT_MESSAGE_CONTENT" in line:
                    break  # the task is running: leave
        states: list[str] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and states != ["TASK_STATE_CANCELED"]:
            time.sleep(0.1)
            listed = httpx.get(agent + "/tasks", headers={"a2a-version": "1.0"}).json()  # HTTP+JSON's ListTasks
            states = [t["status"]["state"] for t in listed["tasks"] if _asked(t) == "hang on"]
    assert states == ["TASK_STATE_CANCELED"]


def test_a_crash_mid_stream_is_the_clients_error_on_every_binding(agent: str,
                                                                   request: pytest.FixtureRequest) -> None:
    """The SDK ends a crashed task's stream with an error: JSON-RPC's error, HTTP+JSON's `event: error` with an
    AIP-193 body, or the gRPC call's status, each as the SDK words it."""
    with gateway(agent, "a2a") as gw, httpx.Client(timeout=30) as http:
        reply = ask(http, gw.url, "vercel", "crash now", "chat-crash")
    assert "partial answer..." in reply.text
    assert reply.error is not None
    assert reply.error.message == {
        "jsonrpc": "scripted crash (A2A error -32603)",
        "http-json": "unknown exception (HTTP+JSON error 500 INTERNAL)",
        "grpc": "Unexpected <class 'RuntimeError'>: scripted crash (gRPC UNKNOWN)",
    }[request.node.callspec.params["agent"]], reply.error


def _asked(task: dict[str, Any]) -> str | None:
    """The text of a task's first message."""
    history = task.get("history") or [{}]
    parts = history[0].get("parts") or [{}]
    return parts[0].get("text")


# -- the gateway as an A2A agent


@pytest.fixture(scope="module", params=OTHERS)
def fronted(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """The gateway serving A2A in front of the built-in agent speaking another dialect, over JSON-RPC and gRPC: (its
    /a2a URL, dialect)."""
    dialect = request.param
    with Served(create_agent_app(dialect)) as agent, \
            gateway(agent.url + PATHS[dialect], dialect, grpc_port=free_port()) as gw:
        yield gw.url + "/a2a", dialect


@pytest.fixture(params=["jsonrpc", "http-json", "grpc"])
def binding(request: pytest.FixtureRequest) -> str:
    """The binding a2a-sdk's client calls the gateway on (the card lists all three)."""
    return str(request.param)


def responses_of(run: Any) -> list[dict[str, Any]]:
    assert run.error is None, run.error
    return list(run.responses)


def texts(responses: list[dict[str, Any]]) -> str:
    return "".join(part.get("text", "") for r in responses if "artifactUpdate" in r
                   for part in r["artifactUpdate"]["artifact"]["parts"])


def states(responses: list[dict[str, Any]]) -> list[str]:
    return [r["statusUpdate"]["status"]["state"] for r in responses if "statusUpdate" in r]


def test_a2a_sdks_client_finds_the_gateways_card_and_streams_a_task(fronted: tuple[str, str], binding: str) -> None:
    url, dialect = fronted
    run = run_a2a_client(url, "hello", context_id=f"ctx-{dialect}-{binding}", binding=binding)
    responses = responses_of(run)
    over_http = {"jsonrpc": url, "http-json": url + "/message:stream"}
    assert run.requests[-1]["url"] == over_http.get(binding, url + "/.well-known/agent-card.json")
    task = responses[0]["task"]
    assert task["contextId"] == f"ctx-{dialect}-{binding}" and task["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert states(responses) == ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    assert "You said: hello." in texts(responses)


def test_SendMessage_gets_the_finished_task_in_one_body(fronted: tuple[str, str], binding: str) -> None:
    url, dialect = fronted
    responses = responses_of(run_a2a_client(url, "hello", context_id=f"ctx-send-{dialect}-{binding}", stream=False,
                                            binding=binding))
    (only,) = responses
    task = only["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "You said: hello." in "".join(p["text"] for a in task["artifacts"] for p in a["parts"])


def test_an_interrupt_is_input_required_and_the_next_message_continues_the_task(fronted: tuple[str, str],
                                                                                binding: str) -> None:
    url, dialect = fronted
    if dialect == "agent-respond":
        pytest.skip("lossy by design: the eval platform has no human in the loop")
    if dialect == "vercel":
        pytest.skip("not built: a Vercel interrupt that is no tool call of the stream is answered on the call the "
                    "gateway never recorded, so a client without the history cannot answer it (ag-kit neither)")
    context = f"ctx-int-{dialect}-{binding}"
    asked = responses_of(run_a2a_client(url, "please interrupt", context_id=context, binding=binding))
    assert states(asked)[-1] == "TASK_STATE_INPUT_REQUIRED"
    task_id = asked[0]["task"]["id"]
    answered = responses_of(run_a2a_client(url, "yes", context_id=context, task_id=task_id, binding=binding))
    assert "statusUpdate" in answered[0] and answered[0]["statusUpdate"]["taskId"] == task_id
    assert states(answered)[-1] == "TASK_STATE_COMPLETED"
    assert "Resumed" in texts(answered) and '"yes"' in texts(answered)


def test_a2a_03_clients_are_answered_in_03(fronted: tuple[str, str]) -> None:
    url, dialect = fronted
    responses = responses_of(run_a2a_client(url, "hello", context_id=f"ctx-03-{dialect}", version="0.3"))
    assert states(responses)[-1] == "TASK_STATE_COMPLETED"  # the SDK reads 0.3 into its 1.0 objects
    assert run_a2a_client(url, "hello", version="0.3").requests[-1]["body"]["method"] == "message/stream"


@pytest.mark.parametrize("binding", ["jsonrpc", "http-json"])  # @a2a-js/sdk's gRPC transport is not installed
def test_the_js_client_streams_a_task_through_the_gateway(fronted: tuple[str, str], binding: str) -> None:
    url, dialect = fronted
    run = run_a2a_send(url + "/", "hello", context_id=f"ctx-js-{dialect}-{binding}", binding=binding)
    assert run["error"] is None, run["error"]
    assert run["requests"][-1]["url"].endswith("/a2a" if binding == "jsonrpc" else "/a2a/message:stream")
    assert states(run["responses"])[-1] == "TASK_STATE_COMPLETED"
    assert "You said: hello." in texts(run["responses"])


# -- errors an A2A client reads


def test_refusals_are_json_rpc_errors_carrying_the_request_id() -> None:
    with Served(create_agent_app("ag-ui")) as agent, gateway(agent.url + "/agui", "ag-ui") as gw, \
            httpx.Client(timeout=10) as http:
        missing = http.post(gw.url + "/a2a", json={"jsonrpc": "2.0", "id": "r-1", "method": "SendMessage",
                                                   "params": {"message": {"role": "ROLE_USER"}}}).json()
        unknown = http.post(gw.url + "/a2a", json={"jsonrpc": "2.0", "id": 7, "method": "Nope", "params": {}}).json()
        garbage = http.post(gw.url + "/a2a", content=b"{not json", headers={"content-type": "application/json"})
    assert missing["id"] == "r-1" and missing["error"]["code"] == -32602
    assert "params.message.messageId" in missing["error"]["message"]
    assert unknown["id"] == 7 and unknown["error"]["code"] == -32601
    assert garbage.status_code == 200 and garbage.json()["error"]["code"] == -32700


def test_an_unreachable_upstream_is_an_internal_error_the_sdk_raises(binding: str) -> None:
    with gateway("http://127.0.0.1:9/agui", "ag-ui", grpc_port=free_port()) as gw:
        run = run_a2a_client(gw.url + "/a2a", "hello", timeout=10, binding=binding)
    assert run.error is not None and "upstream unreachable" in run.error


def test_the_card_names_the_route_and_its_url() -> None:
    with gateway("http://127.0.0.1:9/agui", "ag-ui") as gw, httpx.Client(timeout=10) as http:
        card = http.get(gw.url + "/a2a/.well-known/agent-card.json").json()
        bare = http.get(gw.url + "/.well-known/agent-card.json").json()
    assert card == bare and card["name"] == "a2a-test" and card["capabilities"]["streaming"] is True
    assert [(i["protocolBinding"], i["protocolVersion"], i["url"]) for i in card["supportedInterfaces"]] == [
        ("JSONRPC", "1.0", gw.url + "/a2a"), ("HTTP+JSON", "1.0", gw.url + "/a2a"),
        ("JSONRPC", "0.3", gw.url + "/a2a")]  # the preferred first: an SDK client takes the first it speaks


def test_a_card_is_published_under_a2a_paths_only_and_the_startup_line_counts_routes() -> None:
    """A route on OpenAI's paths under a prefix of its own serves OpenAI's clients: no agent card under them. A
    route on two A2A paths is one route publishing two cards."""
    import logging

    from gateway.server.endpoints.documents import discovery_routes

    upstream = {"url": "http://127.0.0.1:9/agui", "dialect": "ag-ui"}
    openai_only = GatewayConfig.model_validate({"routes": [
        {"name": "team", "paths": ["/team/v1/chat/completions", "/team/v1/responses"], "upstream": upstream}]})
    assert discovery_routes(openai_only) == []
    two_paths = GatewayConfig.model_validate({"routes": [
        {"name": "agents", "paths": ["/one/a2a", "/two/a2a"], "upstream": upstream}]})
    said: list[logging.LogRecord] = []
    heard = logging.Handler(logging.INFO)
    heard.emit = said.append  # type: ignore[method-assign]
    log = logging.getLogger("agent_gateway.app")
    log.addHandler(heard)
    level = log.level
    log.setLevel(logging.INFO)
    try:
        published = [route.path for route in discovery_routes(two_paths)]
    finally:
        log.removeHandler(heard)
        log.setLevel(level)
    assert published == ["/one/a2a/.well-known/agent-card.json", "/two/a2a/.well-known/agent-card.json"]
    card = "/.well-known/agent-card.json"
    assert [record.getMessage() for record in said] == [f"route agents publishes {card} under 2 paths; none at {card} "
                                                        "itself"]


def test_a_run_error_mid_stream_is_a_failed_task(binding: str) -> None:
    with Served(create_agent_app("ag-ui")) as agent, gateway(agent.url + "/agui", "ag-ui", grpc_port=free_port()) as gw:
        responses = responses_of(run_a2a_client(gw.url + "/a2a", "please fail", binding=binding))
    assert states(responses)[-1] == "TASK_STATE_FAILED"
    failed = responses[-1]["statusUpdate"]["status"]["message"]["parts"][0]["text"]
    assert failed  # the upstream's reason, in the words the client shows


# -- GetTask and CancelTask


def test_GetTask_answers_a_finished_task_on_a_gateway_that_kept_it(fronted: tuple[str, str]) -> None:
    url, dialect = fronted
    streamed = responses_of(run_a2a_client(url, "hello", context_id=f"ctx-get-{dialect}"))
    task_id = streamed[0]["task"]["id"]
    rpc = {"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": task_id}}
    got = httpx.post(url, json=rpc, headers={"a2a-version": "1.0"}, timeout=10).json()
    cancel = httpx.post(url, json={**rpc, "method": "CancelTask"}, headers={"a2a-version": "1.0"}, timeout=10).json()
    missing = httpx.post(url, json={**rpc, "params": {"id": "task-nobody-made"}}, timeout=10).json()
    task = got["result"]
    assert got["id"] == 3 and task["id"] == task_id and task["contextId"] == f"ctx-get-{dialect}"
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "You said: hello." in "".join(p["text"] for a in task["artifacts"] for p in a["parts"])
    assert cancel["error"]["code"] == -32002  # a finished task cannot be cancelled
    assert missing["error"]["code"] == -32001


def test_CancelTask_ends_a_running_task_as_canceled_and_stops_the_upstream(binding: str) -> None:
    with Served(create_agent_app("ag-ui")) as agent, gateway(agent.url + "/agui", "ag-ui", grpc_port=free_port()) as gw:
        run = run_a2a_client(gw.url + "/a2a", "hang on", context_id="ctx-cancel", cancel_after=2, timeout=15,
                             binding=binding)
        deadline = time.monotonic() + 5
        while (disconnects := httpx.get(agent.url + "/_disconnects").json()) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
    responses = responses_of(run)
    cancelled = next(r["cancelTask"] for r in responses if "cancelTask" in r)
    assert cancelled["status"]["state"] == "TASK_STATE_CANCELED"
    assert states(responses)[-1] == "TASK_STATE_CANCELED"  # the stream itself ends so
    assert disconnects >= 1  # the upstream's run was cut, not left running


def test_a_browsers_client_reads_the_card_cross_origin_on_a_route_with_cors() -> None:
    route = Route(name="web", upstream=Upstream(url="http://127.0.0.1:9/agui", dialect="ag-ui"),
                  cors={"allow_origins": ["https://app.example"]})
    with Served(create_app(GatewayConfig(routes=[route], store=Store(url="memory://")))) as gw, \
            httpx.Client(timeout=10) as http:
        card = http.get(gw.url + "/a2a/.well-known/agent-card.json", headers={"origin": "https://app.example"})
        preflight = http.options(gw.url + "/a2a/.well-known/agent-card.json", headers={
            "origin": "https://app.example", "access-control-request-method": "GET"})
        other = http.get(gw.url + "/a2a/.well-known/agent-card.json", headers={"origin": "https://evil.example"})
        posted = http.post(gw.url + "/.well-known/agent-card.json", json={})
    assert card.status_code == 200 and card.headers["access-control-allow-origin"] == "https://app.example"
    assert preflight.status_code == 200 and "GET" in preflight.headers["access-control-allow-methods"]
    assert "access-control-allow-origin" not in other.headers
    assert posted.status_code == 405


# -- an A2A upstream whose stream breaks off


class DroppingAgent:
    """An A2A agent whose stream breaks off after "Hello ": `SubscribeToTask` then answers the task as it stands
    ("Hello wor") and the rest ("ld", completed); with `ended`, the task has ended by then: `SubscribeToTask` is
    refused and `GetTask` answers it whole. With `rest`, on HTTP+JSON: each call at its path, answered bare, the
    refusal an AIP-193 body."""

    REST_CALLS = {("POST", "/message:stream"): "SendStreamingMessage", ("POST", "/tasks/t-1:subscribe"):
                  "SubscribeToTask", ("GET", "/tasks/t-1"): "GetTask"}

    def __init__(self, ended: bool = False, rest: bool = False) -> None:
        self.ended, self.rest = ended, rest
        self.methods: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        rest_call = self.REST_CALLS.get((scope["method"], scope["path"])) if self.rest else None
        if scope["method"] == "GET" and rest_call is None:  # the card: none, so the configured URL is called
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = {"method": rest_call, "id": None} if self.rest else orjson.loads(body)
        self.methods.append(request["method"])
        rpc_id, task = request["id"], {"id": "t-1", "contextId": "c-1"}

        def frame(result: dict[str, Any]) -> dict[str, Any]:
            response = result if self.rest else {"jsonrpc": "2.0", "id": rpc_id, "result": result}
            return {"type": "http.response.body", "more_body": True,
                    "body": b"data: " + orjson.dumps(response) + b"\n\n"}

        def chunk(text: str, append: bool, last: bool) -> dict[str, Any]:
            return frame({"artifactUpdate": {"taskId": "t-1", "contextId": "c-1", "append": append, "lastChunk": last,
                                             "artifact": {"artifactId": "a-1", "parts": [{"text": text}]}}})

        done = {"state": "TASK_STATE_COMPLETED"}
        sse = [(b"content-type", b"text/event-stream")]
        if request["method"] == "SendStreamingMessage":
            await send({"type": "http.response.start", "status": 200, "headers": sse})
            await send(frame({"task": {**task, "status": {"state": "TASK_STATE_WORKING"}}}))
            await send(chunk("Hello ", False, False))
            return  # no end of the body: the connection breaks off
        if request["method"] == "SubscribeToTask" and not self.ended:
            await send({"type": "http.response.start", "status": 200, "headers": sse})
            await send(frame({"task": {**task, "status": {"state": "TASK_STATE_WORKING"},
                                       "artifacts": [{"artifactId": "a-1", "parts": [{"text": "Hello wor"}]}]}}))
            await send(chunk("ld", True, True))
            await send(frame({"statusUpdate": {"taskId": "t-1", "contextId": "c-1", "status": done}}))
            await send({"type": "http.response.body", "body": b""})
            return
        whole = {**task, "status": done, "artifacts": [{"artifactId": "a-1", "parts": [{"text": "Hello world"}]}]}
        status = 200
        if self.rest and request["method"] == "SubscribeToTask":
            status, answer = 400, {"error": {"code": 400, "status": "FAILED_PRECONDITION", "message": "task has ended",
                                             "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                                          "reason": "UNSUPPORTED_OPERATION"}]}}
        elif request["method"] == "SubscribeToTask":
            answer = {"jsonrpc": "2.0", "id": rpc_id, "error": {"code": -32004, "message": "task has ended"}}
        else:
            answer = whole if self.rest else {"jsonrpc": "2.0", "id": rpc_id, "result": whole}
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": orjson.dumps(answer)})


@pytest.mark.parametrize("rest", [False, True], ids=["jsonrpc", "http-json"])
@pytest.mark.parametrize("ended", [False, True], ids=["subscribed", "read-whole"])
def test_a_stream_that_breaks_off_mid_task_is_reattached_before_it_is_an_error(ended: bool, rest: bool) -> None:
    agent = DroppingAgent(ended, rest)
    with Served(agent) as upstream, gateway(upstream.url + "/", "a2a", "rest" if rest else None) as gw, \
            httpx.Client(timeout=30) as http:
        reply = ask(http, gw.url, "ag-ui", "hello", f"drop-{ended}")
    assert reply.error is None and isinstance(reply.events[-1], RunFinished), reply.events
    assert reply.text == "Hello world"  # what came before the break, then only the rest
    assert agent.methods == ["SendStreamingMessage", "SubscribeToTask", *(["GetTask"] if ended else [])]
