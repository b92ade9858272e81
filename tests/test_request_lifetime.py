"""A request's objects are freed as it ends, by their reference counts: one left in a reference cycle waits, with
every event the run held, for the cycle collector, whose passes over them cost a busy gateway a tenth of its CPU
and pause every stream while they run. And while it runs, a request holds no more than its run needs."""

from __future__ import annotations

import asyncio
import gc
import time
import types
import weakref
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from client_bodies import request_body, user_message
from e2e import post
from servers import Served

from adapters import registry
from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.core.turn import Message, Turn
from gateway.server.app import create_app
from gateway.server.request import call as call_module
from gateway.server.request import reading as reading_module

CLIENTS = {"ag-ui": "/agui", "vercel": "/api/chat", "a2a": "/a2a", "openai-chat": "/v1/chat/completions",
           "openai-responses": "/v1/responses", "agent-respond": "/agent/respond", "langgraph": "/langgraph",
           "mcp": "/mcp"}


def _named(path: str) -> str:
    """A route's name from its path: what a client that names its agent (an MCP tool, an OpenAI model) calls."""
    return path.strip("/").replace("/", "_").replace("-", "_")


@pytest.fixture(scope="module")
def agents() -> Iterator[dict[str, Served]]:
    with Served(create_agent_app("ag-ui")) as ag_ui, Served(create_agent_app("ag-kit")) as ag_kit:
        yield {"ag-ui": ag_ui, "ag-kit": ag_kit}


