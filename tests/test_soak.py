"""The soak, short form for CI: many streams at once through a real gateway process, nothing lost, nothing leaked.

- 200 concurrent numbered streams for 10 s through every dialect pair (`bench/soak.py`, whose full form is 1,000
  streams for 60 s): no event lost, duplicated or reordered, no stream failed, the gateway's RSS flat from the first
  half of the window to the second;
- a client that opens a fast endless stream and never reads: backpressure reaches the upstream (its writes block,
  the bytes it managed to send stay bounded), the gateway's RSS does not grow with what the upstream offers, the
  upstream is let go when the client leaves, and at the run's total timeout even if it never does;
- 200 conversations at once, three turns each alternating between two gateway processes that share one Redis:
  every conversation keeps its own history.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from e2e import request_body, user_message
from faults import FaultUpstream, GatewayProcess, wait_until
from redis_server import RedisServer
from servers import Served

from bench.soak import soak, write_config
from gateway.agent.server import create_agent_app

SOAK_STREAMS = 200
SOAK_SECONDS = 10.0
SOAK_EVENTS = 20
SOAK_GAP = 0.05
RSS_DRIFT_KB = 16 * 1024
"""How much the gateway's mean RSS may grow from the first half of the soak (after its warm-up quarter) to the
second: ~1,000 streams end in between, so this catches a leak of 16 KiB a stream or more. Ten seconds cannot tell
a smaller leak from the allocator still filling its arenas, nor from garbage left to a rare collection; the full
soak (bench/soak.py, 60 s) can."""


@pytest.fixture(scope="module")
def upstream() -> Iterator[FaultUpstream]:
    with FaultUpstream() as server:
        yield server


def test_200_concurrent_streams_lose_nothing_and_the_gateway_rss_stays_flat(tmp_path: Path,
                                                                           upstream: FaultUpstream) -> None:
    config = write_config(tmp_path, upstream.base, SOAK_EVENTS, SOAK_GAP)
    with GatewayProcess(config) as gateway:
        report = asyncio.run(soak(gateway.url, gateway.pid, streams=SOAK_STREAMS, seconds=SOAK_SECONDS,
                                  events=SOAK_EVENTS, gap=SOAK_GAP, stream_timeout=30))
        alive = gateway.process is not None and gateway.process.poll() is None
        log = gateway.log_tail()
    print(f"\n{report.summary()}")
    assert alive, f"the gateway died during the soak:\n{log}"
    assert report.completed >= SOAK_STREAMS * 2, f"too few streams completed: {report.summary()}"
    assert (report.lost, report.duplicated, report.reordered, report.errors) == (0, 0, 0, 0), report.summary()
    assert abs(report.rss_drift_kb) < RSS_DRIFT_KB, f"the gateway's memory is not flat: {report.summary()}"


# -- a client that never reads


def _stalled_client(gateway: str, path: str, body: dict[str, Any], request_id: str) -> socket.socket:
    """Post a request and never read the answer; a small receive buffer, so the kernel holds little for us."""
    host, port = gateway.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    sock.connect((host, int(port)))
    payload = orjson.dumps(body)
    head = (f"POST {path} HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(payload)}\r\nx-request-id: {request_id}\r\n\r\n").encode()
    sock.sendall(head + payload)
    return sock


@pytest.fixture
def stall_gateway(tmp_path: Path, upstream: FaultUpstream) -> Iterator[GatewayProcess]:
    """A gateway whose routes stream ~2 KiB AG-Kit events as fast as the upstream can write them, to AG-UI clients:
    `/stall` for a minute (and a client may stall for 30 s), `/stall-total` cut at `STALL_TOTAL` seconds."""
    config = tmp_path / "stall.yaml"
    flood = {"url": upstream.url("ag-kit", "forever", gap=0, pad=2048), "dialect": "ag-kit"}
    config.write_text(orjson.dumps({"routes": [
        {"name": "stall", "paths": ["/stall"], "client_dialects": ["ag-ui"], "upstream": flood,
         "timeouts": {"connect": 2, "first_event": 30, "idle": 30, "total": 60}},
        {"name": "stall-total", "paths": ["/stall-total"], "client_dialects": ["ag-ui"], "upstream": flood,
         "timeouts": {"connect": 2, "first_event": 5, "idle": 5, "total": STALL_TOTAL}},
    ]}).decode())
    with GatewayProcess(config) as gateway:
        yield gateway


STALL_TOTAL = 1.0
FLOOD = request_body("ag-ui", [user_message("ag-ui", "flood")])


def test_client_that_never_reads_holds_the_upstream_back_and_the_gateway_rss_bounded(
        stall_gateway: GatewayProcess, upstream: FaultUpstream) -> None:
    """The upstream offers ~2 KiB events as fast as it can write; the client reads nothing. What moves is what the
    buffers between them hold (the kernel's, the gateway's bounded ones): after that the upstream's writes block."""
    gateway = stall_gateway
    baseline = gateway.rss_kb()
    sock = _stalled_client(gateway.url, "/stall", FLOOD, "stalled")
    try:
        call = upstream.find("stalled")
        time.sleep(1.5)
        sent_early, rss_early = call.bytes_sent, gateway.rss_kb()
        time.sleep(1.5)
        sent_late, rss_late = call.bytes_sent, gateway.rss_kb()
        print(f"\nstalled client: upstream sent {sent_early / 2**20:.1f} MiB by 1.5 s, {sent_late / 2**20:.1f} MiB"
              f" by 3 s; gateway RSS {baseline / 1024:.1f} -> {rss_early / 1024:.1f} -> {rss_late / 1024:.1f} MiB")
        assert call.end is None, f"the stream ended early: {call.end}"
        assert sent_late < 64 * 2**20, f"the upstream pushed {sent_late / 2**20:.0f} MiB at a client not reading"
        assert sent_late - sent_early < 2 * 2**20, \
            f"backpressure never reached the upstream: it sent {(sent_late - sent_early) / 2**20:.1f} MiB more"
        assert rss_late - baseline < 48 * 1024, f"the gateway grew by {(rss_late - baseline) / 1024:.0f} MiB"
        assert rss_late - rss_early < 4 * 1024, f"the gateway kept growing: {rss_early} -> {rss_late} KiB"
    finally:
        sock.close()
    assert wait_until(lambda: call.end is not None, 2), "the upstream stream outlived the client"
    assert call.end == "peer_closed"


