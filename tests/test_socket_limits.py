"""A WebSocket's messages are bounded as POST bodies are, over real sockets (a `websockets` client, the gateway in
uvicorn on 127.0.0.1 as `serve` runs it, the built-in agent behind it): a message over the route's size is refused
as its frame's header arrives (close 1009); messages sent ahead of a running one wait unread, one held at most; the
bytes of a message arriving or waiting count against the process's body budget; sockets are capped per route and
per key; an idle socket keeps nothing of its last message; and the gateway process's memory under the issue's attack
stays within tens of MiB.

The built-in agent runs `slow` for about a second, and `hang` until the gateway gives up on it; any other message it
answers "You said: <the last user message>. (turn N)"."""

from __future__ import annotations

import asyncio
import contextlib
import socket as sockets
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from faults import GatewayProcess
from servers import Served
from websockets.asyncio.client import connect as connect_async
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.server.app import create_app

MiB = 1 << 20
_ENDED = ("response.completed", "response.incomplete", "response.failed", "error")


@pytest.fixture(scope="module")
def agent() -> Iterator[Served]:
    with Served(create_agent_app("ag-ui")) as served:
        yield served


def _gateway(agent: Served, *, budget: int | None = None, pings: float | None = None, **route: Any) -> Served:
    """The gateway in front of `agent`, its body budget `budget` bytes, keepalive pings every `pings` seconds
    (each answered within as long) rather than uvicorn's 20."""
    config: dict[str, Any] = {"routes": [{"name": "agent", "client_dialects": ["openai-responses"],
                                          "upstream": {"url": agent.url + "/agui", "dialect": "ag-ui"}, **route}],
                              "store": {"url": "memory://"}}
    if budget is not None:
        config["max_body_bytes_in_flight"] = budget
    options = {"ws_ping_interval": pings, "ws_ping_timeout": pings} if pings is not None else {}
    return Served(create_app(GatewayConfig.model_validate(config)), **options)


def _socket_url(gateway: Served | GatewayProcess) -> str:
    return gateway.url.replace("http://", "ws://") + "/v1/responses"


def _create(text: str, pad: int = 0) -> str:
    """A `response.create` whose last user message is `text`, after one of `pad` bytes (the agent answers the
    last: "You said: <text>. (turn 2)")."""
    padding = [{"role": "user", "content": "x" * pad}] if pad else []
    return orjson.dumps({"type": "response.create", "model": "agent", "store": False,
                         "input": [*padding, {"role": "user", "content": text}]}).decode()


def _answer(socket: ClientConnection) -> dict[str, Any]:
    """The next request's terminal event: its response, or the error it was refused with."""
    while True:
        event: dict[str, Any] = orjson.loads(socket.recv(timeout=20))
        if event["type"] in _ENDED:
            return event


def _said(event: dict[str, Any]) -> str:
    assert event["type"] == "response.completed", event
    return str(event["response"]["output"][0]["content"][0]["text"])


def _started(socket: ClientConnection, text: str) -> None:
    """Send `text` and wait until its run is under way."""
    socket.send(_create(text))
    while orjson.loads(socket.recv(timeout=10))["type"] != "response.output_text.delta":
        pass


def _frame_head(size: int) -> bytes:
    """The header of a masked text frame of `size` bytes, as a client sends it."""
    return struct.pack("!BBQ", 0x81, 0x80 | 127, size) + b"\0\0\0\0"


def _close_code(socket: ClientConnection) -> int | None:
    with pytest.raises(ConnectionClosed) as closed:
        while True:
            socket.recv(timeout=10)
    return closed.value.rcvd.code if closed.value.rcvd is not None else None


def test_a_message_larger_than_the_route_takes_is_refused_as_its_header_arrives(agent: Served) -> None:
    with _gateway(agent, limits={"max_body_bytes": MiB}) as gateway:
        with connect(_socket_url(gateway)) as socket:
            socket.socket.sendall(_frame_head(MiB + 1))  # and not one byte of it
            assert _close_code(socket) == 1009
        with connect(_socket_url(gateway)) as socket:  # the route's limit, not the process's: up to it is taken
            socket.send(_create("at the limit", pad=MiB - 200))
            assert _said(_answer(socket)) == "You said: at the limit. (turn 2)"


