"""The gateway end to end over real HTTP on 127.0.0.1: every client dialect in front of every upstream dialect.

The upstreams are the built-in scripted agent (`gateway.agent.server`), one server per dialect; the gateway serves one
route per (client, upstream) pair at `/<client>/to/<upstream>`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from e2e import (
    DIALECTS,
    Reply,
    no_gateway_side_violation,
    post,
    request_body,
    user_message,
    watch_offers,
)
from servers import Served

from adapters import registry
from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.server.app import Gateway, create_app
from gateway.server.stream import client as client_module
from gateway.upstream.http1 import Offer

PAIRS = [(c, u) for c in DIALECTS for u in DIALECTS]
WEATHER_TOOL = {"name": "get_location", "description": "Where the user is",
                "parameters": {"type": "object", "properties": {"precision": {"type": "string"}},
                               "required": ["precision"]}}


class World:
    def __init__(self, agents: dict[str, Served], gateway: Served, app: Gateway) -> None:
        self.agents = agents
        self.gateway = gateway
        self.app = app
        self.http = httpx.Client(timeout=30)

    def url(self, client: str, upstream: str) -> str:
        return f"{self.gateway.url}/{client}/to/{upstream}"

    def ask(self, client: str, upstream: str, text: str, conversation: str = "conv-1",
            history: list[dict[str, Any]] | None = None, **extra: Any) -> Reply:
        messages = [*(history or []), user_message(client, text)]
        body = request_body(client, messages, conversation, **extra)
        return Reply(client, post(self.http, self.url(client, upstream), body))

    def upstream_requests(self, dialect: str) -> list[dict[str, Any]]:
        return list(self.http.get(f"{self.agents[dialect].url}/_requests").json())

    def clear(self) -> None:
        for agent in self.agents.values():
            self.http.delete(f"{agent.url}/_requests")


def gateway_config(agents: dict[str, Served], **timeouts: float) -> GatewayConfig:
    routes = []
    for client, upstream in PAIRS:
        path = agents[upstream].url + _agent_path(upstream)
        routes.append({"name": f"{client}-{upstream}", "paths": [f"/{client}/to/{upstream}"],
                       "client_dialects": [client], "upstream": {"url": path, "dialect": upstream},
                       "timeouts": {"connect": 2, "first_event": 5, "idle": 5, "total": 30, **timeouts},
                       "judge": {"sample": 1}})  # every run judged: see gateway_side_judged
    return GatewayConfig.model_validate({"routes": routes, "keepalive_seconds": 0.5})


def _agent_path(dialect: str) -> str:
    return registry.get(dialect).paths[0]


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    agents = {d: Served(create_agent_app(d)) for d in DIALECTS}
    for agent in agents.values():
        agent.__enter__()
    try:
        app = create_app(gateway_config(agents), store=MemoryStore())
        with Served(app) as gateway:
            world = World(agents, gateway, app)
            yield world
            world.http.close()
    finally:
        for agent in agents.values():
            agent.__exit__(None, None, None)


@pytest.fixture(autouse=True)
def gateway_side_judged(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every run of the pairs' routes is judged (`judge: {sample: 1}`): after each test that uses them, what the
    gateway wrote its clients broke no rule of their dialects."""
    if "world" not in request.fixturenames:
        yield
        return
    world: World = request.getfixturevalue("world")
    with no_gateway_side_violation(world.http, world.gateway.url, world.app):
        yield


@pytest.mark.parametrize(("client", "upstream"), PAIRS)
def test_basic_chat_crosses_every_pair(world: World, client: str, upstream: str) -> None:
    reply = world.ask(client, upstream, "hello there", conversation=f"chat-{client}-{upstream}")
    assert reply.response.status_code == 200
    assert "You said: hello there" in reply.text
    assert reply.finished is not None


