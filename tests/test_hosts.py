"""The names a request's Host may give (`allowed_hosts`), against DNS rebinding: a page whose DNS points its own
name at 127.0.0.1 must not reach a gateway listening there, over HTTP or a WebSocket, on a route or beside one."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from e2e import post, request_body, user_message
from servers import Served
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from gateway.agent.server import create_agent_app
from gateway.config import ConfigError, GatewayConfig, parse_config
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app
from gateway.server.operations.logs import ACCESS


@pytest.fixture(scope="module")
def agent() -> Iterator[Served]:
    with Served(create_agent_app("ag-ui")) as served:
        yield served


def gateway_for(agent: Served, **settings: object) -> Served:
    """A gateway on 127.0.0.1 with a route for each kind of client: one with the gateway's own error body (AG-UI),
    one with JSON-RPC errors (A2A), and OpenAI's, whose Responses path also takes WebSockets."""
    upstream = {"url": agent.url + "/agui", "dialect": "ag-ui"}
    config = GatewayConfig.model_validate({"routes": [
        {"name": "ui", "paths": ["/agui"], "client_dialects": ["ag-ui"], "upstream": upstream},
        {"name": "a2a", "paths": ["/a2a"], "client_dialects": ["a2a"], "upstream": upstream},
        {"name": "openai", "client_dialects": ["openai-responses"], "upstream": upstream}], **settings})
    return Served(create_app(config, store=MemoryStore()))


@pytest.fixture(scope="module")
def loopback(agent: Served) -> Iterator[Served]:
    with gateway_for(agent) as served:
        yield served


def run(gateway: Served, host: str, path: str = "/agui", dialect: str = "ag-ui") -> httpx.Response:
    with httpx.Client(timeout=10) as http:
        return post(http, gateway.url + path, request_body(dialect, [user_message(dialect, "hi")]), {"host": host})


def test_a_gateway_on_loopback_refuses_a_name_that_is_not_a_loopback_one(agent: Served, loopback: Served) -> None:
    httpx.delete(agent.url + "/_requests")
    refused = run(loopback, f"evil.example:{loopback.port}")
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["code"] == "host_not_allowed"
    assert "evil.example" in error["message"] and "allowed_hosts" in error["message"]
    assert refused.headers["x-request-id"].startswith("req")
    assert httpx.get(agent.url + "/_requests").json() == []  # the run never started
    for path in ("/healthz", "/readyz", "/metrics", "/nowhere", "/v1/models"):  # what a page could read beside it
        beside = httpx.get(loopback.url + path, headers={"host": "evil.example"})
        assert (beside.status_code, beside.json()["error"]["code"]) == (400, "host_not_allowed"), path


@pytest.mark.parametrize("host", ["localhost:{port}", "127.0.0.1:{port}", "[::1]:{port}", "LocalHost:{port}",
                                  "app.localhost:{port}", "localhost", "127.0.0.2", "localhost.:{port}"])
def test_a_gateway_on_loopback_answers_loopback_names_and_addresses(loopback: Served, host: str) -> None:
    answered = run(loopback, host.format(port=loopback.port))
    assert answered.status_code == 200 and b"RUN_FINISHED" in answered.content


def test_an_address_any_port_or_no_host_at_all_cannot_be_a_rebound_name(loopback: Served) -> None:
    for host in ("192.0.2.7:8080", "[2001:db8::1]"):
        assert httpx.get(loopback.url + "/healthz", headers={"host": host}).status_code == 200, host
    with socket.create_connection(("127.0.0.1", loopback.port), timeout=5) as raw:  # HTTP/1.0: no Host
        raw.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
        assert raw.recv(4096).startswith(b"HTTP/1.1 200 ")


def test_each_client_is_told_in_its_dialect(loopback: Served) -> None:
    evil = f"evil.example:{loopback.port}"
    a2a = run(loopback, evil, "/a2a", "a2a")
    rpc = a2a.json()
    assert rpc["jsonrpc"] == "2.0" and "allowed_hosts" in rpc["error"]["message"]
    assert rpc["error"]["data"][0]["reason"] == "HOST_NOT_ALLOWED"
    responses = run(loopback, evil, "/v1/responses", "openai-responses")
    assert responses.status_code == 400
    assert responses.json()["error"]["type"] == "invalid_request_error"  # what the openai SDKs read
    assert responses.json()["error"]["code"] == "host_not_allowed"