def test_client_that_never_reads_is_cut_off_at_the_total_timeout(stall_gateway: GatewayProcess,
                                                                 upstream: FaultUpstream) -> None:
    sock = _stalled_client(stall_gateway.url, "/stall-total", FLOOD, "stalled-total")
    try:
        call = upstream.find("stalled-total")
        released = wait_until(lambda: call.end is not None, STALL_TOTAL + 2)
        assert released, f"the gateway still holds the upstream {STALL_TOTAL + 2:g}s into a {STALL_TOTAL:g}s run"
        assert call.end == "peer_closed"
    finally:
        sock.close()


# -- conversations shared through Redis


CONVERSATIONS = 200
TURNS = 3


def _shared_config(tmp_path: Path, redis: str, agkit: str, agui: str) -> Path:
    config = tmp_path / "shared.yaml"
    timeouts = {"connect": 5, "first_event": 30, "idle": 30, "total": 60}
    config.write_text(orjson.dumps({"store": {"url": redis}, "routes": [
        {"name": "eval", "paths": ["/eval"], "client_dialects": ["agent-respond"],
         "upstream": {"url": f"{agkit}/send-message", "dialect": "ag-kit"}, "timeouts": timeouts},
        {"name": "kit", "paths": ["/kit"], "client_dialects": ["ag-kit"],
         "upstream": {"url": f"{agui}/agui", "dialect": "ag-ui"}, "timeouts": timeouts}]}).decode())
    return config


async def _conversation(gateways: list[str], index: int) -> list[str]:
    """Three turns, alternating gateways; the problems found (empty when the history held).

    Each conversation has its own client, as each eval run or browser tab would. One httpx pool shared by 200
    concurrent conversations can close a kept-alive connection it has just handed to a waiting request (httpcore
    1.0.9, encode/httpcore#1110): the request then fails on the client's side with a `ClosedResourceError`, after
    the gateway may have already passed the turn upstream, which looked like lost history.
    """
    async with httpx.AsyncClient(timeout=60) as http:
        return await _turns(http, gateways, index)