@pytest.mark.parametrize(("client", "upstream"), PAIRS)
def test_server_tool_call_and_result_cross_every_pair(world: World, client: str, upstream: str) -> None:
    reply = world.ask(client, upstream, "what is the weather in Paris", conversation=f"wx-{client}-{upstream}")
    if all("server_tools" in registry.get(d).carries for d in (client, upstream)):
        assert reply.tool_calls == ["get_weather"]
        assert reply.results == ["sunny, 21C in Paris"]
    else:  # a dialect with no place for a tool the agent ran (counted as dropped): its words still come
        assert reply.tool_calls == [] and reply.results == []
    assert "It is sunny, 21C in Paris." in reply.text


@pytest.mark.parametrize("dialect", DIALECTS)
def test_same_dialect_route_passes_content_through_unchanged(world: World, dialect: str) -> None:
    body = request_body(dialect, [user_message(dialect, "what is the weather in Rome")], f"same-{dialect}")
    via_gateway = Reply(dialect, post(world.http, world.url(dialect, dialect), body))
    direct = Reply(dialect, post(world.http, world.agents[dialect].url + _agent_path(dialect), body))
    assert (via_gateway.text, via_gateway.tool_calls, via_gateway.results) == (
        direct.text, direct.tool_calls, direct.results)


# -- AG-UI frontend in front of an AG-Kit backend


def test_ag_ui_client_tool_round_trip_reaches_ag_kit_as_a_delta(world: World) -> None:
    world.clear()
    first = user_message("ag-ui", "use the tool please")
    reply = world.ask("ag-ui", "ag-kit", "use the tool please", "tool-trip", tools=[WEATHER_TOOL])
    reply_events = reply.events
    call = next(e for e in reply_events if type(e).__name__ == "ToolCallStart")
    assert call.name == "get_location"  # type: ignore[union-attr]
    assert reply.finished is not None
    # The AG-UI client sends its whole history back with the tool's result.
    assistant = {"id": "a1", "role": "assistant", "content": "", "toolCalls": [
        {"id": call.tool_call_id, "type": "function",  # type: ignore[union-attr]
         "function": {"name": "get_location", "arguments": "{\"precision\":\"demo\"}"}}]}
    tool = {"id": "t1", "role": "tool", "toolCallId": call.tool_call_id, "content": "Berlin"}  # type: ignore[union-attr]
    body = request_body("ag-ui", [first, assistant, tool], "tool-trip", tools=[WEATHER_TOOL])
    second = Reply("ag-ui", post(world.http, world.url("ag-ui", "ag-kit"), body))
    assert "The tool said: Berlin." in second.text
    upstream = world.upstream_requests("ag-kit")
    assert upstream[-1]["body"]["messages"] == [{"role": "tool", "content": "Berlin",
                                                 "toolCallId": call.tool_call_id}]  # type: ignore[union-attr]
    assert upstream[-1]["body"]["conversationId"] == upstream[-2]["body"]["conversationId"]


def test_ag_ui_interrupt_then_resume_through_ag_kit(world: World) -> None:
    reply = world.ask("ag-ui", "ag-kit", "please interrupt", "hitl")
    assert reply.finished is not None and reply.finished.outcome == "interrupt"
    interrupt = next(e for e in reply.events if type(e).__name__ == "Interrupt")
    body = request_body("ag-ui", [user_message("ag-ui", "please interrupt")], "hitl",
                        resume=[{"interruptId": interrupt.id, "status": "resolved",  # type: ignore[union-attr]
                                 "payload": {"choice": "yes"}}])
    resumed = Reply("ag-ui", post(world.http, world.url("ag-ui", "ag-kit"), body))
    assert f"Resumed {interrupt.id}" in resumed.text  # type: ignore[union-attr]
    sent = world.upstream_requests("ag-kit")[-1]["body"]
    assert sent["resume"]["interruptId"] == interrupt.id  # type: ignore[union-attr]
    assert "messages" not in sent  # the user message was sent with the first run already


