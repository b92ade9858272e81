"""Upstream and store faults, end to end: each client dialect gets its own kind of error, in time, and the gateway
stays healthy and leaks nothing.

The upstream is `faults.FaultUpstream`, a raw HTTP/1.1 server that misbehaves on request: each gateway route here
forwards the client's `x-fault` header to it, so one route per (client, upstream) pair serves every fault. After
every fault the test checks what the operator would: `agent_gateway_streams_in_flight` back to 0, `/healthz`
still answering, the next request through the same route served whole, and, where the gateway had to give up on
the upstream (timeouts, a client that left), the upstream's connection closed by the gateway.
"""

from __future__ import annotations

import re
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from e2e import DIALECTS, Reply, post, request_body, user_message, watch_offers
from faults import HTML, Call, FaultUpstream, GatewayProcess, wait_until
from helpers import sse_payloads
from prometheus_client.parser import text_string_to_metric_families
from redis_server import RedisServer
from servers import Served, closed_port

from adapters import registry
from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.mapper import STORE_PATIENCE
from gateway.conversations.store import MemoryStore
from gateway.core.conformance import Answer
from gateway.core.events import RunFinished, ToolCallStart
from gateway.server.app import create_app
from gateway.upstream.http1 import Offer

PAIRS = [(c, u) for c in DIALECTS for u in DIALECTS]
NEIGHBOURS = list(zip(DIALECTS, DIALECTS[1:] + DIALECTS[:1], strict=True))
"""Each dialect as a client once and as an upstream once: for the costly faults."""
STREAMING = ["ag-ui", "ag-kit", "vercel"]
ROOMY = {"connect": 1, "first_event": 10, "idle": 10, "total": 30}
"""Deadlines for the faults that are not about time: none of them waits for these, and a loaded machine's delays
stay far under them."""
FIRST_EVENT = IDLE = 0.3
"""The deadlines of the quiet routes, met by faults that send nothing for a minute (`max_seconds`); the events a
fault sends before it goes quiet come well within them, on a loaded machine too."""
TIGHT_TOTAL = 1.0
"""The whole-run deadline of the tight routes, met by a stream that never ends."""
LOAD_FIRST_EVENT = 6.0
"""The first-event deadline of the load routes, met by the hung runs under load: the slow runs there are all served
well within it (within 2.7 s of their start on a two-vCPU guest with nothing else running, its worst seen, and past 3
s there beside another test worker), which the test checks by order."""
TIGHT_EVENT_BYTES = 1024 * 1024
SLACK = 1.5
"""Seconds a timeout may overrun on a loaded CI machine; the timeouts themselves are well under a second."""
HUGE = 10 * 1024 * 1024
GUNICORN_KEEPALIVE = 2.0
"""Seconds gunicorn keeps an idle connection, the shortest of the common servers' (uvicorn and Node: 5 s)."""


class World:
    """The fault upstream, one gateway in front of it and a client."""

    def __init__(self, upstream: FaultUpstream, gateway: Served) -> None:
        self.upstream = upstream
        self.gateway = gateway
        self.http = httpx.Client(timeout=30)
        self.ids = 0

    def request_id(self, label: str) -> str:
        self.ids += 1
        return f"req-{label}-{self.ids}"

    def ask(self, client: str, upstream: str, fault: str, *, prefix: str = "", request_id: str | None = None,
            timeout: float = 30) -> tuple[httpx.Response, float]:
        """One request through the (client, upstream) route with `fault`; the response and how long it took."""
        body = request_body(client, [user_message(client, f"fault {fault}")], conversation=f"c-{self.ids}")
        headers = {"x-fault": fault, "x-request-id": request_id or self.request_id(fault)}
        started = time.monotonic()
        response = post(self.http, f"{self.gateway.url}{prefix}/{client}/{upstream}", body, headers, timeout=timeout)
        return response, time.monotonic() - started

    def in_flight(self) -> float:
        return in_flight(self.http, self.gateway.url)

    def assert_clean(self, client: str, upstream: str) -> None:
        """Nothing left in flight, still healthy, and the next request through the same route is served whole."""
        assert wait_until(lambda: self.in_flight() == 0, 3), \
            f"agent_gateway_streams_in_flight stayed at {self.in_flight()} after the fault"
        assert self.http.get(f"{self.gateway.url}/healthz", timeout=2).text == "ok"
        response, _ = self.ask(client, upstream, "ok?n=5")
        assert_numbered(client, response, 5)
        assert wait_until(lambda: self.in_flight() == 0, 3)


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with FaultUpstream() as upstream:
        routes: list[dict[str, Any]] = []
        for client, dialect in PAIRS:
            common = {"client_dialects": [client], "forward_headers": ["x-fault"],
                      "upstream": {"url": upstream.url(dialect), "dialect": dialect}}
            routes.append({**common, "name": f"{client}-{dialect}", "paths": [f"/{client}/{dialect}"],
                           "timeouts": ROOMY, "limits": {"max_event_bytes": TIGHT_EVENT_BYTES}})
            routes.append({**common, "name": f"quiet-{client}-{dialect}", "paths": [f"/quiet/{client}/{dialect}"],
                           "timeouts": {"connect": 1, "first_event": FIRST_EVENT, "idle": IDLE, "total": 30}})
            routes.append({**common, "name": f"tight-{client}-{dialect}", "paths": [f"/tight/{client}/{dialect}"],
                           "timeouts": {**ROOMY, "total": TIGHT_TOTAL}})
            routes.append({**common, "name": f"load-{client}-{dialect}", "paths": [f"/load/{client}/{dialect}"],
                           "timeouts": {"connect": 1, "first_event": LOAD_FIRST_EVENT, "idle": 1, "total": 10}})
            if (client, dialect) in NEIGHBOURS:
                # This fault upstream encodes 10 MB (50 MB as Responses events, 30 MB as LangGraph's) on the
                # gateway's GIL, and a one-body client holds it all: deadlines for the bytes, not for a stall.
                routes.append({**common, "name": f"huge-{client}-{dialect}", "paths": [f"/huge/{client}/{dialect}"],
                               "timeouts": ROOMY, "limits": {"max_held_text": 2 * HUGE}})
        for client in DIALECTS:
            routes.append({"name": f"refused-{client}", "paths": [f"/refused/{client}/ag-kit"],
                           "client_dialects": [client],
                           "upstream": {"url": f"http://127.0.0.1:{closed_port()}/send-message", "dialect": "ag-kit"},
                           "timeouts": ROOMY})
        # debug_errors: these tests read what the upstream answered in the client's error.
        config = GatewayConfig.model_validate({"routes": routes, "keepalive_seconds": 0.15, "debug_errors": True})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            world = World(upstream, gateway)
            yield world
            world.http.close()