async def _turns(http: httpx.AsyncClient, gateways: list[str], index: int) -> list[str]:
    problems: list[str] = []
    eval_history: list[dict[str, Any]] = []
    for turn in range(1, TURNS + 1):
        gateway = gateways[(index + turn) % 2]
        said = f"conversation {index} turn {turn}"
        if index % 2:  # the eval platform: no ids at all, the store maps its transcript to the agent's conversation
            eval_history.append({"role": "user", "content": said, "tool_calls": None, "tool_call_id": None,
                                 "name": None})
            body = {"messages": eval_history, "metadata": {"test_case_id": f"tc-{index}",
                                                           "turn_index": len(eval_history) - 1}}
            response = await http.post(f"{gateway}/eval", content=orjson.dumps(body),
                                       headers={"content-type": "application/json"})
            reply = response.json()["messages"] if response.status_code == 200 else []
            eval_history += [{**m, "tool_calls": m.get("tool_calls"), "tool_call_id": None, "name": None}
                             for m in reply]
            text = reply[-1]["content"] if reply else response.text
        else:  # AG-Kit sends only the new message: the store holds what the AG-UI agent must be sent again
            body = request_body("ag-kit", [user_message("ag-kit", said)], f"shared-{index}")
            response = await http.post(f"{gateway}/kit", content=orjson.dumps(body),
                                       headers={"content-type": "application/json"})
            text = "".join(orjson.loads(data)["content"] for line in response.text.split("\n\n")
                           if (data := line.removeprefix("data: ")) and data.startswith("{")
                           and orjson.loads(data).get("type") == "text")
        expected = f"You said: {said}. (turn {turn})"
        if response.status_code != 200 or expected not in text:
            problems.append(f"conversation {index} turn {turn} via {gateway}: expected {expected!r}, got "
                            f"{response.status_code} {text[:160]!r}")
    return problems


def test_200_conversations_alternating_two_gateways_on_one_redis_keep_their_own_history(tmp_path: Path) -> None:
    agents = Served(create_agent_app("ag-kit")), Served(create_agent_app("ag-ui"))
    for agent in agents:  # longer than the gateway's own: the keep-alive race has its test (test_faults.py)
        agent.server.config.timeout_keep_alive = 120
    with RedisServer() as redis, agents[0] as agkit, agents[1] as agui:
        config = _shared_config(tmp_path, redis.url, agkit.url, agui.url)
        first, second = GatewayProcess(config), GatewayProcess(config)
        with contextlib.ExitStack() as running:
            for gateway in (first, second):  # both start at once
                running.callback(gateway.stop)
                gateway.launch()
            for gateway in (first, second):
                gateway.wait_ready()

            async def drive() -> list[str]:
                found = await asyncio.gather(*(_conversation([first.url, second.url], index)
                                               for index in range(CONVERSATIONS)))
                return [problem for problems in found for problem in problems]

            started = time.monotonic()
            problems = asyncio.run(drive())
            took = time.monotonic() - started
        store_errors = [line for gateway in (first, second) for line in gateway.log.read_text().splitlines()
                        if "not loaded" in line or "not saved" in line]
    print(f"\n{CONVERSATIONS} conversations x {TURNS} turns through two gateways on one Redis: {took:.1f}s, "
          f"{len(problems)} problems")
    assert not store_errors, f"{len(store_errors)} store calls failed, e.g. {store_errors[:3]}"
    assert not problems, f"{len(problems)} turns lost or mixed history, e.g. {problems[:3]}"


@pytest.mark.parametrize("script", ["bench/soak.py", "bench/resume_soak.py"])
def test_the_soak_benchmarks_run_where_only_the_bench_extra_is_installed(script: str) -> None:
    """`pip install -e '.[bench]'` brings no pytest: what the benchmarks share with the tests must not need it."""
    import subprocess
    import sys

    from helpers import ROOT

    without_pytest = ("import runpy, sys; sys.modules['pytest'] = None; sys.argv = [sys.argv[1], '--help']; "
                      "runpy.run_path(sys.argv[0], run_name='__main__')")
    ran = subprocess.run([sys.executable, "-c", without_pytest, script], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert ran.returncode == 0 and ran.stdout.startswith("usage: "), ran.stderr[-2000:]