@pytest.fixture(scope="module")
def gateway(agents: dict[str, Served]) -> Iterator[Served]:
    """Routes for every kind of client in front of an AG-Kit agent; a resumable one, whose reply is kept for a
    client that comes back; and one with a fallback, whose run is committed to its upstream as its first event goes
    out."""
    ag_ui = {"url": agents["ag-ui"].url + "/agui", "dialect": "ag-ui"}
    ag_kit = {"url": agents["ag-kit"].url + "/send-message", "dialect": "ag-kit"}
    routes: list[dict[str, Any]] = [
        {"name": _named(path), "paths": [path], "client_dialects": [client], "upstream": ag_kit}
        for client, path in CLIENTS.items()]
    routes.append({"name": "resumable", "paths": ["/resumable"], "client_dialects": ["ag-ui"], "upstream": ag_kit,
                   "resumable": True})
    routes.append({"name": "fallback", "paths": ["/fallback"], "client_dialects": ["ag-ui"], "upstream": ag_ui,
                   "fallbacks": [{**ag_kit, "name": "kit"}]})
    config = GatewayConfig.model_validate({"routes": routes})
    with Served(create_app(config, store=MemoryStore())) as served:
        yield served


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[weakref.ref[Any]]]:
    """A weak reference to every `Call` made, with the cycle collector off: a call in a cycle then stays alive."""
    made: list[weakref.ref[Any]] = []
    original = call_module.Call.__init__

    def noted(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        made.append(weakref.ref(self))

    monkeypatch.setattr(call_module.Call, "__init__", noted)
    gc.collect()
    gc.disable()
    try:
        yield made
    finally:
        gc.enable()


def _freed(calls: list[weakref.ref[Any]], seconds: float = 5.0) -> bool:
    """Whether every call was freed within `seconds` (its task ends a moment after the client's last byte)."""
    deadline = time.monotonic() + seconds
    while any(ref() is not None for ref in calls):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.parametrize(("client", "path"), [*CLIENTS.items(), ("ag-ui", "/resumable"), ("ag-ui", "/fallback")])
def test_a_finished_request_is_freed_without_the_cycle_collector(gateway: Served, calls: list[weakref.ref[Any]],
                                                                 client: str, path: str) -> None:
    with httpx.Client(timeout=10) as http:
        for turn in range(3):
            messages = [user_message(client, f"hi {turn}")]
            agent = _named(path)
            request = registry.get(client).build_request(
                Turn(conversation_id=f"conv-{path}-{turn}", agent=agent, messages=[Message("user", f"hi {turn}")]),
                None)
            body = request_body(client, messages, conversation=f"conv-{path}-{turn}", agent=agent)
            reply = post(http, gateway.url + path + (request.path or ""), body,
                         {"accept": "application/json, text/event-stream"})
            assert reply.status_code == 200, reply.text
    assert len(calls) == 3
    assert _freed(calls), "a finished request's Call is held in a reference cycle"


def test_a_run_does_not_keep_the_body_it_sent_its_upstream(gateway: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that sends its whole history each turn makes a large upstream request: once the reply's decoder has
    read it, it is let go, not held for as long as the reply streams."""
    sent: list[tuple[int, Any]] = []
    original = call_module._reply_decoder

    def noted(upstream: Any, outbound: Any, *args: Any) -> Any:
        sent.append((len(outbound.body), outbound))
        return original(upstream, outbound, *args)

    monkeypatch.setattr(call_module, "_reply_decoder", noted)
    history = [user_message("ag-ui", "words " * 2000)]
    with httpx.Client(timeout=10) as http:
        reply = post(http, gateway.url + "/agui", request_body("ag-ui", history, conversation="long-history"))
    assert reply.status_code == 200, reply.text
    [(size, outbound)] = sent
    assert size > 12_000 and outbound.body == b""


@pytest.mark.parametrize("path", ["/agui", "/resumable"])
def test_a_run_does_not_keep_its_clients_body(gateway: Served, monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """Once the body is read into the turn, no coroutine of the request holds the client's bytes while it runs."""
    bodies: list[bytes] = []
    read = reading_module.RequestReader.body

    async def reading(self: Any, receive: Any) -> bytes:
        body = await read(self, receive)
        bodies.append(body)
        return body

    monkeypatch.setattr(reading_module.RequestReader, "body", reading)
    body = orjson.dumps(request_body("ag-ui", [user_message("ag-ui", "slow please " + "words " * 2000)],
                                     conversation=f"long-{path}"))
    with httpx.Client(timeout=10) as http, http.stream("POST", gateway.url + path, content=body,
                                                        headers={"content-type": "application/json"}) as reply:
        assert reply.status_code == 200
        chunks = reply.iter_raw()
        next(chunks)  # the run is under way: its request's coroutines wait for the upstream
        holders = [r for r in gc.get_referrers(bodies[0]) if isinstance(r, types.CoroutineType)]
        assert b"RUN_FINISHED" in b"".join(chunks)
    assert len(bodies) == 1 and not holders, [h.__qualname__ for h in holders]


def test_an_open_stream_suspends_no_frame_above_its_route(gateway: Served) -> None:
    """Every frame a request's task keeps suspended is kept for as long as its stream is open: the app and the
    forwarded headers hand the server the route's coroutine, and the route awaits its run where it read the
    request, not from a frame that did."""
    body = orjson.dumps(request_body("ag-ui", [user_message("ag-ui", "slow please")], conversation="frames"))
    with httpx.Client(timeout=10) as http, http.stream("POST", gateway.url + "/agui", content=body,
                                                        headers={"content-type": "application/json"}) as reply:
        assert reply.status_code == 200
        chunks = reply.iter_raw()
        next(chunks)
        chains: list[list[str]] = []
        for task in [o for o in gc.get_objects() if isinstance(o, asyncio.Task)]:
            chain: list[str] = []
            coroutine: Any = task.get_coro()
            while coroutine is not None:
                chain.append(getattr(coroutine, "__qualname__", type(coroutine).__name__))
                coroutine = getattr(coroutine, "cr_await", None)
            chains.append(chain)
        assert b"RUN_FINISHED" in b"".join(chunks)
    [chain] = [chain for chain in chains if "RouteHandler.admitted" in chain]
    assert chain[:3] == ["RequestResponseCycle.run_asgi", "RouteHandler.serve", "RouteHandler.admitted"], chain