# -- reading replies strictly


def in_flight(http: httpx.Client, gateway: str) -> float:
    """`agent_gateway_streams_in_flight`, summed over routes. Only its lines are parsed: the whole exposition of a
    gateway with dozens of routes takes the parser tens of milliseconds."""
    name = "agent_gateway_streams_in_flight"
    text = "\n".join(line for line in http.get(f"{gateway}/metrics").text.splitlines() if name in line)
    families = [f for f in text_string_to_metric_families(text + "\n") if f.name == name]
    assert families, f"{gateway}/metrics has no {name}"
    return sum(sample.value for family in families for sample in family.samples)


def numbers(text: str) -> list[int]:
    return [int(k) for k in re.findall(r"n=(\d+) ", text)]


def assert_numbered(client: str, response: httpx.Response, n: int) -> Reply:
    """A whole, successful run carrying deltas n=0 .. n=n-1, in order, each once."""
    assert response.status_code == 200, f"expected 200, got {response.status_code}: {response.text[:300]}"
    reply = Reply(client, response)
    assert reply.error is None, f"the run failed: {reply.error}"
    assert isinstance(reply.finished, RunFinished) and reply.finished.outcome == "success"
    assert numbers(reply.text) == list(range(n)), f"deltas out of order or missing: {reply.text[:200]!r}"
    return reply


def assert_error_before_start(response: httpx.Response, status: int, code: str, says: str,
                              client: str = "ag-ui") -> dict[str, Any]:
    """A real HTTP status with the gateway's JSON error body, as every dialect but A2A and MCP gets before its
    stream starts; an A2A client gets a JSON-RPC error in an HTTP 200, the gateway's code and status in its `data`;
    an MCP client whose agent failed a tool result with `isError`, the gateway's error in its `structuredContent`.
    Returned in the gateway's shape either way."""
    assert response.headers["content-type"].startswith("application/json")
    assert response.headers.get("x-request-id")
    if client == "a2a":
        assert response.status_code == 200, f"expected a JSON-RPC error, got {response.status_code}: {response.text}"
        rpc = response.json()["error"]
        info = rpc["data"][0]
        assert rpc["code"] == -32603 and info["reason"] == code.upper(), rpc
        assert info["metadata"]["status"] == str(status) and says in rpc["message"], rpc
        details = orjson.loads(info["metadata"].get("details", "[]"))
        return {"code": code, "message": rpc["message"], **({"details": details} if details else {})}
    if client == "mcp" and status >= 500:  # the agent failed, not the call: a tool result that says so
        assert response.status_code == 200, f"expected an isError result, got {response.status_code}: {response.text}"
        result = response.json()["result"]
        failed: dict[str, Any] = result["structuredContent"]["error"]
        assert result["isError"] is True and says in result["content"][0]["text"], result
        assert failed["code"] == code and failed["status"] == status, failed
        return failed
    assert response.status_code == status, f"expected {status}, got {response.status_code}: {response.text[:300]}"
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code, error
    assert says in error["message"], error
    return error