def test_conversation_turns_accumulate_on_the_ag_kit_side(world: World) -> None:
    history: list[dict[str, Any]] = []
    for turn, text in enumerate(["one", "two", "three"], start=1):
        reply = world.ask("ag-ui", "ag-kit", text, "counting", history=history)
        assert f"(turn {turn})" in reply.text
        history += [user_message("ag-ui", text), {"id": f"a{turn}", "role": "assistant", "content": reply.text}]


# -- a Vercel agent behind the eval contract


def test_eval_platform_gets_assistant_tool_assistant_from_a_vercel_agent(world: World) -> None:
    reply = world.ask("agent-respond", "vercel", "weather in Paris?", "tc-weather")
    body = reply.response.json()
    assert [m["role"] for m in body["messages"]] == ["assistant", "tool", "assistant"]
    assert body["messages"][0]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert body["messages"][1] == {"role": "tool", "content": "sunny, 21C in Paris",
                                   "tool_call_id": body["messages"][0]["tool_calls"][0]["id"], "name": "get_weather"}


@pytest.mark.parametrize("upstream", ["vercel", "ag-kit"])
def test_three_turn_eval_reaches_the_upstream_as_one_conversation(world: World, upstream: str) -> None:
    world.clear()
    messages: list[dict[str, Any]] = []
    for turn, text in enumerate(["hi", "and then", "bye"], start=1):
        messages.append({"role": "user", "content": text, "tool_calls": None, "tool_call_id": None, "name": None})
        body = {"messages": messages, "metadata": {"test_case_id": f"tc-3turn-{upstream}", "turn_index": 2 * turn - 2}}
        response = post(world.http, world.url("agent-respond", upstream), body)
        assert response.status_code == 200
        reply = response.json()["messages"]
        assert f"(turn {turn})" in reply[-1]["content"]
        messages += [{**m, "tool_calls": m.get("tool_calls"), "tool_call_id": None, "name": None} for m in reply]
    ids = {r["body"].get("id") or r["body"].get("conversationId") for r in world.upstream_requests(upstream)}
    assert len(ids) == 1


# -- faults


def test_upstream_failure_mid_run_is_an_in_band_error_in_each_dialect(world: World) -> None:
    for client in DIALECTS:
        reply = world.ask(client, "ag-ui", "please fail", f"fail-{client}")
        assert reply.error is not None and "scripted failure" in reply.error.message
        if client == "agent-respond":
            assert reply.response.status_code == 502


@pytest.mark.parametrize("client", DIALECTS)
def test_refused_upstream_is_a_502_and_the_gateway_keeps_serving(client: str) -> None:
    with Served(create_app(_single_route(client, "http://127.0.0.1:9/agui"), store=MemoryStore())) as gateway, \
            httpx.Client(timeout=10) as http:
        body = request_body(client, [user_message(client, "hi")])
        response = post(http, f"{gateway.url}/in", body)
        reply = Reply(client, response)
        # A2A: a JSON-RPC error; MCP: a tool result with isError (the agent failed, not the call)
        assert response.status_code == (200 if client in ("a2a", "mcp") else 502)
        assert reply.error is not None and reply.error.code == "upstream_error"
        assert http.get(f"{gateway.url}/healthz").status_code == 200


def test_upstream_http_500_is_a_502_with_its_body_when_errors_are_debugged() -> None:
    async def broken(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 500, "headers": [(b"content-type", b"text/html")]})
        await send({"type": "http.response.body", "body": b"<html>boom</html>"})

    with Served(broken) as upstream:
        config = _single_route("ag-ui", upstream.url)
        config.debug_errors = True
        with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=10) as http:
            response = post(http, f"{gateway.url}/in", request_body("ag-ui", [user_message("ag-ui", "hi")]))
    assert response.status_code == 502
    assert response.json()["error"]["details"] == [{"status": 500, "body": "<html>boom</html>"}]