def test_a_websocket_handshake_naming_another_host_is_refused_before_it_is_accepted(loopback: Served) -> None:
    def handshake(host: str) -> None:
        with connect(f"ws://{host}:{loopback.port}/v1/responses", open_timeout=5,
                     sock=socket.create_connection(("127.0.0.1", loopback.port), timeout=5)):
            pass

    with pytest.raises(InvalidStatus) as refused:
        handshake("evil.example")  # the page's name, its DNS pointing at 127.0.0.1
    assert refused.value.response.status_code == 403
    handshake("localhost")


def test_allowed_hosts_lists_the_names_and_replaces_the_loopback_default(agent: Served) -> None:
    with gateway_for(agent, allowed_hosts=["Gateway.Example.com", "*.corp.example"]) as gateway:
        for host in ("gateway.example.com", "GATEWAY.example.com:443", "a.corp.example", "b.a.corp.example:80",
                     "10.0.0.5"):
            assert httpx.get(gateway.url + "/healthz", headers={"host": host}).status_code == 200, host
        for host in ("corp.example", "evil.example", "localhost", "gateway.example.com.evil.example"):
            refused = httpx.get(gateway.url + "/healthz", headers={"host": host})
            assert refused.status_code == 400, host
            assert "allowed_hosts does not list it" in refused.json()["error"]["message"]
    with gateway_for(agent, allowed_hosts=["*"]) as gateway:
        assert run(gateway, "evil.example").status_code == 200


def test_a_refused_host_gets_an_access_line(loopback: Served, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger=ACCESS):
        httpx.post(loopback.url + "/agui", content=b"{}", headers={"host": "evil.example", "x-request-id": "rebound-1",
                                                                  "content-type": "application/json"})
        deadline = time.monotonic() + 5
        while not (lines := [r for r in caplog.records if getattr(r, "request_id", "") == "rebound-1"]):
            assert time.monotonic() < deadline
            time.sleep(0.01)
    line = vars(lines[0])
    assert (line["status"], line["outcome"], line["error"], line["path"]) == (400, "rejected", "host_not_allowed",
                                                                             "/agui")


@pytest.mark.parametrize(("server", "refused"), [
    (("127.0.0.1", 8080), True), (("127.3.2.1", 8080), True), (("::1", 8080), True),
    (("::ffff:127.0.0.1", 8080), True),  # IPv4 over a dual-stack socket
    (("10.1.2.3", 8080), False), (("192.168.1.5", 8080), False), (("2001:db8::5", 8080), False),
    (None, False), (("/run/gateway.sock", None), False),
])
def test_unset_the_rule_follows_the_address_the_connection_came_in_on(server: tuple[str, int] | None,
                                                                      refused: bool) -> None:
    """A gateway on 0.0.0.0 (Docker, Kubernetes) answers any name on its network addresses; reached through
    loopback, where a rebound name leads, it answers loopback names only."""
    from gateway.server.connections.hosts import HostCheck

    names = HostCheck(None).names_for(server)
    if not refused:
        assert names is None  # nothing to check: a request there pays the address's lookup only
        return
    assert names is not None and names.refused([(b"host", b"evil.example:8080")]) == "evil.example:8080"
    assert names.refused([(b"host", b"localhost:8080")]) is None
    for odd in (b"localhost:8080@evil.example", b"[::1]evil.example", b"localhost:", b"[::1"):
        assert names.refused([(b"host", odd)]) == odd.decode(), odd  # only a port may follow the name
    assert names.refused([(b"accept", b"*/*")]) is None


def test_allowed_hosts_entries_are_checked_as_the_configuration_loads() -> None:
    route = "routes:\n  - upstream: {url: 'http://a/', dialect: ag-ui}\n"
    config = parse_config(route + "allowed_hosts: [Gateway.Example.COM., '*.Corp.example', '[::1]', '*']\n")
    assert config.allowed_hosts == ["gateway.example.com", "*.corp.example", "::1", "*"]
    for entry, said in (("localhost:8080", "name the host without its port"),
                        ("https://gateway.example.com", "name the host without its port"),
                        ("*.", "is not a host name"), ("a b", "is not a host name"), ("ex*ample.com", "not a host")):
        with pytest.raises(ConfigError, match=said):
            parse_config(route + f"allowed_hosts: ['{entry}']\n")