def test_messages_sent_ahead_of_a_running_one_wait_unread_then_run_in_turn(agent: Served) -> None:
    ahead = 40
    # room for two messages of 1 MiB: had the gateway read further ahead than one, some would be refused
    with _gateway(agent, budget=3 * MiB, limits={"max_body_bytes": 2 * MiB}) as gateway, \
            connect(_socket_url(gateway), max_size=None) as socket:
        socket.send(_create("slow"))
        sent_at: list[float] = []

        def send_ahead() -> None:
            with contextlib.suppress(ConnectionClosed):  # the answers say what became of them
                for n in range(ahead):
                    socket.send(_create(f"ahead {n}", pad=MiB))
                    sent_at.append(time.monotonic())

        sender = threading.Thread(target=send_ahead, daemon=True)
        sender.start()
        assert _answer(socket)["type"] == "response.completed"
        ran = time.monotonic()
        answers = [_answer(socket) for _ in range(ahead)]
        sender.join(10)
    sent_while_it_ran = sum(1 for at in sent_at if at < ran)
    assert sent_while_it_ran < ahead // 2, f"{sent_while_it_ran} of {ahead} MiB sent while one ran: none waited"
    assert [_said(answer) for answer in answers] == [f"You said: ahead {n}. (turn 2)" for n in range(ahead)]


_POST = {"model": "agent", "input": [{"role": "user", "content": "x" * MiB}, {"role": "user", "content": "hi"}]}
"""A POST of just over 1 MiB."""


def _overloaded(http: httpx.Client, gateway: Served) -> bool:
    """Whether a POST of just over 1 MiB is refused for the process's body budget (else it is answered)."""
    response = http.post(gateway.url + "/v1/responses", json=_POST)
    assert response.status_code in (200, 503), response.text
    return response.status_code == 503 and response.json()["error"]["code"] == "overloaded"