def assert_in_band_error(client: str, response: httpx.Response, code: str, says: str) -> Reply:
    """The run failed after the response started: the client dialect's own error, then its terminator.

    agent-respond has no stream: its error is the response status (504 for a timeout, else 502) with the
    `{error, messages}` body the eval platform reads."""
    if client == "agent-respond":
        status = 504 if code == "upstream_timeout" else 502
        assert response.status_code == status, f"expected {status}, got {response.status_code}: {response.text[:300]}"
        body = response.json()
        assert body["error"]["code"] == code and says in body["error"]["message"], body["error"]
        assert isinstance(body["messages"], list)
        return Reply(client, response)
    assert response.status_code == 200, f"expected an in-band error, got {response.status_code}: {response.text[:300]}"
    assert response.headers["content-type"].startswith("text/event-stream")
    data = sse_payloads(response.content)
    assert data, "empty stream"
    if client == "a2a":
        last = orjson.loads(data[-1])["result"]["statusUpdate"]["status"]
        assert last["state"] == "TASK_STATE_FAILED", f"the task did not end FAILED: {data[-3:]}"
        assert says in last["message"]["parts"][0]["text"], last
        assert not any(b"TASK_STATE_COMPLETED" in d for d in data)
    elif client == "langgraph":
        last = orjson.loads(data[-1])
        assert last.get("error") == code and says in last["message"], f"the stream does not end with its error: {last}"
    elif client == "ag-ui":
        last = orjson.loads(data[-1])
        assert last["type"] == "RUN_ERROR", f"the stream does not end with RUN_ERROR: {data[-3:]}"
        assert last.get("code") == code and says in last["message"], last
        assert not any(orjson.loads(d)["type"] == "RUN_FINISHED" for d in data)
    elif client in ("ag-kit", "vercel"):
        assert data[-1] == b"[DONE]", f"the stream does not end with [DONE]: {data[-3:]}"
        error = orjson.loads(data[-2])
        assert error["type"] == "error", f"no error event before [DONE]: {data[-3:]}"
        assert says in (error.get("error") if client == "ag-kit" else error.get("errorText")), error
        if client == "vercel":
            assert not any(orjson.loads(d).get("type") == "finish" for d in data[:-1])
    reply = Reply(client, response)
    assert reply.error is not None
    if client not in ("a2a", "ag-ui", "ag-kit", "vercel"):  # any other dialect: as its own decoder reads it
        assert reply.error.code == code and says in reply.error.message, reply.error
        assert not [v for v in registry.get(client).judge(Answer(response.status_code, response.headers,
                                                                   response.content)) if not v.convention]
    return reply


def assert_upstream_released(call: Call, within: float = 2.0) -> None:
    """The gateway hung up on the upstream: the fault server saw its connection close."""
    assert wait_until(lambda: call.end is not None, within), \
        f"the gateway still holds the upstream connection of {call.fault} after {within}s"
    assert call.end == "peer_closed", f"the upstream ended the call itself ({call.end}), the gateway never hung up"


# -- the upstream cannot be reached or answers with an error page


@pytest.mark.parametrize("client", DIALECTS)
def test_refused_connection_is_a_502_at_once(world: World, client: str) -> None:
    response, took = world.ask(client, "ag-kit", "ok", prefix="/refused")
    assert_error_before_start(response, 502, "upstream_error", "upstream unreachable", client)
    assert took < 1 + SLACK
    world.assert_clean(client, "ag-kit")


@pytest.mark.parametrize(("client", "upstream"), PAIRS)
def test_html_502_from_the_upstream_is_a_502_with_its_status_and_body(world: World, client: str,
                                                                      upstream: str) -> None:
    response, _ = world.ask(client, upstream, "html-502")
    error = assert_error_before_start(response, 502, "upstream_error", "upstream answered HTTP 502", client)
    assert error["details"] == [{"status": 502, "body": HTML.decode()}]
    world.assert_clean(client, upstream)


@pytest.mark.parametrize(("client", "upstream"), PAIRS)
def test_200_with_an_html_body_is_a_502_that_names_the_content_type(world: World, client: str, upstream: str
                                                                   ) -> None:
    """An error page served as 200 text/html (a misrouted proxy, a login wall) is refused before any stream starts:
    the client is told what came back, never handed an empty success or a vague cut-off stream."""
    response, _ = world.ask(client, upstream, "wrong-type")
    error = assert_error_before_start(response, 502, "upstream_error", "upstream answered HTTP 200 with "
                                                                       "content-type text/html", client)
    assert error["details"] == [{"status": 200, "body": HTML.decode()}]
    world.assert_clean(client, upstream)


# -- the upstream breaks off or goes quiet


@pytest.mark.parametrize(("client", "upstream"), PAIRS)
def test_reset_mid_stream_is_an_in_band_error_after_what_was_sent(world: World, client: str, upstream: str) -> None:
    request_id = world.request_id("reset")
    response, took = world.ask(client, upstream, "reset?after=2", request_id=request_id)
    reply = assert_in_band_error(client, response, "upstream_error", "upstream connection broke")
    if client != "agent-respond" and upstream != "agent-respond":
        assert numbers(reply.text) == [0, 1], "the deltas sent before the reset must reach the client"
    assert world.upstream.find(request_id).end == "reset"
    assert took < SLACK
    world.assert_clean(client, upstream)


@pytest.mark.parametrize("client", DIALECTS)
def test_upstream_silent_before_the_first_byte_is_a_504_at_the_first_event_timeout(world: World,
                                                                                  client: str) -> None:
    request_id = world.request_id("hang-first")
    response, took = world.ask(client, "ag-kit", "hang-first", prefix="/quiet", request_id=request_id)
    assert_error_before_start(response, 504, "upstream_timeout", f"upstream did not answer within {FIRST_EVENT:g}s",
                              client)
    assert FIRST_EVENT - 0.05 <= took < FIRST_EVENT + SLACK
    assert_upstream_released(world.upstream.find(request_id))
    world.assert_clean(client, "ag-kit")