@pytest.mark.parametrize("client", DIALECTS)
def test_silent_upstream_times_out_within_the_first_event_timeout(world: World, client: str) -> None:
    started = time.monotonic()
    config = _single_route(client, world.agents["ag-ui"].url + "/agui", first_event=0.5)
    with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=10) as http:
        reply = Reply(client, post(http, f"{gateway.url}/in", request_body(client, [user_message(client, "silent")])))
        assert reply.error is not None and reply.error.code == "upstream_timeout"
    assert time.monotonic() - started < 4


def test_upstream_cut_mid_stream_is_an_error_not_a_success() -> None:
    async def cut(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "more_body": True,
                    "body": b'data: {"type":"text","content":"partial"}\n\n'})
        raise RuntimeError("upstream process died")

    with Served(cut) as upstream, Served(create_app(_single_route("ag-ui", upstream.url, dialect="ag-kit"),
                                                    store=MemoryStore())) as gateway, httpx.Client(timeout=10) as http:
        reply = Reply("ag-ui", post(http, f"{gateway.url}/in", request_body("ag-ui", [user_message("ag-ui", "hi")])))
        assert reply.text == "partial"
        assert reply.error is not None


def test_client_that_disconnects_cancels_the_upstream_within_a_second(world: World) -> None:
    before = world.http.get(f"{world.agents['ag-kit'].url}/_disconnects").json()
    body = request_body("ag-ui", [user_message("ag-ui", "hang")], "gone")
    with world.http.stream("POST", world.url("ag-ui", "ag-kit"), content=orjson.dumps(body),
                           headers={"content-type": "application/json"}) as response:
        next(response.iter_raw())
    deadline = time.monotonic() + 1.0
    while world.http.get(f"{world.agents['ag-kit'].url}/_disconnects").json() == before:
        assert time.monotonic() < deadline, "the upstream never saw the client go"
        time.sleep(0.02)


def test_idle_stream_gets_keep_alive_comments(world: World) -> None:
    body = request_body("vercel", [user_message("vercel", "slow")], "keepalive")
    config = _single_route("vercel", world.agents["ag-ui"].url + "/agui")
    config.keepalive_seconds = 0.02
    with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=10) as http:
        response = post(http, f"{gateway.url}/in", body)
    assert response.headers["x-accel-buffering"] == "no" and response.headers["cache-control"] == "no-cache"
    assert b": ping\n\n" in response.content
    assert Reply("vercel", response).finished is not None


@pytest.mark.parametrize(("content_type", "body", "status"), [
    ("text/plain", b"{}", 415),
    ("application/json", b"{nope", 400),
    ("application/json", b'{"threadId": 1}', 422),
])
def test_bad_requests_get_a_status_and_a_json_error(world: World, content_type: str, body: bytes,
                                                     status: int) -> None:
    response = world.http.post(world.url("ag-ui", "ag-kit"), content=body, headers={"content-type": content_type})
    assert response.status_code == status
    assert response.json()["error"]["message"]


def _single_route(client: str, url: str, dialect: str = "ag-ui", **timeouts: float) -> GatewayConfig:
    return GatewayConfig.model_validate({"routes": [{
        "paths": ["/in"], "client_dialects": [client], "upstream": {"url": url, "dialect": dialect},
        "timeouts": {"connect": 1, "first_event": 5, "idle": 5, "total": 20, **timeouts}}]})


def test_ag_ui_state_goes_back_to_an_ag_ui_upstream_for_a_client_that_has_none(world: World) -> None:
    world.clear()
    world.ask("ag-kit", "ag-ui", "show me the state", "stateful")
    world.ask("ag-kit", "ag-ui", "thanks", "stateful")
    requests = world.upstream_requests("ag-ui")
    assert requests[-1]["body"]["state"] == {"count": 1}
    assert [m["content"] for m in requests[-1]["body"]["messages"] if m["role"] == "user"] == [
        "show me the state", "thanks"]  # the delta client's history, filled in