def test_a_message_waiting_its_turn_counts_against_the_body_budget(agent: Served) -> None:
    with _gateway(agent, budget=2 * MiB, timeouts={"idle": 2}) as gateway, httpx.Client(timeout=20) as http, \
            connect(_socket_url(gateway)) as socket:
        _started(socket, "hang on")  # until the route's idle time, 2 s
        socket.send(_create("waiting", pad=MiB + MiB // 4))  # 1.25 MiB of 2 held while it waits
        time.sleep(0.3)
        assert _overloaded(http, gateway)
        assert _answer(socket)["type"] == "response.failed"
        assert _said(_answer(socket)) == "You said: waiting. (turn 2)"
        assert not _overloaded(http, gateway)  # given back as it ran


def test_a_client_that_leaves_while_a_message_waits_is_let_go_of(agent: Served) -> None:
    before = httpx.get(agent.url + "/_disconnects").json()
    with _gateway(agent, budget=2 * MiB, pings=0.3) as gateway, httpx.Client(timeout=20) as http:
        socket = connect(_socket_url(gateway))
        _started(socket, "hang on")
        socket.send(_create("waiting", pad=MiB + MiB // 4))
        time.sleep(0.3)
        assert _overloaded(http, gateway)
        socket.socket.shutdown(sockets.SHUT_RDWR)  # gone, without the closing handshake nobody would read
        socket.socket.close()
        deadline = time.monotonic() + 5
        while httpx.get(agent.url + "/_disconnects").json() == before:
            assert time.monotonic() < deadline, "the upstream's run went on after its client left"
            time.sleep(0.1)
        assert not _overloaded(http, gateway)


def test_a_keepalive_pong_behind_a_waiting_message_does_not_end_the_connection(agent: Served) -> None:
    with _gateway(agent, pings=0.1) as gateway, connect(_socket_url(gateway)) as socket:
        socket.send(_create("slow"))  # a second: ten pings' time, their pongs unread behind the next message
        socket.send(_create("after it"))
        assert _answer(socket)["type"] == "response.completed"
        assert _said(_answer(socket)) == "You said: after it. (turn 1)"


def test_a_message_on_its_way_in_counts_against_the_body_budget(agent: Served) -> None:
    with _gateway(agent, budget=2 * MiB) as gateway, httpx.Client(timeout=20) as http:
        with connect(_socket_url(gateway), close_timeout=0.5) as trickle:
            trickle.socket.sendall(_frame_head(3 * MiB // 2) + b"x" * (5 * MiB // 4))  # 1.25 MiB of 1.5, then none
            time.sleep(0.3)
            assert _overloaded(http, gateway)
            with connect(_socket_url(gateway)) as late, pytest.raises(ConnectionClosed) as closed:
                late.send(_create("no room", pad=MiB))
                late.recv(timeout=10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
        time.sleep(0.3)
        assert not _overloaded(http, gateway)


def test_sockets_past_the_routes_cap_are_refused_in_the_dialect_then_closed_1013(agent: Served) -> None:
    with _gateway(agent, limits={"max_sockets": 2}) as gateway:
        url = _socket_url(gateway)
        with connect(url) as first, connect(url):
            with connect(url) as third:
                refusal = orjson.loads(third.recv(timeout=10))
                assert refusal["type"] == "error" and refusal["status"] == 429
                assert refusal["error"]["code"] == "too_many_streams" and "2 WebSockets" in refusal["error"]["message"]
                assert _close_code(third) == 1013
            first.send(_create("still served"))
            assert _said(_answer(first)) == "You said: still served. (turn 1)"
        with connect(url) as again:  # the slots were given back as the sockets closed
            again.send(_create("again"))
            assert _said(_answer(again)) == "You said: again. (turn 1)"


def test_sockets_past_a_keys_cap_are_refused_and_other_keys_are_not(agent: Served) -> None:
    with _gateway(agent, auth={"keys": ["k1", "k2"]}, limits={"max_sockets_per_key": 1}) as gateway:
        url = _socket_url(gateway)
        with connect(url, additional_headers={"authorization": "Bearer k1"}):
            with connect(url, additional_headers={"authorization": "Bearer k1"}) as second:
                refusal = orjson.loads(second.recv(timeout=10))
                assert refusal["status"] == 429 and "this key" in refusal["error"]["message"]
                assert _close_code(second) == 1013
            with connect(url, additional_headers={"authorization": "Bearer k2"}) as other:
                other.send(_create("other key"))
                assert _said(_answer(other)) == "You said: other key. (turn 1)"


def _vm(pid: int, key: str) -> int:
    """A line of /proc/<pid>/status, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) // 1024
    raise AssertionError(f"no {key} for {pid}")


async def _attack(url: str, size: int, count: int) -> int:
    """One socket: a run that hangs, then `count` messages of `size` bytes sent behind it, each given a second
    before the client gives up on it; how many went out."""
    message = _create("ahead", pad=size - 200)
    socket = await connect_async(url, max_size=None)
    sent = 0
    try:
        await socket.send(_create("hang on"))
        while orjson.loads(await socket.recv())["type"] != "response.output_text.delta":
            pass
        for _ in range(count):
            await asyncio.wait_for(socket.send(message), 1)
            sent += 1
        await asyncio.sleep(1)  # the gateway holds what it read
    except (ConnectionClosed, TimeoutError):
        pass
    finally:
        socket.transport.abort()
    return sent


@pytest.fixture
def gateway_process(agent: Served, tmp_path: Path) -> Iterator[GatewayProcess]:
    """`python -m gateway serve` in front of the agent, once a socket has run a request (what that loads is
    loaded)."""
    config = tmp_path / "gateway.yaml"
    config.write_text(orjson.dumps({"routes": [{"name": "agent", "client_dialects": ["openai-responses"],
                                                "upstream": {"url": agent.url + "/agui", "dialect": "ag-ui"}}],
                                    "store": {"url": "memory://"}, "drain_seconds": 0}).decode())
    with GatewayProcess(config) as gateway:
        with connect(_socket_url(gateway)) as socket:
            socket.send(_create("hello"))
            _answer(socket)
        yield gateway


def test_idle_sockets_keep_nothing_of_their_last_message(gateway_process: GatewayProcess) -> None:
    refused = orjson.dumps({"type": "response.create", "input": "x" * (4 * MiB - 1024)}).decode()  # no model
    with contextlib.ExitStack() as idle:
        for n in range(33):
            socket = idle.enter_context(connect(_socket_url(gateway_process), max_size=None))
            socket.send(refused)
            assert orjson.loads(socket.recv(timeout=10))["error"]["param"] == "model"
            if n == 0:  # reading the first message grew the heap as far as reading one does
                before = _vm(gateway_process.pid, "VmRSS")
        grown = _vm(gateway_process.pid, "VmRSS") - before
    assert grown < 64, f"32 more idle sockets, each after one message of 4 MiB, hold {grown} MiB"  # not 128


def test_the_issues_attack_costs_the_gateway_process_tens_of_mib(gateway_process: GatewayProcess) -> None:
    url = _socket_url(gateway_process)
    before = _vm(gateway_process.pid, "VmRSS")

    async def attack() -> list[int]:
        # the issue's: four sockets, seven messages of 15 MB each (under uvicorn's 16 MiB frame limit); and four
        # sending messages just under the route's 4 MiB
        return await asyncio.gather(*[_attack(url, 15_000_000, 7) for _ in range(4)],
                                    *[_attack(url, 4 * MiB - 1024, 7) for _ in range(4)])

    sent = asyncio.run(attack())
    grown = _vm(gateway_process.pid, "VmHWM") - before
    assert grown < 64, f"the gateway grew by {grown} MiB from {before} MiB; messages sent on each socket: {sent}"