@pytest.mark.parametrize("upstream", ["ag-kit", "agent-respond"])
@pytest.mark.parametrize("client", DIALECTS)
def test_upstream_silent_after_its_headers_is_cut_at_the_first_event_timeout(world: World, client: str,
                                                                            upstream: str) -> None:
    request_id = world.request_id("hang-headers")
    response, took = world.ask(client, upstream, "hang-headers", prefix="/quiet", request_id=request_id)
    assert_in_band_error(client, response, "upstream_timeout", f"upstream sent no event within {FIRST_EVENT:g}s")
    assert FIRST_EVENT - 0.05 <= took < FIRST_EVENT + SLACK
    assert_upstream_released(world.upstream.find(request_id))
    world.assert_clean(client, upstream)


@pytest.mark.parametrize(("client", "upstream"), PAIRS)
def test_upstream_silent_between_events_is_cut_at_the_idle_timeout(world: World, client: str, upstream: str) -> None:
    request_id = world.request_id("hang-between")
    response, took = world.ask(client, upstream, "hang-between?after=2", prefix="/quiet", request_id=request_id)
    # A one-body upstream's half-sent body holds no event yet: that is the first-event timeout.
    says = f"upstream sent no event within {FIRST_EVENT:g}s" if upstream == "agent-respond" \
        else f"upstream sent nothing for {IDLE:g}s"
    reply = assert_in_band_error(client, response, "upstream_timeout", says)
    if client != "agent-respond" and upstream != "agent-respond":
        assert numbers(reply.text) == [0, 1]
    assert took < IDLE + SLACK
    assert_upstream_released(world.upstream.find(request_id))
    world.assert_clean(client, upstream)


# -- the upstream sends something it should not


@pytest.mark.parametrize(("client", "upstream"), PAIRS)
def test_invalid_json_frame_is_an_in_band_error(world: World, client: str, upstream: str) -> None:
    response, _ = world.ask(client, upstream, "bad-json?after=2")
    says = "not JSON" if upstream == "agent-respond" else "invalid JSON"
    reply = assert_in_band_error(client, response, "upstream_bad_event", says)
    if client != "agent-respond" and upstream != "agent-respond":
        assert numbers(reply.text) == [0, 1]
    world.assert_clean(client, upstream)


@pytest.mark.parametrize(("client", "upstream"), PAIRS)
def test_unknown_event_type_is_passed_over_and_the_run_completes(world: World, client: str, upstream: str) -> None:
    response, _ = world.ask(client, upstream, "unknown-event?after=2&n=5")
    assert_numbered(client, response, 5)
    world.assert_clean(client, upstream)


@pytest.mark.parametrize(("client", "upstream"), NEIGHBOURS)
def test_a_10_mb_event_within_the_limit_arrives_whole(world: World, client: str, upstream: str) -> None:
    response, _ = world.ask(client, upstream, f"huge?size={HUGE}&n=3", prefix="/huge")
    reply = assert_numbered(client, response, 3)
    assert reply.text.count("x") == HUGE
    world.assert_clean(client, upstream)


@pytest.mark.parametrize(("client", "upstream"), [(dialect, dialect) for dialect in DIALECTS])
def test_a_10_mb_event_over_the_limit_is_an_in_band_error(world: World, client: str, upstream: str) -> None:
    response, _ = world.ask(client, upstream, f"huge?size={HUGE}&n=3")
    says = "exceeded" if upstream == "agent-respond" else "oversized"
    reply = assert_in_band_error(client, response, "upstream_event_too_large", says)
    if client != "agent-respond" and upstream != "agent-respond":
        assert numbers(reply.text) == [0]
    world.assert_clean(client, upstream)


# -- endless streams: the client leaves, or the run outlives `total`


@pytest.mark.parametrize("upstream", ["ag-ui", "agent-respond"])
@pytest.mark.parametrize("client", DIALECTS)
def test_client_leaving_an_endless_stream_closes_the_upstream_connection(world: World, client: str,
                                                                         upstream: str) -> None:
    request_id = world.request_id("forever")
    body = request_body(client, [user_message(client, "forever")], conversation=request_id)
    headers = {"content-type": "application/json", "x-fault": "forever?gap=0.01", "x-request-id": request_id}
    url = f"{world.gateway.url}/{client}/{upstream}"
    if "agent-respond" in (client, upstream):
        # One side is one body: nothing reaches the client before the run's end, which never comes. The client
        # leaves once the upstream has sent three events.
        payload = orjson.dumps(body)
        head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        with socket.create_connection(("127.0.0.1", world.gateway.port), timeout=10) as sock:
            sock.sendall(f"POST /{client}/{upstream} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: {len(payload)}"
                         f"\r\n{head}\r\n".encode() + payload)
            call = world.upstream.find(request_id)
            assert wait_until(lambda: call.events_sent >= 3, 5), "the upstream did not start streaming"
    else:
        with world.http.stream("POST", url, content=orjson.dumps(body), headers=headers) as response:
            assert response.status_code == 200
            received = b""
            for chunk in response.iter_raw():
                received += chunk
                if b"n=3 " in received:
                    break
    call = world.upstream.find(request_id)
    assert call.events_sent >= 3
    assert_upstream_released(call, within=1.0)
    sent = call.events_sent
    time.sleep(0.1)
    assert call.events_sent == sent, "the upstream kept streaming after the gateway let go"
    world.assert_clean(client, upstream)