def test_only_listed_headers_cross_and_upstream_credentials_come_from_config(world: World) -> None:
    config = GatewayConfig.model_validate({"routes": [{
        "paths": ["/in"], "client_dialects": ["ag-ui"], "forward_headers": ["x-user-id"],
        "upstream": {"url": world.agents["ag-kit"].url + "/send-message", "dialect": "ag-kit",
                     "headers": {"authorization": "Bearer upstream-secret"}}}]})
    world.clear()
    with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=10) as http:
        response = http.post(f"{gateway.url}/in", content=orjson.dumps(request_body("ag-ui", [
            user_message("ag-ui", "hi")])), headers={"content-type": "application/json", "x-user-id": "u7",
                                                      "authorization": "Bearer client-secret", "cookie": "s=1",
                                                      "x-other": "no", "x-request-id": "req-42"})
    assert response.headers["x-request-id"] == "req-42"
    headers = world.upstream_requests("ag-kit")[-1]["headers"]
    assert headers["x-user-id"] == "u7" and headers["x-request-id"] == "req-42"
    assert headers["authorization"] == "Bearer upstream-secret"
    assert "cookie" not in headers and "x-other" not in headers


def test_request_body_over_the_limit_is_a_413_before_any_upstream_call(world: World) -> None:
    config = _single_route("ag-ui", world.agents["ag-kit"].url + "/send-message", dialect="ag-kit")
    config.routes[0].limits.max_body_bytes = 100
    world.clear()
    with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=10) as http:
        response = post(http, f"{gateway.url}/in", request_body("ag-ui", [user_message("ag-ui", "x" * 200)]))
    assert response.status_code == 413 and response.json()["error"]["code"] == "request_too_large"
    assert world.upstream_requests("ag-kit") == []


def test_upstream_event_over_the_limit_is_an_error_in_band() -> None:
    async def huge(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b'data: {"type":"text","content":"' + b"x" * 5000})
    config = _single_route("vercel", "http://127.0.0.1:9/", dialect="ag-kit")
    config.routes[0].limits.max_event_bytes = 1000
    with Served(huge) as upstream, httpx.Client(timeout=10) as http:
        config.routes[0].upstream.url = upstream.url
        with Served(create_app(config, store=MemoryStore())) as gateway:
            body = request_body("vercel", [user_message("vercel", "x")])
            reply = Reply("vercel", post(http, f"{gateway.url}/in", body))
    assert reply.error is not None and "oversized" in reply.error.message


@pytest.mark.parametrize(("client", "timeouts", "said"), [
    ("ag-ui", {"idle": 0.5}, "upstream sent nothing for 0.5s"),
    ("vercel", {"total": 0.7}, "the run took longer than 0.7s"),
    ("agent-respond", {"idle": 0.5}, "upstream sent nothing for 0.5s"),
])
def test_upstream_that_goes_quiet_mid_run_is_cut_at_the_timeout(world: World, client: str,
                                                                 timeouts: dict[str, float], said: str) -> None:
    config = _single_route(client, world.agents["ag-kit"].url + "/send-message", dialect="ag-kit", **timeouts)
    with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=10) as http:
        started = time.monotonic()
        reply = Reply(client, post(http, f"{gateway.url}/in", request_body(client, [user_message(client, "hang")])))
        took = time.monotonic() - started
    assert reply.error is not None and reply.error.message == said
    assert took < 3, f"cut after {took:.1f}s: the agent goes quiet for an hour, the deadline is under a second"


