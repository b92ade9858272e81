"""How a route reaches its upstream, through the whole gateway: the environment's proxies or the route's own, a
CONNECT tunnel to an https upstream, a private CA and a client certificate. The upstream is a scripted AG-Kit agent
on 127.0.0.1, behind TLS where the test says; the proxy is the CONNECT proxy of `test_proxies`.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import httpx
import pytest
from e2e import Reply, request_body, user_message
from scripted_http import Server, run
from servers import Served
from test_proxies import ConnectProxy
from test_tls import PKI
from test_tls import pki as pki  # a fixture, used by its name

from gateway.config import ConfigError, GatewayConfig, parse_config
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app

ANSWER = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 52\r\n\r\n"
          b'data: {"type":"text","content":"hi"}\n\ndata: [DONE]\n\n')


def agent(tls: ssl.SSLContext | None = None) -> Server:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(ANSWER)
        await writer.drain()
        return True

    return Server(handler, tls)


def server_context(pki: PKI, require_client: bool = False) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pki.server_cert, pki.server_key)
    if require_client:
        context.load_verify_locations(pki.ca)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


async def ask(upstream: dict[str, Any]) -> httpx.Response:
    config = GatewayConfig.model_validate({"debug_errors": True,  # TLS failures say why, for the test to read
                                           "routes": [{"paths": ["/agui"], "client_dialects": ["ag-ui"],
                                                       "upstream": {"dialect": "ag-kit", **upstream}}]})
    with Served(create_app(config, store=MemoryStore())) as gateway:
        async with httpx.AsyncClient(timeout=10) as client:
            return await client.post(gateway.url + "/agui", json=request_body("ag-ui", [user_message("ag-ui", "x")]))


def said(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    return Reply("ag-ui", httpx.Response(200, content=response.content)).text


def test_an_https_upstream_is_reached_through_the_environments_proxy(pki: PKI,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        async with agent(server_context(pki)) as server, ConnectProxy() as proxy:
            monkeypatch.setenv("HTTPS_PROXY", proxy.url())
            monkeypatch.delenv("NO_PROXY", raising=False)
            response = await ask({"url": server.url("/send-message"), "tls": {"ca_file": str(pki.ca)}})
            assert said(response) == "hi"
            assert proxy.heads and proxy.heads[0].startswith(b"CONNECT 127.0.0.1:")

    run(main)


def test_a_route_can_turn_the_environments_proxy_off(pki: PKI, monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        async with agent(server_context(pki)) as server, ConnectProxy() as proxy:
            monkeypatch.setenv("HTTPS_PROXY", proxy.url())
            response = await ask({"url": server.url("/send-message"), "proxy": False,
                                  "tls": {"ca_file": str(pki.ca)}})
            assert said(response) == "hi" and proxy.heads == []

    run(main)


def test_a_plain_http_upstream_behind_a_routes_proxy_is_asked_for_by_its_whole_url() -> None:
    async def main() -> None:
        async with agent() as forward_proxy:
            response = await ask({"url": "http://agent.internal:9000/send-message", "proxy": forward_proxy.url("")})
            assert said(response) == "hi"
            request_line = forward_proxy.requests[0].split(b"\r\n")[0]
            assert request_line == b"POST http://agent.internal:9000/send-message HTTP/1.1"
            assert b"host: agent.internal:9000" in forward_proxy.requests[0]

    run(main)


def test_a_private_ca_and_a_client_certificate_reach_an_upstream_that_asks_for_them(pki: PKI) -> None:
    async def main() -> None:
        async with agent(server_context(pki, require_client=True)) as server:
            url = server.url("/send-message")
            mutual = await ask({"url": url, "tls": {"ca_file": str(pki.ca), "client_cert": str(pki.client_cert),
                                                    "client_key": str(pki.client_key)}})
            assert said(mutual) == "hi"
            anonymous = await ask({"url": url, "tls": {"ca_file": str(pki.ca)}})
            assert anonymous.status_code == 502
            untrusted = await ask({"url": url})
            assert untrusted.status_code == 502 and "CERTIFICATE_VERIFY_FAILED" in untrusted.text

    run(main)


ROUTE = """routes:
  - upstream:
      url: https://agent.example/send-message
      dialect: ag-kit
{extra}"""


@pytest.mark.parametrize(("extra", "expected"), [
    ("      tls: {ca_file: /nonexistent/ca.pem}\n", "ca_file"),
    ("      tls: {client_key: /tmp/k.pem}\n", "client_key is set without client_cert"),
    ("      proxy: socks5://proxy:1080\n", "socks5"),
    ("      proxy: http://user:hunter2@proxy:99999\n", "proxy"),
])
def test_an_unusable_proxy_or_tls_option_is_one_line_at_load(extra: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(ROUTE.format(extra=extra), "gw.yaml")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("gw.yaml:") and expected in message, message
    assert "hunter2" not in message


def test_a_broken_proxy_in_the_environment_is_refused_at_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "socks5://proxy:1080")
    with pytest.raises(ConfigError, match="the environment's proxy for this upstream cannot be used"):
        parse_config(ROUTE.format(extra=""), "gw.yaml")
