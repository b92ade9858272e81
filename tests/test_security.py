"""Who gets through: API keys per route, concurrency limits, CORS for browser clients, request shape limits."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from e2e import Reply, post, request_body, user_message
from servers import Served

from gateway.agent import create_agent_app
from gateway.app import create_app
from gateway.config import ConfigError, GatewayConfig, parse_config
from gateway.store import MemoryStore


@pytest.fixture(scope="module")
def agent() -> Iterator[Served]:
    with Served(create_agent_app("ag-ui")) as served:
        yield served


def gateway_for(agent: Served, **route: object) -> Served:
    config = GatewayConfig.model_validate({"routes": [{"paths": ["/in"], "client_dialects": ["ag-ui"],
                                                       "upstream": {"url": agent.url + "/agui", "dialect": "ag-ui"},
                                                       **route}]})
    return Served(create_app(config, store=MemoryStore()))


def test_a_route_with_keys_answers_401_without_calling_the_upstream(agent: Served, tmp_path: Path) -> None:
    secrets = tmp_path / "keys"
    secrets.write_text("# one key per line\nfile-key\n")
    httpx.delete(agent.url + "/_requests")
    with gateway_for(agent, auth={"keys": ["env-key", ""], "keys_file": str(secrets)}) as gateway, \
            httpx.Client(timeout=10) as http:
        body = request_body("ag-ui", [user_message("ag-ui", "hi")])
        for headers in ({}, {"authorization": "Bearer wrong"}, {"x-api-key": "env-key-but-longer"}):
            response = post(http, f"{gateway.url}/in", body, headers=headers)
            assert response.status_code == 401 and response.json()["error"]["code"] == "unauthorized"
        assert httpx.get(agent.url + "/_requests").json() == []
        for headers in ({"authorization": "Bearer env-key"}, {"x-api-key": "file-key"}):
            reply = Reply("ag-ui", post(http, f"{gateway.url}/in", body, headers=headers))
            assert "You said: hi" in reply.text
        forwarded = httpx.get(agent.url + "/_requests").json()[-1]["headers"]
        assert "x-api-key" not in forwarded and "authorization" not in forwarded  # the client's key stays here


def test_auth_without_any_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="auth needs at least one key"):
        parse_config("routes:\n  - upstream: {url: 'http://a/', dialect: ag-ui}\n    auth: {keys: ['${K:-}']}\n",
                     environ={})


def test_concurrent_streams_over_the_limit_get_a_429(agent: Served) -> None:
    with gateway_for(agent, auth={"keys": ["k"]}, limits={"max_streams_per_key": 1}) as gateway, \
            httpx.Client(timeout=10) as http:
        body = request_body("ag-ui", [user_message("ag-ui", "slow please")])
        opened = threading.Event()

        def hold() -> None:
            with http.stream("POST", f"{gateway.url}/in", json=body, headers={"x-api-key": "k"}) as response:
                chunks = response.iter_raw()
                next(chunks)
                opened.set()
                for _ in chunks:
                    pass

        holder = threading.Thread(target=hold)
        holder.start()
        assert opened.wait(10)
        second = post(http, f"{gateway.url}/in", body, headers={"x-api-key": "k"})
        holder.join(10)
        assert second.status_code == 429 and second.json()["error"]["code"] == "too_many_streams"
        third = Reply("ag-ui", post(http, f"{gateway.url}/in", request_body("ag-ui", [user_message("ag-ui", "hi")]),
                                    headers={"x-api-key": "k"}))
        assert "You said: hi" in third.text  # the slot is free again


def test_browser_preflight_and_cors_headers_for_allowed_origins_only(agent: Served) -> None:
    with gateway_for(agent, cors={"allow_origins": ["https://app.example"]}) as gateway, \
            httpx.Client(timeout=10) as http:
        preflight = http.options(f"{gateway.url}/in", headers={
            "origin": "https://app.example", "access-control-request-method": "POST",
            "access-control-request-headers": "content-type"})
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == "https://app.example"
        response = post(http, f"{gateway.url}/in", request_body("ag-ui", [user_message("ag-ui", "hi")]),
                        headers={"origin": "https://app.example"})
        assert response.headers["access-control-allow-origin"] == "https://app.example"
        assert "x-request-id" in response.headers["access-control-expose-headers"]
        refused = http.options(f"{gateway.url}/in", headers={
            "origin": "https://evil.example", "access-control-request-method": "POST"})
        assert refused.status_code == 400


def test_too_deep_or_too_many_messages_are_refused_before_parsing(agent: Served) -> None:
    with gateway_for(agent, limits={"max_json_depth": 10, "max_messages": 3}) as gateway, \
            httpx.Client(timeout=10) as http:
        deep = request_body("ag-ui", [user_message("ag-ui", "hi")], forwardedProps={"a": [[[[[[[[[[1]]]]]]]]]]})
        response = post(http, f"{gateway.url}/in", deep)
        assert response.status_code == 400 and "deeper than 10" in response.json()["error"]["message"]
        many = request_body("ag-ui", [user_message("ag-ui", str(i)) for i in range(4)])
        response = post(http, f"{gateway.url}/in", many)
        assert response.status_code == 413 and "4 messages" in response.json()["error"]["message"]