def test_a_bug_of_ours_ends_the_reply_and_the_gateway_keeps_serving(world: World,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.conversations.recorder import RunRecorder
    from gateway.server.request import call

    class Broken:
        """A recorder whose `record` fails. Put in by name: compiled (scripts/compile), `RunRecorder`'s methods
        cannot be replaced, nor the class subclassed in Python."""

        def __init__(self, *args: Any) -> None:
            self.recorder = RunRecorder(*args)

        def record(self, events: list[Any]) -> None:
            raise RuntimeError("a bug")

        def __getattr__(self, name: str) -> Any:
            return getattr(self.recorder, name)

    monkeypatch.setattr(call, "RunRecorder", Broken)
    response = post(world.http, world.url("agent-respond", "ag-ui"), request_body("agent-respond", [
        user_message("agent-respond", "hi")]))
    assert response.status_code == 500 and response.json()["error"]["code"] == "gateway_error"
    streamed = Reply("ag-ui", post(world.http, world.url("ag-ui", "ag-ui"), request_body("ag-ui", [
        user_message("ag-ui", "hi")])))
    assert streamed.error is not None and streamed.error.code == "gateway_error"  # ended in-band, not left hanging
    monkeypatch.undo()
    assert "You said: hi" in world.ask("ag-ui", "ag-ui", "hi", "after-bug").text


def test_a_bug_of_ours_mid_stream_ends_the_reply_in_band(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Raised where a paced event is translated in the upstream connection's callback, it reaches the run's task
    and ends the reply as a bug before the first event does."""
    from gateway.conversations.recorder import RunRecorder
    from gateway.server.request import call

    class BrokenLater:
        """A recorder whose `record` fails from its sixth call on (by name, as above)."""

        def __init__(self, *args: Any) -> None:
            self.recorder, self.calls = RunRecorder(*args), 0

        def record(self, events: list[Any]) -> None:
            self.calls += 1
            if self.calls > 5:
                raise RuntimeError("a bug")
            self.recorder.record(events)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.recorder, name)

    monkeypatch.setattr(call, "RunRecorder", BrokenLater)
    offers = watch_offers(monkeypatch)
    streamed = Reply("ag-ui", post(world.http, world.url("ag-ui", "ag-kit"), request_body("ag-ui", [
        user_message("ag-ui", "slow please")])))
    # on the direct path
    assert any(took is Offer.TAKEN_AND_WAKE and isinstance(handed, RuntimeError) for took, handed in offers)
    assert streamed.text.startswith("tick 1. ") and "tick 20." not in streamed.text
    assert streamed.error is not None and streamed.error.code == "gateway_error"
    monkeypatch.undo()
    assert "You said: hi" in world.ask("ag-ui", "ag-kit", "hi", "after-mid-stream-bug").text


@pytest.mark.parametrize("client", ["ag-ui", "ag-kit", "vercel"])
def test_events_reach_the_client_as_the_upstream_sends_them(world: World, client: str) -> None:
    """No buffering: the paced upstream's 20 deltas arrive in many reads, not in one at the end."""
    body = request_body(client, [user_message(client, "slow please")], f"stream-{client}")
    reads = 0
    with world.http.stream("POST", world.url(client, "vercel"), content=orjson.dumps(body),
                           headers={"content-type": "application/json"}) as response:
        for chunk in response.iter_raw():
            reads += b"tick" in chunk
    assert reads >= 5


@pytest.mark.parametrize("client", ["ag-ui", "vercel"])
def test_a_paced_stream_is_written_from_the_upstreams_callback_and_reads_the_same(
        world: World, client: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Most reads of a paced stream are translated and written without waking the run's task (`Relay._offered`),
    and the client reads what it reads when every piece goes through the task."""
    offers = watch_offers(monkeypatch)
    direct = world.ask(client, "ag-kit", "slow please", f"direct-{client}")
    assert sum(took is Offer.TAKEN for took, _ in offers) >= 10
    offers.clear()
    monkeypatch.setattr(client_module, "direct_body", lambda send: None)
    through_the_task = world.ask(client, "ag-kit", "slow please", f"task-{client}")
    assert not offers  # without direct writes nothing is offered
    assert direct.text == through_the_task.text == "".join(f"tick {i}. " for i in range(1, 21))
    assert [type(e) for e in direct.events] == [type(e) for e in through_the_task.events]
