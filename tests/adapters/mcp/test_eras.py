"""The era an MCP upstream speaks, remembered by its URL: a real MCPServer (`mcp` 2.3.0, `tests/peers/mcp_server.py`)
behind a pass-through proxy that records each request's JSON-RPC method and can put the server's other face behind
the same URL (the 2025-only server under `/legacy`, as a server downgraded; or one that refuses `initialize` as
2026-07-28 removed it, as a server upgraded). A new conversation's session asks `server/discover` only while the
era is unknown or after the server answered that it changed.
Install first: `.venv/bin/python tests/peers_env.py`.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import orjson
import pytest
from e2e import Reply, post, request_body, user_message
from peers_env import mcp_upstream
from servers import Served
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from adapters.mcp.eras import KNOWN, MAX_KNOWN, KnownEras
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app

DUAL, LEGACY, MODERN_ONLY = "dual", "legacy", "modern-only"


class Recording:
    """Forwards each POST to the server's face chosen by `face`, noting its method."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.face = DUAL
        self.methods: list[str] = []

    def app(self) -> Starlette:
        async def forward(request: Request) -> Response:
            body = await request.body()
            method = orjson.loads(body).get("method") or "response"
            self.methods.append(method)
            if self.face == MODERN_ONLY and method == "initialize":  # as mcp 2.3.0 answers it in 2026-07-28
                return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {
                    "code": -32601, "message": "Method not found", "data": "initialize"}}, status_code=404)
            path = "/legacy/mcp" if self.face == LEGACY else "/mcp"
            headers = {k: v for k, v in request.headers.items() if k not in ("host", "content-length")}
            async with httpx.AsyncClient(timeout=30) as http:
                answered = await http.post(f"{self.server}{path}", content=body, headers=headers)
            kept = {k: v for k, v in answered.headers.items()
                    if k in ("content-type", "mcp-session-id", "mcp-protocol-version")}
            return Response(answered.content, answered.status_code, kept)

        return Starlette(routes=[Route("/mcp", forward, methods=["POST"])])


class World:
    def __init__(self, recording: Recording, gateway: str) -> None:
        self.recording = recording
        self.gateway = gateway
        self.http = httpx.Client(timeout=30)

    def opens(self, conversation: str) -> list[str]:
        """The methods the gateway sent the server for a new conversation's one turn."""
        self.recording.methods.clear()
        body = request_body("ag-ui", [user_message("ag-ui", "hi")], conversation)
        reply = Reply("ag-ui", post(self.http, f"{self.gateway}/oneshot/in", body))
        assert reply.response.status_code == 200, reply.response.text
        assert reply.text == "heard: hi"
        return list(self.recording.methods)


@pytest.fixture
def world() -> Iterator[World]:
    with mcp_upstream() as server:
        recording = Recording(server)
        with Served(recording.app()) as proxy:
            routes = [{"name": "oneshot", "paths": ["/oneshot/in"], "client_dialects": ["ag-ui"],
                       "upstream": {"url": f"{proxy.url}/mcp", "dialect": "mcp", "agent": "oneshot"}}]
            config = GatewayConfig.model_validate({"routes": routes})
            KNOWN.forget(f"{proxy.url}/mcp")
            with Served(create_app(config, store=MemoryStore())) as gateway:
                world = World(recording, gateway.url)
                yield world
                world.http.close()


def test_a_second_conversation_with_a_2026_server_does_not_ask_its_era_again(world: World) -> None:
    assert world.opens("c1") == ["server/discover", "tools/list", "tools/call"]
    assert world.opens("c2") == ["tools/list", "tools/call"]


def test_a_second_conversation_with_a_2025_server_does_not_ask_its_era_again(world: World) -> None:
    world.recording.face = LEGACY
    assert world.opens("c1") == ["server/discover", "initialize", "notifications/initialized", "tools/list",
                                 "tools/call"]
    assert world.opens("c2") == ["initialize", "notifications/initialized", "tools/list", "tools/call"]


def test_a_server_that_no_longer_speaks_2026_is_asked_again_and_spoken_to_in_2025(world: World) -> None:
    world.opens("c1")
    world.recording.face = LEGACY
    assert world.opens("c2") == ["tools/list", "server/discover", "initialize", "notifications/initialized",
                                 "tools/list", "tools/call"]  # the first refused: 400 Missing session ID
    assert world.opens("c3")[0] == "initialize"


def test_a_server_that_no_longer_speaks_2025_is_asked_again_and_spoken_to_in_2026(world: World) -> None:
    world.recording.face = LEGACY
    world.opens("c1")
    world.recording.face = MODERN_ONLY
    assert world.opens("c2") == ["initialize", "server/discover", "tools/list", "tools/call"]
    assert world.opens("c3") == ["tools/list", "tools/call"]


def test_a_kept_conversation_whose_server_no_longer_speaks_its_era_is_opened_again_in_the_new_one(
        world: World) -> None:
    world.opens("c1")
    world.recording.face = LEGACY
    world.recording.methods.clear()
    body = request_body("ag-ui", [user_message("ag-ui", "hi")], "c1")
    reply = Reply("ag-ui", post(world.http, f"{world.gateway}/oneshot/in", body))
    assert reply.response.status_code == 200, reply.response.text
    assert reply.text.startswith("heard: ")
    assert world.recording.methods == ["tools/call", "tools/list", "server/discover", "initialize",
                                       "notifications/initialized", "tools/list", "tools/call"]


def test_the_eras_remembered_are_bounded_the_least_recently_used_forgotten() -> None:
    known = KnownEras()
    for n in range(MAX_KNOWN + 1):
        known.remember(f"http://127.0.0.1:{n}/mcp", True)
        known.modern("http://127.0.0.1:0/mcp")  # used: kept
    assert known.modern("http://127.0.0.1:0/mcp") is True
    assert known.modern("http://127.0.0.1:1/mcp") is None
    assert known.modern(f"http://127.0.0.1:{MAX_KNOWN}/mcp") is True