@pytest.fixture
def flood_gateway(world: World, tmp_path: Path) -> Iterator[GatewayProcess]:
    """A gateway process (uvloop and httptools, nothing else in its process) in front of an AG-Kit upstream that
    sends ~2 KiB events as fast as it can write them. One per test: a stream it failed to let go of dies with it."""
    config = tmp_path / "flood.yaml"
    config.write_text(orjson.dumps({"routes": [{
        "name": "flood", "paths": ["/flood"], "client_dialects": ["ag-ui"],
        "upstream": {"url": world.upstream.url("ag-kit", "forever", gap=0, pad=2048), "dialect": "ag-kit"},
        "timeouts": {"connect": 2, "first_event": 30, "idle": 30, "total": 60}}]}).decode())
    with GatewayProcess(config) as gateway:
        yield gateway


def _lingering(call: Call, within: float) -> str | None:
    """None if the upstream call ended within `within` seconds, else how it is still going."""
    left = time.monotonic()
    if wait_until(lambda: call.end is not None, within):
        return None
    sent = call.bytes_sent
    time.sleep(0.2)
    return (f"still streaming {(call.bytes_sent - sent) / 0.2 / 2**20:.0f} MiB/s to the gateway "
            f"{time.monotonic() - left:.1f}s after the client left")


def test_client_leaving_a_flooding_stream_releases_the_upstream_at_once(world: World,
                                                                        flood_gateway: GatewayProcess) -> None:
    """The client reads a megabyte of a flood and leaves, eight times. Each time the gateway must hang up on the
    upstream at once, not go on reading it (into the void) for as long as it keeps sending."""
    lingered: list[str] = []
    with httpx.Client(timeout=10) as http:
        for attempt in range(8):
            request_id = world.request_id("flood")
            body = orjson.dumps(request_body("ag-ui", [user_message("ag-ui", "flood")], request_id))
            headers = {"content-type": "application/json", "x-request-id": request_id}
            with http.stream("POST", f"{flood_gateway.url}/flood", content=body, headers=headers) as response:
                received = 0
                for chunk in response.iter_raw():
                    received += len(chunk)
                    if received > 2**20:
                        break
            lingering = _lingering(world.upstream.find(request_id), 1.0)
            if lingering:
                lingered.append(f"#{attempt}: {lingering}")
        assert not lingered, f"the gateway kept reading the upstream after the client left: {lingered}"
        assert wait_until(lambda: in_flight(http, flood_gateway.url) == 0, 3)


def _read_chunked(sock: socket.socket, pause_after: int, pause: float) -> tuple[bytes, bytes]:
    """A response's head and its de-chunked body, read from `sock`, stopping `pause` seconds once `pause_after`
    bytes came."""
    data, paused = b"", False
    while not data.endswith(b"\r\n0\r\n\r\n"):
        piece = sock.recv(65536)
        assert piece, "the gateway closed the connection before the body's end"
        data += piece
        if not paused and len(data) > pause_after:
            paused = True
            time.sleep(pause)
    head, _, rest = data.partition(b"\r\n\r\n")
    body = bytearray()
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            return head, bytes(body)
        body += rest[:size]
        rest = rest[size + 2:]


