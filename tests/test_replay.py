"""Recordings replayed as agents: a conversation recorded through the gateway in front of each real upstream (and
the built-in agent in every dialect) replays through the gateway to the same client dialect with the same events
the client got the first time; the recorded timing holds within a stated tolerance; a request nothing was recorded
for gets the dialect's own error."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from e2e import post, request_body, user_message
from peers_env import a2a_upstream, agkit_agui_upstream, agkit_upstream, langgraph_upstream, pydantic_upstream
from replaying import Replays, converse, normalized, text_of
from servers import Served

from adapters import registry
from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.core.events import RunError
from gateway.recordings.exchange import read
from gateway.recordings.replay import ReplayApp
from gateway.server.app import create_app

CLIENTS = list(registry.DIALECTS)


def _built_in(dialect: str) -> Callable[[], AbstractContextManager[str]]:
    @contextmanager
    def serve() -> Iterator[str]:
        with Served(create_agent_app(dialect, test_hooks=False)) as agent:
            yield agent.url
    return serve


UPSTREAMS: dict[str, tuple[Callable[[], AbstractContextManager[str]], str, str]] = {
    "pydantic-ag-ui": (pydantic_upstream, "/ag-ui", "ag-ui"),
    "pydantic-vercel": (pydantic_upstream, "/vercel", "vercel"),
    "cloudbase-ag-kit": (agkit_upstream, "/send-message", "ag-kit"),
    "cloudbase-ag-ui": (agkit_agui_upstream, "/send-message", "ag-ui"),
    "a2a-sdk": (a2a_upstream, "/", "a2a"),
    "langgraph-dev": (langgraph_upstream, "", "langgraph"),
    **{f"built-in-{d}": (_built_in(d), registry.get(d).paths[0], d) for d in registry.DIALECTS},
}
"""Each upstream: how to run it, the path of its endpoint, its dialect."""


def _routes(bases: dict[str, str], record: Path | None) -> list[dict[str, Any]]:
    routes = []
    for name, (_, path, dialect) in UPSTREAMS.items():
        for client in CLIENTS:
            route: dict[str, Any] = {
                "name": f"{client}-{name}", "paths": [f"/{client}/to/{name}"], "client_dialects": [client],
                "upstream": {"url": bases[name] + path, "dialect": dialect},
                "timeouts": {"first_event": 20, "idle": 20, "total": 60}}
            if record is not None:
                route["record"] = {"dir": str(record / f"{client}-{name}")}
            routes.append(route)
    return routes


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[tuple[str, str], list[Any]]]]:
    """Every client dialect's conversation with every upstream, through a recording gateway: the folder of
    recordings, and what each client got."""
    folder = tmp_path_factory.mktemp("recordings")
    got: dict[tuple[str, str], list[Any]] = {}
    with ExitStack() as stack:
        running: dict[Any, str] = {}
        bases = {}
        for name, (start, _, _) in UPSTREAMS.items():
            if start not in running:
                running[start] = stack.enter_context(start())
            bases[name] = running[start]
        config = GatewayConfig.model_validate({"routes": _routes(bases, folder), "store": {"url": "memory://"}})
        with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=60) as http:
            for name in UPSTREAMS:
                for client in CLIENTS:
                    replies = converse(http, f"{gateway.url}/{client}/to/{name}", client, f"c-{client}-{name}")
                    got[(client, name)] = [reply.events for reply in replies]
    yield folder, got


@pytest.fixture(scope="module")
def replayed(recorded: tuple[Path, dict[tuple[str, str], list[Any]]]) -> dict[tuple[str, str], list[Any]]:
    """The same conversations through a gateway whose every upstream is the replay of its recordings, at once."""
    folder, _ = recorded
    replays = Replays()
    for name in UPSTREAMS:
        for client in CLIENTS:
            files = sorted((folder / f"{client}-{name}").glob("*.jsonl"))
            replays.apps[f"{client}-{name}"] = ReplayApp(read(files), speed=None)
    got: dict[tuple[str, str], list[Any]] = {}
    with Served(replays) as server:
        routes = []
        for route in _routes({name: "" for name in UPSTREAMS}, None):
            route["upstream"]["url"] = f"{server.url}/{route['name']}{route['upstream']['url']}"
            routes.append(route)
        config = GatewayConfig.model_validate({"routes": routes, "store": {"url": "memory://"}})
        with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=60) as http:
            for name in UPSTREAMS:
                for client in CLIENTS:
                    replies = converse(http, f"{gateway.url}/{client}/to/{name}", client, f"c-{client}-{name}")
                    got[(client, name)] = [reply.events for reply in replies]
    return got


@pytest.mark.parametrize("upstream", list(UPSTREAMS))
@pytest.mark.parametrize("client", CLIENTS)
def test_a_recorded_conversation_replays_to_the_client_with_the_same_events(
        recorded: tuple[Path, dict[tuple[str, str], list[Any]]], replayed: dict[tuple[str, str], list[Any]],
        client: str, upstream: str) -> None:
    first = recorded[1][(client, upstream)]
    again = replayed[(client, upstream)]
    assert len(first) == len(again) == 2
    assert text_of(first[0]) or any(isinstance(e, RunError) for e in first[0])  # the first time said something
    for turn, (before, now) in enumerate(zip(first, again, strict=True)):
        assert normalized(now) == normalized(before), f"turn {turn + 1}"


def test_each_recording_file_holds_one_conversation_with_its_turns(
        recorded: tuple[Path, dict[tuple[str, str], list[Any]]]) -> None:
    folder, _ = recorded
    files = sorted((folder / "agent-respond-built-in-ag-kit").glob("*.jsonl"))
    assert len(files) == 1
    exchanges = read(files)
    assert [e.client_dialect for e in exchanges] == ["agent-respond", "agent-respond"]
    assert [e.upstream_dialect for e in exchanges] == ["ag-kit", "ag-kit"]
    assert b"What is the weather in Paris?" in exchanges[0].client_body


PACE = 0.05
TOLERANCE = 0.03
"""How far a replayed event may arrive from its recorded time, relative to the first event: 30 ms."""


def _timed(http: httpx.Client, url: str, body: dict[str, Any]) -> list[float]:
    """When each piece of a streamed reply arrived, in seconds from the request."""
    started = time.monotonic()
    arrivals = []
    with http.stream("POST", url, content=orjson.dumps(body), headers={"content-type": "application/json"}) as r:
        for _ in r.iter_raw():
            arrivals.append(time.monotonic() - started)
    return arrivals


@pytest.mark.parametrize("speed", [1.0, 2.0, None])
def test_replay_keeps_the_recorded_timing_within_30_ms(tmp_path: Path, speed: float | None) -> None:
    with Served(create_agent_app("ag-ui", pace=PACE, test_hooks=False)) as agent:
        config = GatewayConfig.model_validate({"routes": [{
            "name": "paced", "paths": ["/agui"], "upstream": {"url": f"{agent.url}/agui", "dialect": "ag-ui"},
            "record": {"dir": str(tmp_path)}}], "store": {"url": "memory://"}})
        body = request_body("ag-ui", [user_message("ag-ui", "hello")], "paced")
        with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=30) as http:
            post(http, f"{gateway.url}/agui", body)
    (exchange,) = read(sorted(tmp_path.glob("*.jsonl")))
    frames = exchange.upstream_response.frames
    assert len(frames) >= 5 and frames[-1][0] - frames[0][0] > 4 * PACE * 0.9  # the agent did pace them
    replay = ReplayApp([exchange], speed)
    with Served(replay) as agent, httpx.Client(timeout=30) as http:
        arrivals = _timed(http, f"{agent.url}/agui", orjson.loads(exchange.upstream_body))
    recorded = [at - exchange.sent_at for at, _ in frames]
    assert len(arrivals) >= 3
    scale = 0.0 if speed is None else 1 / speed
    first = arrivals[0] - recorded[0] * scale
    # each piece as it came, against the recording's time of the frame it ends with
    expected = sorted(at * scale for at in recorded)
    for arrival in arrivals:
        nearest = min(expected, key=lambda at: abs(at + first - arrival))
        assert abs(nearest + first - arrival) <= TOLERANCE, (arrival, nearest + first)
    if speed is not None:
        assert arrivals[-1] >= expected[-1] - TOLERANCE
    else:
        assert arrivals[-1] < (recorded[-1] - recorded[0]) / 4


@pytest.mark.parametrize("dialect", ["ag-ui", "agent-respond", "a2a"])
def test_a_request_nothing_was_recorded_for_is_the_dialects_own_error(tmp_path: Path, dialect: str) -> None:
    with Served(create_agent_app(dialect, test_hooks=False)) as agent:
        path = registry.get(dialect).paths[0]
        config = GatewayConfig.model_validate({"routes": [{
            "name": "r", "paths": ["/ag-ui"], "client_dialects": ["ag-ui"],
            "upstream": {"url": f"{agent.url}{path}", "dialect": dialect}, "record": {"dir": str(tmp_path)}}],
            "store": {"url": "memory://"}})
        with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=30) as http:
            converse(http, f"{gateway.url}/ag-ui", "ag-ui", "known", ("hello",))
    with Served(ReplayApp(read(sorted(tmp_path.glob("*.jsonl"))), None)) as replay:
        config = GatewayConfig.model_validate({"routes": [{
            "name": "r", "paths": ["/ag-ui"], "client_dialects": ["ag-ui"],
            "upstream": {"url": f"{replay.url}{path}", "dialect": dialect}}], "store": {"url": "memory://"},
            "debug_errors": True})
        with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=30) as http:
            (reply,) = converse(http, f"{gateway.url}/ag-ui", "ag-ui", "other", ("something never asked",))
    assert reply.error is not None
    assert "no recording matches this request" in reply.error.message