def test_a_client_that_stops_reading_mid_stream_gets_every_event_in_order_once_it_reads_again(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stream outruns a client that pauses: translation moves from the upstream's read callback back to the
    run's task, which waits for the client, and nothing is lost or reordered on either side of the switch."""
    offers = watch_offers(monkeypatch)
    body = orjson.dumps(request_body("ag-ui", [user_message("ag-ui", "fault ok")], "paused-reader"))
    request = (b"POST /load/ag-ui/ag-kit HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
               b"x-fault: ok?n=400&pad=20000\r\ncontent-length: %d\r\n\r\n%b" % (len(body), body))
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the kernel holds little for the client
        sock.settimeout(10)
        sock.connect(("127.0.0.1", world.gateway.port))
        sock.sendall(request)
        head, content = _read_chunked(sock, pause_after=100_000, pause=0.5)
    assert head.startswith(b"HTTP/1.1 200")
    assert any(took is Offer.DECLINED for took, _ in offers), "the client never held the stream back"
    assert_numbered("ag-ui", httpx.Response(200, content=content), 400)


@pytest.mark.parametrize("client", DIALECTS)
def test_endless_stream_is_cut_at_the_total_timeout(world: World, client: str) -> None:
    request_id = world.request_id("forever-total")
    response, took = world.ask(client, "vercel", "forever?gap=0.02", prefix="/tight", request_id=request_id)
    reply = assert_in_band_error(client, response, "upstream_timeout", f"the run took longer than {TIGHT_TOTAL:g}s")
    if client != "agent-respond":
        got = numbers(reply.text)
        assert got and got == list(range(len(got))), "what streamed before the cut must be whole and in order"
    assert TIGHT_TOTAL - 0.05 <= took < TIGHT_TOTAL + SLACK
    assert_upstream_released(world.upstream.find(request_id))
    world.assert_clean(client, "vercel")


# -- slow answers under load


def test_slow_upstreams_under_load_are_all_served_and_a_hung_one_does_not_hold_the_others(world: World) -> None:
    """270 requests at once: 243 slow but healthy runs (0.5 s before the headers, paced deltas), three per pair, and
    27 whose upstream never answers, three per client dialect. /healthz and then every slow run are answered, whole,
    while the hung ones still hang, and the hung ones get their 504 at the first-event
    deadline (`LOAD_FIRST_EVENT` on these routes).

    The hung runs' deadline is the yardstick, not a clock of the test's: a gateway whose loop is held (a blocking
    call in it) or whose hung upstream calls hold the others back lets that deadline pass first. The clients share
    one TLS context: each one's own costs ~30 ms of the interpreter the gateway and the upstream run in, and 270 of
    them starved both for seconds."""
    results: dict[str, tuple[httpx.Response | BaseException, float]] = {}
    lock = threading.Lock()
    tag = time.monotonic_ns()
    jobs = [(f"slow-{i}-{tag}", c, u, "slow?delay=0.5&n=8&gap=0.02") for i, (c, u) in enumerate(PAIRS * 3)]
    jobs += [(f"hung-{i}-{tag}", c, "ag-ui", "hang-first") for i, c in enumerate(DIALECTS * 3)]
    slow = [name for name, *_ in jobs if name.startswith("slow")]
    hung = [name for name, *_ in jobs if name.startswith("hung")]
    verify = ssl.create_default_context()
    go = threading.Barrier(len(jobs) + 1)

    def run(name: str, client: str, upstream: str, fault: str) -> None:
        try:
            with httpx.Client(timeout=30, verify=verify) as http:
                body = request_body(client, [user_message(client, name)], conversation=name)
                go.wait(30)
                started = time.monotonic()
                response = post(http, f"{world.gateway.url}/load/{client}/{upstream}", body,
                                {"x-fault": fault, "x-request-id": name})
                outcome: tuple[httpx.Response | BaseException, float] = (response, time.monotonic() - started)
        except Exception as exc:  # reported below, with the job's name
            outcome = (exc, 0.0)
        with lock:
            results[name] = outcome

    def runs() -> dict[str, Call]:
        """The upstream's call of each job that reached it (not the calls that open an MCP session)."""
        return {c.request_id: c for c in list(world.upstream.calls) if c.request_id in names and not c.opening}

    def given_up() -> list[str]:
        """The hung runs the gateway has given up on: answered, or their upstream connection closed."""
        reached = runs()
        return [name for name in hung if name in results or (name in reached and reached[name].ended is not None)]

    names = {name for name, *_ in jobs}
    threads = [threading.Thread(target=run, args=job, daemon=True) for job in jobs]
    for thread in threads:
        thread.start()
    go.wait(30)
    assert world.http.get(f"{world.gateway.url}/healthz", timeout=30).text == "ok"
    assert not given_up(), "/healthz was answered only after the hung runs' deadline: the gateway's loop was held"
    assert wait_until(lambda: len(runs()) == len(jobs), 30), f"the upstream got {len(runs())} of {len(jobs)} requests"
    assert wait_until(lambda: all(name in results for name in slow), 30), "some slow runs never returned"
    early = given_up()
    reached = runs()
    for name, client, upstream, _fault in jobs[:len(slow)]:
        response, _took = results[name]
        sent = f"the upstream sent {reached[name].events_sent} events and ended {reached[name].end}"
        assert isinstance(response, httpx.Response), f"{name}: {response!r}"
        assert response.status_code == 200, f"{name} ({client} <- {upstream}): {response.text}; {sent}"
        assert Reply(client, response).error is None, f"{name} ({client} <- {upstream}): {response.text}; {sent}"
        assert_numbered(client, response, 8)
    assert not early, (f"{early} were given up on (their {LOAD_FIRST_EVENT:g}s deadline passed) before every slow run "
                       "was served: the hung runs held the others back, or the gateway's loop was held")
    for thread in threads:
        thread.join(30)
    assert len(results) == len(jobs), "some hung runs never returned"
    reached = runs()
    for name, client, _upstream, _fault in jobs[len(slow):]:
        response, took = results[name]
        assert isinstance(response, httpx.Response), f"{name}: {response!r}"
        assert_error_before_start(response, 504, "upstream_timeout", f"did not answer within {LOAD_FIRST_EVENT:g}s",
                                  client)
        assert took >= LOAD_FIRST_EVENT, f"{name} was given up on after {took:.2f}s, before its deadline"
        assert_upstream_released(reached[name])
    assert wait_until(lambda: world.in_flight() == 0, 3)


# -- an upstream that closes idle connections


@pytest.mark.parametrize(("client", "upstream"), [("ag-ui", "ag-kit"), ("agent-respond", "vercel"),
                                                ("ag-kit", "agent-respond")])
def test_upstream_connections_are_used_again_for_the_next_request(world: World, client: str, upstream: str) -> None:
    """The upstream writes its stream's end (the chunked terminator) after the run's last event, as streaming
    servers do; the gateway waits a moment for it, or every request would cost a new connection."""
    ids = [world.request_id(f"reuse-{n}") for n in range(3)]
    for request_id in ids:
        response, _ = world.ask(client, upstream, "ok?n=2", request_id=request_id)
        assert response.status_code == 200, response.text
        time.sleep(0.3)  # a person between turns: the drain after the last byte has put the connection back
    reused = [world.upstream.find(request_id).idle_before is not None for request_id in ids[1:]]
    assert reused == [True, True], "the gateway opened a new upstream connection for each request"


def test_idle_upstream_connections_are_let_go_before_the_upstream_drops_them(world: World) -> None:
    """A request sent on a kept-alive connection just as the upstream closes it for idleness may or may not have
    reached it, and a POST can't be sent again blindly: the gateway must drop idle connections before the upstream
    does (gunicorn after 2 s; uvicorn and Node after 5 s). With idle connections kept 30 s, a third of the requests
    sent in bursts at an upstream that closes idle connections after 0.3 s failed with a 502, and a real uvicorn
    upstream (`timeout_keep_alive=1`) lost about 1% of them."""
    first, second = world.request_id("idle-1"), world.request_id("idle-2")
    assert_numbered("ag-kit", world.ask("ag-kit", "ag-kit", "ok?n=2", request_id=first)[0], 2)
    time.sleep(GUNICORN_KEEPALIVE + 0.1)
    assert_numbered("ag-kit", world.ask("ag-kit", "ag-kit", "ok?n=2", request_id=second)[0], 2)
    idle = world.upstream.find(second).idle_before
    assert idle is None or idle < GUNICORN_KEEPALIVE, \
        f"the gateway sent on a connection idle for {idle:.2f}s, past the {GUNICORN_KEEPALIVE:g}s an upstream keeps it"


@pytest.mark.parametrize("client", ["ag-ui", "agent-respond"])
def test_a_request_the_upstream_received_is_not_sent_twice(world: World, client: str) -> None:
    """The upstream reads the request and closes the connection without a byte of an answer (it crashed while
    handling it) on a connection made for this request. That is a 502, not a retry: the agent may have acted on the
    request (run tools, stored the turn), and POST is not idempotent (RFC 9110 9.2.2); only a stale pooled
    connection, which cannot have delivered the request, may be retried."""
    request_id = world.request_id("drop")
    response, _ = world.ask(client, "ag-kit", "drop", request_id=request_id)
    assert_error_before_start(response, 502, "upstream_error", "upstream unreachable", client)
    time.sleep(0.2)
    copies = [c for c in list(world.upstream.calls) if c.request_id == request_id]
    assert len(copies) == 1, f"the upstream received the request {len(copies)} times"
    world.assert_clean(client, "ag-kit")


# -- the conversation store fails


def test_redis_outage_mid_conversation_refuses_turns_that_need_history_and_recovers(tmp_path: Path) -> None:
    """An AG-Kit client (new messages only) in front of an AG-UI agent (full history): the gateway's Redis store
    is what gives the agent the earlier turns. While Redis is down such a turn is refused, never answered as a
    first turn; once Redis is back (empty: it keeps nothing on disk) conversations are stored again."""
    with Served(create_agent_app("ag-ui")) as agent, RedisServer() as redis:
        config = GatewayConfig.model_validate({
            "store": {"url": redis.url},
            "routes": [{"name": "kit", "paths": ["/kit"], "client_dialects": ["ag-kit"],
                        "upstream": {"url": f"{agent.url}/agui", "dialect": "ag-ui"},
                        "timeouts": {"connect": 1, "first_event": 10, "idle": 10, "total": 20}}]})
        with Served(create_app(config)) as gateway, httpx.Client(timeout=20) as http:
            def say(text: str) -> tuple[httpx.Response, float]:
                started = time.monotonic()
                response = http.post(f"{gateway.url}/kit", json=request_body(
                    "ag-kit", [user_message("ag-kit", text)], "redis-outage"))
                return response, time.monotonic() - started

            assert "You said: one. (turn 1)" in Reply("ag-kit", say("one")[0]).text
            assert "You said: two. (turn 2)" in Reply("ag-kit", say("two")[0]).text
            redis.stop()
            assert http.get(f"{gateway.url}/readyz").status_code == 503
            during, took = say("three")
            assert during.status_code == 503 and during.json()["error"]["code"] == "store_unavailable", during.text
            assert took < STORE_PATIENCE + 2, f"a dead Redis made the turn take {took:.1f}s"
            assert http.get(f"{gateway.url}/healthz").text == "ok"
            redis.start()
            assert wait_until(lambda: http.get(f"{gateway.url}/readyz").status_code == 200, 10)
            assert "You said: four. (turn 1)" in Reply("ag-kit", say("four")[0]).text  # the restarted Redis is empty
            assert "You said: five. (turn 2)" in Reply("ag-kit", say("five")[0]).text, "not stored again"
            assert wait_until(lambda: in_flight(http, gateway.url) == 0, 3)


def test_a_hung_redis_costs_a_turn_no_more_than_the_stores_patience(tmp_path: Path) -> None:
    """Redis stops answering without closing its connections (SIGSTOP: a hung server, a network partition). A turn
    that needs its history is answered promptly all the same: refused once the store's patience has run out."""
    with Served(create_agent_app("ag-ui")) as agent, RedisServer() as redis:
        config = GatewayConfig.model_validate({
            "store": {"url": redis.url},
            "routes": [{"name": "kit", "paths": ["/kit"], "client_dialects": ["ag-kit"],
                        "upstream": {"url": f"{agent.url}/agui", "dialect": "ag-ui"},
                        "timeouts": {"connect": 1, "first_event": 30, "idle": 30, "total": 60}}]})
        with Served(create_app(config)) as gateway, httpx.Client(timeout=20) as http:
            body = request_body("ag-kit", [user_message("ag-kit", "one")], "redis-hang")
            assert "(turn 1)" in Reply("ag-kit", post(http, f"{gateway.url}/kit", body)).text
            redis.freeze()
            try:
                started = time.monotonic()
                body = request_body("ag-kit", [user_message("ag-kit", "two")], "redis-hang")
                try:
                    refused = http.post(f"{gateway.url}/kit", json=body, timeout=HUNG_REDIS_BUDGET + 1)
                except httpx.TimeoutException:
                    pytest.fail(f"no answer within {HUNG_REDIS_BUDGET + 1:g}s while Redis hangs")
                took = time.monotonic() - started
                assert refused.status_code == 503, refused.text
                assert took < HUNG_REDIS_BUDGET, f"a hung Redis held the turn for {took:.1f}s"
            finally:
                redis.thaw()


HUNG_REDIS_BUDGET = STORE_PATIENCE + 3  # the last read may start just before it runs out: one timeout more
WEATHER_TOOL = {"name": "get_location", "description": "Where the user is",
                "parameters": {"type": "object", "properties": {"precision": {"type": "string"}},
                               "required": ["precision"]}}


def test_gateway_restart_with_a_client_tool_pending_continues_the_conversation(tmp_path: Path) -> None:
    """SQLite store, AG-Kit client, AG-UI agent (full history): the agent asks the client to run a tool, the gateway
    restarts, and the tool's result, sent alone as AG-Kit does, reaches the agent with the whole history around it:
    the user's request and the pending call, restored from the file."""
    with Served(create_agent_app("ag-ui")) as agent:
        config = tmp_path / "gateway.yaml"
        config.write_text(f"""
store: {{url: "sqlite:///conversations.db"}}
routes:
  - name: kit
    paths: [/kit]
    client_dialects: [ag-kit]
    upstream: {{url: "{agent.url}/agui", dialect: ag-ui}}
""")
        with GatewayProcess(config) as gateway, httpx.Client(timeout=20) as http:
            first = Reply("ag-kit", post(http, f"{gateway.url}/kit", request_body(
                "ag-kit", [user_message("ag-kit", "use the tool please")], "restart-tool", tools=[WEATHER_TOOL])))
            call = next(e for e in first.events if isinstance(e, ToolCallStart))
            assert call.name == "get_location" and first.finished is not None
            gateway.restart()
            tool = {"role": "tool", "content": "Berlin", "toolCallId": call.tool_call_id}
            second = Reply("ag-kit", post(http, f"{gateway.url}/kit", request_body("ag-kit", [tool], "restart-tool")))
            assert "The tool said: Berlin." in second.text
            sent = http.get(f"{agent.url}/_requests").json()[-1]["body"]["messages"]
            assert [m["role"] for m in sent] == ["user", "assistant", "tool"], sent
            assert sent[0]["content"] == "use the tool please"
            assert [c["id"] for c in sent[1]["toolCalls"]] == [call.tool_call_id]
            assert sent[2]["toolCallId"] == call.tool_call_id
            third = Reply("ag-kit", post(http, f"{gateway.url}/kit", request_body(
                "ag-kit", [user_message("ag-kit", "thanks")], "restart-tool")))
            assert "You said: thanks. (turn 2)" in third.text


# -- an abandoned run is stopped upstream


@pytest.mark.parametrize(("fault", "prefix", "why"), [
    ("hang-between?after=2", "/quiet", "idle deadline"),
    ("forever?gap=0.01", "/tight", "total deadline"),
    (f"huge?size={TIGHT_EVENT_BYTES * 2}", "", "oversized event"),
])
def test_every_abandoned_a2a_task_is_cancelled_upstream(world: World, fault: str, prefix: str, why: str) -> None:
    """An A2A task outlives its stream: whatever makes the gateway give up on the run (a deadline, a limit, not only
    the client leaving), the upstream is sent CancelTask for it, once."""
    request_id = world.request_id("abandon")
    response, _ = world.ask("ag-ui", "a2a", fault, prefix=prefix, request_id=request_id)
    assert response.status_code == 200, why

    def cancels() -> list[Call]:
        return [c for c in list(world.upstream.calls) if c.request_id == request_id and b'"CancelTask"' in c.body]

    assert wait_until(lambda: len(cancels()) == 1, 3), f"no CancelTask after the {why}"
    assert len(cancels()) == 1
