"""Who gets through: API keys per route, concurrency limits, CORS for browser clients, request shape limits."""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import uvicorn
from e2e import Reply, post, request_body, user_message
from inkeep_upstream import create_inkeep_app
from servers import Served, free_port

from gateway.agent.server import create_agent_app
from gateway.config import ConfigError, GatewayConfig, key_id, parse_config
from gateway.conversations.store import MemoryStore
from gateway.core.events import Interrupt
from gateway.core.ids import new_id
from gateway.server.app import create_app
from gateway.server.connections import http_server
from gateway.server.operations.logs import HumanFormatter


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


# -- conversations belong to a principal


def ag_kit_gateway(agent_kit: Served, **route: object) -> Served:
    config = GatewayConfig.model_validate({"routes": [{"paths": ["/in"], "client_dialects": ["ag-kit"],
                                                       "upstream": {"url": agent_kit.url + "/agui",
                                                                    "dialect": "ag-ui"}, **route}],
                                           "store": {"url": "memory://", "max_conversations": 50,
                                                     "max_conversations_per_principal": 10}})
    return Served(create_app(config))


def say(http: httpx.Client, url: str, conversation: str, text: str, **headers: str) -> Reply:
    body = request_body("ag-kit", [user_message("ag-kit", text)], conversation)
    return Reply("ag-kit", post(http, url, body, headers=headers))


def test_another_key_with_the_same_conversation_id_reaches_none_of_its_history(agent: Served) -> None:
    """The AG-UI upstream is sent the whole stored history: a second key naming the first key's conversation id
    must start from nothing, and the first key's next turn must not see the second key's message."""
    httpx.delete(agent.url + "/_requests")
    with ag_kit_gateway(agent, auth={"keys": ["key-a", "key-b"], "tenants": {"acme": ["key-c", "key-d"]}}) as gw, \
            httpx.Client(timeout=10) as http:
        url = f"{gw.url}/in"
        say(http, url, "shared-id", "my card is 4111", authorization="Bearer key-a")
        say(http, url, "shared-id", "what did I say?", authorization="Bearer key-b")
        say(http, url, "shared-id", "and now?", authorization="Bearer key-a")
        sent = [[m["content"] for m in r["body"]["messages"] if m["role"] == "user"]
                for r in httpx.get(agent.url + "/_requests").json()]
        assert sent[1] == ["what did I say?"]  # key B: nothing of key A's
        assert sent[2] == ["my card is 4111", "and now?"]  # key A: its own, none of B's
        say(http, url, "team", "noted by c", authorization="Bearer key-c")
        say(http, url, "team", "seen by d?", authorization="Bearer key-d")  # a tenant shares, as configured
        sent = [[m["content"] for m in r["body"]["messages"] if m["role"] == "user"]
                for r in httpx.get(agent.url + "/_requests").json()]
        assert sent[-1] == ["noted by c", "seen by d?"]


def test_a_client_id_cannot_reach_an_eval_runs_derived_conversation(agent: Served) -> None:
    httpx.delete(agent.url + "/_requests")
    config = GatewayConfig.model_validate({"routes": [{"paths": ["/in", "/eval"],
                                                       "client_dialects": ["ag-kit", "agent-respond"],
                                                       "upstream": {"url": agent.url + "/agui", "dialect": "ag-ui"}}],
                                           "store": {"url": "memory://"}})
    with Served(create_app(config)) as gw, httpx.Client(timeout=10) as http:
        eval_turn = {"messages": [{"role": "user", "content": "secret eval prompt"}],
                     "metadata": {"test_case_id": "tc-1", "turn_index": 0}}
        assert post(http, f"{gw.url}/eval", eval_turn).status_code == 200
        for guess in ("derived:tc-1", "in:derived:tc-1", "route0:derived:tc-1"):
            say(http, f"{gw.url}/in", guess, "hello")
        sent = [r["body"]["messages"] for r in httpx.get(agent.url + "/_requests").json()][1:]
        assert all(len(messages) == 1 for messages in sent)


def test_anonymous_callers_evict_their_own_history_not_a_keyed_callers(agent: Served) -> None:
    config = GatewayConfig.model_validate({"routes": [
        {"name": "open", "paths": ["/open"], "client_dialects": ["ag-kit"],
         "upstream": {"url": agent.url + "/agui", "dialect": "ag-ui"}},
        {"name": "keyed", "paths": ["/keyed"], "client_dialects": ["ag-kit"], "auth": {"keys": ["k"]},
         "upstream": {"url": agent.url + "/agui", "dialect": "ag-ui"}}],
        "store": {"url": "memory://", "max_conversations": 40, "max_conversations_per_principal": 10}})
    with Served(create_app(config)) as gw, httpx.Client(timeout=10) as http:
        say(http, f"{gw.url}/keyed", "mine", "remember me", authorization="Bearer k")
        for index in range(60):
            say(http, f"{gw.url}/open", f"flood-{index}", "x")
        httpx.delete(agent.url + "/_requests")
        say(http, f"{gw.url}/keyed", "mine", "still there?", authorization="Bearer k")
        sent = httpx.get(agent.url + "/_requests").json()[-1]["body"]["messages"]
        assert [m["content"] for m in sent if m["role"] == "user"] == ["remember me", "still there?"]


def test_a_tenant_header_scopes_an_open_routes_conversations(agent: Served) -> None:
    httpx.delete(agent.url + "/_requests")
    with ag_kit_gateway(agent, tenant_header="X-Tenant") as gw, httpx.Client(timeout=10) as http:
        say(http, f"{gw.url}/in", "c", "from one", **{"x-tenant": "one"})
        say(http, f"{gw.url}/in", "c", "from two", **{"x-tenant": "two"})
        sent = [[m["content"] for m in r["body"]["messages"] if m["role"] == "user"]
                for r in httpx.get(agent.url + "/_requests").json()]
        assert sent == [["from one"], ["from two"]]
        bad = post(http, f"{gw.url}/in", request_body("ag-kit", [user_message("ag-kit", "x")], "c"),
                   headers={"x-tenant": "a\tb"})
        assert bad.status_code == 400


def test_a_key_removed_from_keys_file_stops_working_without_a_restart(agent: Served, tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text("old-key\n")
    with gateway_for(agent, auth={"keys_file": str(keys)}) as gateway, httpx.Client(timeout=10) as http:
        body = request_body("ag-ui", [user_message("ag-ui", "hi")])
        assert post(http, f"{gateway.url}/in", body, headers={"x-api-key": "old-key"}).status_code == 200
        keys.write_text("new-key\n")
        os.utime(keys, (time.time() + 5, time.time() + 5))
        time.sleep(1.1)
        assert post(http, f"{gateway.url}/in", body, headers={"x-api-key": "old-key"}).status_code == 401
        assert post(http, f"{gateway.url}/in", body, headers={"x-api-key": "new-key"}).status_code == 200


# -- before admission: deadlines and cost bounds


def raw_request(port: int, head: bytes, body_pieces: list[bytes], gap: float) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head)
        for piece in body_pieces:
            time.sleep(gap)
            try:
                sock.sendall(piece)
            except OSError:
                break
        sock.settimeout(10)
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
                if b"\r\n\r\n" in answer:
                    break
        except OSError:
            pass
        return answer


def test_a_stalled_body_is_answered_408_and_holds_no_slot(agent: Served) -> None:
    with gateway_for(agent, timeouts={"request_body": 0.5}, limits={"max_streams": 1, "min_body_rate": 1000}) \
            as gateway, httpx.Client(timeout=10) as http:
        port = int(gateway.url.rsplit(":", 1)[1])
        body = orjson.dumps(request_body("ag-ui", [user_message("ag-ui", "hi")]))
        head = (b"POST /in HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
                % len(body))
        stalled = threading.Thread(target=raw_request, args=(port, head, [body[:5]], 0.0))
        stalled.start()
        time.sleep(0.2)
        assert post(http, f"{gateway.url}/in", request_body("ag-ui", [user_message("ag-ui", "hi")])
                    ).status_code == 200  # the stalled body holds no slot of the route's one
        answer = raw_request(port, head, [body[i:i + 2] for i in range(0, 40, 2)], 0.2)  # 10 bytes a second
        assert answer.startswith(b"HTTP/1.1 408"), answer[:100]
        stalled.join()


def test_request_bodies_past_the_process_budget_are_a_503(agent: Served) -> None:
    config = GatewayConfig.model_validate({"routes": [{"paths": ["/in"], "client_dialects": ["ag-ui"],
                                                       "upstream": {"url": agent.url + "/agui", "dialect": "ag-ui"}}],
                                           "max_body_bytes_in_flight": 1000, "store": {"url": "memory://"}})
    with Served(create_app(config)) as gateway, httpx.Client(timeout=10) as http:
        body = request_body("ag-ui", [user_message("ag-ui", "x" * 2000)])
        response = post(http, f"{gateway.url}/in", body)
        assert response.status_code == 503 and response.json()["error"]["code"] == "overloaded"
        assert post(http, f"{gateway.url}/in", request_body("ag-ui", [user_message("ag-ui", "hi")])
                    ).status_code == 200


def test_a_slow_request_head_is_cut_off_and_connections_past_the_cap_get_503(agent: Served) -> None:
    config = GatewayConfig.model_validate({"routes": [{"paths": ["/in"], "client_dialects": ["ag-ui"],
                                                       "upstream": {"url": agent.url + "/agui", "dialect": "ag-ui"}}],
                                           "store": {"url": "memory://"}})
    http_server.HEAD_SECONDS = 0.5
    server = uvicorn.Server(uvicorn.Config(create_app(config), host="127.0.0.1", port=0, log_level="warning",
                                           limit_concurrency=3, http=http_server.HeadDeadlineProtocol))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        loris = socket.create_connection(("127.0.0.1", port))
        loris.sendall(b"POST /in HTTP/1.1\r\nhost: 127.0.0.1\r\n")  # and never the rest
        loris.settimeout(5)
        assert loris.recv(1024) == b""  # closed by the server once the head's time is up
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
        answer = raw_request(port, b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n", [], 0)
        assert answer.startswith(b"HTTP/1.1 503"), answer[:60]
        for sock in [loris, *idle]:
            sock.close()
    finally:
        http_server.HEAD_SECONDS = 10.0
        server.should_exit = True
        thread.join(5)


# -- client strings


def test_a_request_id_that_is_not_short_and_plain_is_replaced(agent: Served) -> None:
    with gateway_for(agent) as gateway, httpx.Client(timeout=10) as http:
        body = request_body("ag-ui", [user_message("ag-ui", "hi")])
        kept = post(http, f"{gateway.url}/in", body, headers={"x-request-id": "trace-123"})
        assert kept.headers["x-request-id"] == "trace-123"
        for evil in ("x" * 129, "a;b", "<script>", "a b"):
            replaced = post(http, f"{gateway.url}/in", body, headers={"x-request-id": evil})
            assert replaced.headers["x-request-id"] != evil and replaced.headers["x-request-id"].startswith("req")


@pytest.mark.parametrize("body", [
    {"threadId": "t" * 300, "runId": "r", "messages": []},
    {"threadId": "t\nforged access line", "runId": "r", "messages": []},
    {"threadId": "t", "runId": "r", "messages": [{"id": "m" * 300, "role": "user", "content": "hi"}]},
    {"threadId": "t\x9b2J", "runId": "r", "messages": []},  # C1 controls: CSI, and NEL below
    {"threadId": "t", "runId": "r\x85forged", "messages": []},
])
def test_ids_past_their_limit_or_with_control_characters_are_a_422(agent: Served, body: dict[str, object]) -> None:
    with gateway_for(agent) as gateway, httpx.Client(timeout=10) as http:
        response = post(http, f"{gateway.url}/in", body)
        assert response.status_code == 422 and "at most 256 characters" in response.json()["error"]["message"]


def test_the_human_log_format_escapes_control_characters() -> None:
    record = logging.LogRecord("agent_gateway.access", logging.INFO, "", 0, "request", None, None)
    record.conversation_id = "c\n12:00:00 INFO    request forged=1\x1b[2J\x9b2J\x85\u2028"
    line = HumanFormatter().format(record)
    assert not any(c in line for c in "\n\x1b\x9b\x85\u2028") and "c\\n12:00:00" in line and "\\x9b2J" in line


# -- smaller


def test_upstream_error_bodies_and_addresses_only_with_debug_errors(agent: Served) -> None:
    closed = free_port()
    for debug in (False, True):
        config = GatewayConfig.model_validate({"debug_errors": debug, "store": {"url": "memory://"}, "routes": [
            {"paths": ["/in"], "client_dialects": ["ag-ui"],
             "upstream": {"url": f"http://127.0.0.1:{closed}/agui", "dialect": "ag-ui"}}]})
        with Served(create_app(config)) as gateway, httpx.Client(timeout=10) as http:
            response = post(http, f"{gateway.url}/in", request_body("ag-ui", [user_message("ag-ui", "hi")]))
        assert response.status_code == 502
        assert (f"127.0.0.1:{closed}" in response.text) is debug


def test_a_request_without_content_type_is_refused_and_options_never_runs_the_agent(agent: Served) -> None:
    httpx.delete(agent.url + "/_requests")
    with gateway_for(agent, cors={"allow_origins": ["https://app.example"]}) as gateway, \
            httpx.Client(timeout=10) as http:
        body = orjson.dumps(request_body("ag-ui", [user_message("ag-ui", "hi")]))
        assert http.post(f"{gateway.url}/in", content=body).status_code == 415
        options = http.request("OPTIONS", f"{gateway.url}/in", content=body)
        assert options.status_code == 204 and "POST" in options.headers["allow"]
        assert httpx.get(agent.url + "/_requests").json() == []
        redirect = http.post(f"{gateway.url}/in/", content=body, headers={"host": "192.0.2.66"})  # an address passes
        assert "192.0.2.66" not in redirect.headers.get("location", "")


@pytest.mark.parametrize(("route", "expected"), [
    ("auth: {keys: [k]}\n    forward_headers: [Authorization]", "carries the gateway's own API key"),
    ("cors: {allow_origins: ['*'], allow_credentials: true}", "allow_credentials"),
    ("tenant_header: x-tenant\n    auth: {keys: [k]}", "tenant_header is for routes without auth"),
])
def test_footguns_in_a_route_are_refused_with_one_line(route: str, expected: str) -> None:
    text = f"routes:\n  - upstream: {{url: 'http://a/', dialect: ag-ui}}\n    {route}\n"
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "gw.yaml", environ={})
    assert "\n" not in str(caught.value) and expected in str(caught.value)


def test_an_open_path_beside_a_protected_one_differing_by_a_slash_is_refused() -> None:
    text = ("routes:\n  - {paths: [/agui], auth: {keys: [k]}, upstream: {url: 'http://a/', dialect: ag-ui}}\n"
            "  - {paths: [/agui/], upstream: {url: 'http://a/', dialect: ag-ui}}\n")
    with pytest.raises(ConfigError, match="differs only by a trailing slash"):
        parse_config(text, "gw.yaml", environ={})


def test_an_upstreams_own_error_codes_do_not_become_metric_labels() -> None:
    async def upstream(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}'
                    b'\n\ndata: {"type":"RUN_ERROR","message":"no","code":"tenant-4711-quota"}\n\n'})

    with Served(upstream) as agent:
        config = GatewayConfig.model_validate({"store": {"url": "memory://"}, "routes": [
            {"paths": ["/in"], "client_dialects": ["ag-ui"], "upstream": {"url": agent.url, "dialect": "ag-ui"}}]})
        with Served(create_app(config)) as gateway, httpx.Client(timeout=10) as http:
            for index in range(3):
                post(http, f"{gateway.url}/in", request_body("ag-ui", [user_message("ag-ui", "hi")], f"c{index}"))
            metrics = http.get(f"{gateway.url}/metrics").text
    assert "tenant-4711-quota" not in metrics
    assert 'agent_gateway_errors_total{kind="upstream_error",route="route0"} 3.0' in metrics


def test_a_stream_that_ends_before_its_run_is_counted_as_truncated_not_as_an_upstream_error() -> None:
    """The gateway's own finding gets its own label: an operator tells a cut stream from an upstream that failed."""
    async def upstream(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}'
                    b'\n\n'})

    with Served(upstream) as agent:
        config = GatewayConfig.model_validate({"store": {"url": "memory://"}, "routes": [
            {"paths": ["/in"], "client_dialects": ["ag-ui"], "upstream": {"url": agent.url, "dialect": "ag-ui"}}]})
        with Served(create_app(config)) as gateway, httpx.Client(timeout=10) as http:
            body = http.post(f"{gateway.url}/in", json=request_body("ag-ui", [user_message("ag-ui", "hi")])).text
            metrics = http.get(f"{gateway.url}/metrics").text
    assert '"code":"upstream_truncated"' in body
    assert 'agent_gateway_errors_total{kind="upstream_truncated",route="route0"} 1.0' in metrics
    assert 'kind="upstream_error"' not in metrics


# -- ids sent upstream belong to the principal

KEEPING = ["ag-ui", "ag-kit", "vercel", "inkeep", "a2a"]
"""Upstreams by what they key state on: AG-UI's threadId, AG-Kit's and Inkeep's conversationId, the Vercel chat id,
A2A's contextId."""


def upstream_conversations(upstream: str, body: dict[str, Any]) -> set[str]:
    """Every id in an upstream request that the upstream may key a conversation on."""
    if upstream == "ag-ui":
        return {body["threadId"]}
    if upstream == "a2a":
        return {body["params"]["message"]["contextId"]}
    if upstream == "ag-kit":
        return {body["conversationId"]}
    return {body[name] for name in ("id", "conversationId") if name in body}


def assistant_message(dialect: str, text: str) -> dict[str, Any]:
    """What the assistant said, as a full-history client sends it back."""
    if dialect == "vercel":
        return {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": text}]}
    return {"id": "a1", "role": "assistant", "content": text}


@contextmanager
def keeping_upstream(upstream: str) -> Iterator[tuple[str, Callable[[], list[dict[str, Any]]]]]:
    """(the URL to configure, what reached the upstream so far: each request's body)."""
    if upstream == "inkeep":
        with Served(create_inkeep_app()) as inkeep:
            yield inkeep.url + "/run/api/chat", lambda: httpx.get(inkeep.url + "/captured").json()
        return
    with Served(create_agent_app(upstream)) as agent:
        path = {"ag-ui": "/agui", "ag-kit": "/send-message", "vercel": "/api/chat", "a2a": "/a2a"}[upstream]
        yield agent.url + path, lambda: [r["body"] for r in httpx.get(agent.url + "/_requests").json()
                                         if r["path"] == path]


def keyed_gateway(client: str, upstream: str, url: str, **upstream_options: object) -> Served:
    dialect = {"dialect": "vercel", "variant": "inkeep"} if upstream == "inkeep" else {"dialect": upstream}
    config = GatewayConfig.model_validate({"store": {"url": "memory://"}, "routes": [
        {"paths": ["/in"], "client_dialects": [client], "auth": {"keys": ["key-a", "key-b"]},
         "upstream": {"url": url, **dialect, **upstream_options}}]})
    return Served(create_app(config))


@pytest.mark.parametrize("upstream", KEEPING)
@pytest.mark.parametrize("client", ["ag-ui", "ag-kit", "vercel", "a2a"])
def test_two_keys_naming_one_conversation_id_never_share_the_upstreams_conversation(client: str, upstream: str
                                                                                    ) -> None:
    with keeping_upstream(upstream) as (url, received), keyed_gateway(client, upstream, url) as gateway, \
            httpx.Client(timeout=10) as http:
        def say(key: str, *messages: dict[str, Any]) -> httpx.Response:
            body = request_body(client, list(messages), "tShared")
            return post(http, f"{gateway.url}/in", body, headers={"authorization": f"Bearer {key}"})

        first = user_message(client, "my pin is 1234")
        a_first = say("key-a", first)
        b_first = say("key-b", user_message(client, "hello"))
        again = user_message(client, "and again")
        a_second = say("key-a", first, assistant_message(client, Reply(client, a_first).text), again) \
            if client in ("ag-ui", "vercel") else say("key-a", again)
        ids = [upstream_conversations(upstream, body) for body in received()]
        assert len(ids) == 3 and all(len(one) == 1 for one in ids), ids
        a, b, a_again = (one.pop() for one in ids)
        assert a != b and a == a_again  # each key its own conversation upstream, kept across turns
        assert "tShared" not in (a, b)
        for reply in (a_first, b_first, a_second):
            assert reply.status_code == 200 and a.encode() not in reply.content and b.encode() not in reply.content
        assert "turn 2" not in Reply(client, b_first).text  # B did not land in A's conversation
        if client in ("ag-ui", "a2a"):  # clients that are told their conversation's id are told their own
            assert b'"tShared"' in b_first.content


@pytest.mark.parametrize("upstream", ["ag-kit", "a2a"])
def test_a_route_of_transparent_ids_sends_the_clients_own(upstream: str) -> None:
    with keeping_upstream(upstream) as (url, received), \
            keyed_gateway("ag-ui", upstream, url, ids="transparent") as gateway, httpx.Client(timeout=10) as http:
        body = request_body("ag-ui", [user_message("ag-ui", "hi")], "tShared")
        assert post(http, f"{gateway.url}/in", body, headers={"authorization": "Bearer key-a"}).status_code == 200
        assert upstream_conversations(upstream, received()[-1]) == {"tShared"}


def test_an_answer_naming_another_callers_interrupt_never_reaches_the_upstream() -> None:
    """An A2A upstream's interrupt is named by its task: a task id is a handle on the upstream, and only the key
    whose run was interrupted may continue it."""
    with keeping_upstream("a2a") as (url, received), keyed_gateway("ag-ui", "a2a", url) as gateway, \
            httpx.Client(timeout=10) as http:
        asked = post(http, f"{gateway.url}/in", request_body("ag-ui", [user_message("ag-ui", "please interrupt")],
                                                              "tA"), headers={"authorization": "Bearer key-a"})
        task = next(e.id for e in Reply("ag-ui", asked).events if isinstance(e, Interrupt))
        for thread in ("tA", "tB"):  # B, in A's conversation id and in one of its own
            answer = request_body("ag-ui", [], thread, resume=[{"interruptId": task, "status": "resolved",
                                                                 "payload": "yes"}])
            post(http, f"{gateway.url}/in", answer, headers={"authorization": "Bearer key-b"})
        assert all("taskId" not in body["params"]["message"] for body in received()[1:])


# -- ids the gateway mints are handles nobody can guess


def test_minted_ids_are_128_random_bits_that_say_nothing_of_each_other(agent: Served) -> None:
    """A task, context or request id minted before or after another must not be derivable from it: an open A2A
    route's tasks are reached by id alone."""
    config = GatewayConfig.model_validate({"store": {"url": "memory://"}, "routes": [
        {"paths": ["/a2a"], "client_dialects": ["a2a"], "upstream": {"url": agent.url + "/agui", "dialect": "ag-ui"}}]})
    with Served(create_app(config)) as gateway, httpx.Client(timeout=10) as http:
        minted: dict[str, list[str]] = {"req": [], "task": [], "ctx": []}
        for _ in range(3):
            minted["req"].append(http.get(f"{gateway.url}/healthz").headers["x-request-id"])
            body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
                "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}}
            task = post(http, f"{gateway.url}/a2a", body, headers={"a2a-version": "1.0"}).json()["result"]["task"]
            minted["task"].append(task["id"])
            minted["ctx"].append(task["contextId"])
    for kind, ids in minted.items():
        randoms = [id_.removeprefix(f"{kind}_") for id_ in ids]
        assert all(re.fullmatch("[0-9a-f]{32}", r) for r in randoms), ids
        shared = [next(i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y)
                  for a in randoms for b in randoms if a != b]
        assert max(shared) < 8, ids  # the first hex digits two ids share


# -- resumable routes' own endpoints, and the smaller rules


@contextmanager
def resumable_gateway(**route: object) -> Iterator[tuple[Served, Served]]:
    """(the built-in AG-Kit agent, paced so that a "slow" run lasts about a second, and an AG-UI route resumable in
    front of it)."""
    with Served(create_agent_app("ag-kit", pace=0.05)) as agent:
        config = GatewayConfig.model_validate({"store": {"url": "memory://"}, "routes": [
            {"name": "r", "paths": ["/in"], "client_dialects": ["ag-ui"], "resumable": True,
             "upstream": {"url": agent.url + "/send-message", "dialect": "ag-kit"}, **route}]})
        with Served(create_app(config)) as gateway:
            yield agent, gateway


def running(gateway: Served, thread: str, **headers: str) -> threading.Thread:
    """A slow run of `thread`, read to its end in a thread of its own, once it has started."""
    body = request_body("ag-ui", [user_message("ag-ui", "slow please")], thread)
    reader = threading.Thread(target=post, args=(httpx.Client(timeout=10), f"{gateway.url}/in", body, headers))
    reader.start()
    with httpx.Client(timeout=10) as http:
        deadline = time.monotonic() + 5
        while 'agent_gateway_streams_in_flight{route="r"} 1.0' not in http.get(f"{gateway.url}/metrics").text:
            assert time.monotonic() < deadline, "the run did not start"
            time.sleep(0.02)
    return reader


def test_a_stop_a_page_on_another_origin_could_send_is_refused() -> None:
    """A browser POSTs text/plain (or no content type) cross-origin without asking first: a stop must say JSON."""
    with resumable_gateway() as (_agent, gateway), httpx.Client(timeout=10) as http:
        reader = running(gateway, "t-csrf")
        for headers in ({}, {"content-type": "text/plain"}, {"content-type": "application/x-www-form-urlencoded"}):
            refused = http.post(f"{gateway.url}/in/t-csrf/stop", content=b"{}", headers=headers)
            assert refused.status_code == 415, refused.text
        stopped = http.post(f"{gateway.url}/in/t-csrf/stop", headers={"content-type": "application/json"})
        reader.join(10)
        assert stopped.status_code == 202


@pytest.mark.parametrize("sent", ["\u00b2", "abc", "-1", "1e3", "0x10", "1 2"])
def test_a_last_event_id_that_is_not_ascii_digits_is_a_400_and_never_a_second_run(sent: str) -> None:
    with resumable_gateway() as (agent, gateway), httpx.Client(timeout=10) as http:
        body = request_body("ag-ui", [user_message("ag-ui", "hello")], "t-lei")
        assert post(http, f"{gateway.url}/in", body).status_code == 200
        again = http.post(f"{gateway.url}/in", content=orjson.dumps(body),
                          headers={"content-type": b"application/json", "last-event-id": sent.encode()})
        assert again.status_code == 400 and "Last-Event-ID" in again.json()["error"]["message"], again.text
        far = post(http, f"{gateway.url}/in", body, headers={"last-event-id": "999999999999"})
        assert far.status_code == 200 and b"RUN_STARTED" not in far.content  # the rest after it: nothing
        assert len(httpx.get(agent.url + "/_requests").json()) == 1


@pytest.mark.parametrize("conversation", ["x" * 300, "a%C2%9Bb", "a%09b"])
def test_a_conversation_id_in_a_path_is_bounded_as_one_in_a_body_is(conversation: str) -> None:
    with resumable_gateway() as (_agent, gateway), httpx.Client(timeout=10) as http:
        for method in ("GET", "DELETE"):
            response = http.request(method, f"{gateway.url}/in/{conversation}/stream")
            assert response.status_code == 422 and len(response.content) < 300, response.text[:300]


def test_the_conversation_endpoints_log_who_called_them(caplog: pytest.LogCaptureFixture) -> None:
    with resumable_gateway(auth={"keys": ["key-a"]}) as (_agent, gateway), httpx.Client(timeout=10) as http, \
            caplog.at_level(logging.INFO, logger="agent_gateway.access"):
        reader = running(gateway, "t-who", authorization="Bearer key-a")
        assert http.delete(f"{gateway.url}/in/t-who/stream", headers={"authorization": "Bearer key-a"}
                           ).status_code == 202
        reader.join(10)
        deadline = time.monotonic() + 5
        while not (stops := [r for r in caplog.records if getattr(r, "outcome", None) == "stopped"]):
            assert time.monotonic() < deadline
            time.sleep(0.02)
    assert getattr(stops[0], "key_id", None) == key_id("key-a")


@pytest.mark.parametrize("headers", [[("x-tenant", "")], [("x-tenant", "one"), ("x-tenant", "two")],
                                     [("x-tenant", "one"), ("x-tenant", "one")]])
def test_an_empty_or_repeated_tenant_header_is_a_400(agent: Served, headers: list[tuple[str, str]]) -> None:
    with ag_kit_gateway(agent, tenant_header="X-Tenant") as gw, httpx.Client(timeout=10) as http:
        body = orjson.dumps(request_body("ag-kit", [user_message("ag-kit", "x")], "c"))
        response = http.post(f"{gw.url}/in", content=body, headers=[("content-type", "application/json"), *headers])
        assert response.status_code == 400 and "x-tenant" in response.json()["error"]["message"].lower()


def test_an_agent_card_built_from_the_host_header_varies_by_it(agent: Served) -> None:
    config = GatewayConfig.model_validate({"store": {"url": "memory://"}, "allowed_hosts": ["one.example"], "routes": [
        {"paths": ["/a2a"], "client_dialects": ["a2a"], "upstream": {"url": agent.url + "/agui", "dialect": "ag-ui"}}]})
    with Served(create_app(config)) as gateway:
        card = httpx.get(f"{gateway.url}/a2a/.well-known/agent-card.json", headers={"host": "one.example"})
    assert "host" in card.headers["vary"].lower() and "one.example" in card.text


def test_an_integer_past_64_bits_is_refused_not_rounded(agent: Served) -> None:
    httpx.delete(agent.url + "/_requests")
    with gateway_for(agent) as gateway, httpx.Client(timeout=10) as http:
        exact = (b'{"threadId":"t","runId":"r","messages":[],'
                 b'"state":{"id":18446744073709551615,"low":-9223372036854775808}}')
        assert http.post(f"{gateway.url}/in", content=exact, headers={"content-type": "application/json"}
                         ).status_code == 200
        assert httpx.get(agent.url + "/_requests").json()[-1]["body"]["state"] == {
            "id": 18446744073709551615, "low": -9223372036854775808}
        for number in (b"123456789012345678901234567890", b"18446744073709551616", b"-9223372036854775809"):
            body = b'{"threadId":"t","runId":"r","messages":[],"state":{"n":%s,"s":"1234567890123456789012"}}' % number
            refused = http.post(f"{gateway.url}/in", content=body, headers={"content-type": "application/json"})
            assert refused.status_code == 400 and number.decode() in refused.json()["error"]["message"]
        digits_in_a_string = b'{"threadId":"t","runId":"r","messages":[],"state":{"s":"1234567890123456789012"}}'
        assert http.post(f"{gateway.url}/in", content=digits_in_a_string, headers={"content-type": "application/json"}
                         ).status_code == 200


@pytest.mark.parametrize("debug", [False, True])
def test_an_upstreams_in_band_error_reaches_its_client_whatever_debug_errors_says(agent: Served, debug: bool
                                                                                  ) -> None:
    """An error the agent sent in its stream is the agent's word to its client, as its text is: it passes. What
    the gateway hides without `debug_errors` is what the agent did not send to a client: an error page's body, an
    address it could not reach."""
    route = {"paths": ["/in"], "client_dialects": ["vercel"], "upstream": {"url": agent.url + "/agui",
                                                                           "dialect": "ag-ui"}}
    config = GatewayConfig.model_validate({"debug_errors": debug, "store": {"url": "memory://"}, "routes": [route]})
    with Served(create_app(config)) as gateway, httpx.Client(timeout=10) as http:
        reply = Reply("vercel", post(http, f"{gateway.url}/in",
                                     request_body("vercel", [user_message("vercel", "please fail")])))
    assert reply.error is not None and reply.error.message == "scripted failure"


# -- listings: a route that cannot tell its callers apart lists one conversation at a time


def a2a_and_langgraph_route(agent: Served, **route: object) -> Served:
    """A2A at /a2a and LangGraph at /lg, in front of the built-in agent."""
    routes = [{"name": name, "paths": [path], "client_dialects": [dialect],
               "upstream": {"url": agent.url + "/agui", "dialect": "ag-ui"}, **route}
              for name, path, dialect in (("tasks", "/a2a", "a2a"), ("graph", "/lg", "langgraph"))]
    return Served(create_app(GatewayConfig.model_validate({"routes": routes}), store=MemoryStore()))


def rpc(http: httpx.Client, url: str, method: str, params: dict[str, Any], **headers: str) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    answer: dict[str, Any] = http.post(url, json=body, headers={"a2a-version": "1.0", **headers}).json()
    return answer


def a2a_secret(http: httpx.Client, url: str, context: str, **headers: str) -> str:
    message = {"messageId": new_id("msg"), "role": "ROLE_USER", "contextId": context,
               "parts": [{"text": "victim password is hunter2"}]}
    task: dict[str, Any] = rpc(http, url, "SendMessage", {"message": message}, **headers)["result"]["task"]
    return str(task["id"])


def langgraph_secret(http: httpx.Client, url: str, **headers: str) -> str:
    thread = str(uuid.uuid4())
    said = {"type": "human", "content": "victim password is hunter2"}
    body = {"assistant_id": "graph", "input": {"messages": [said]}, "stream_mode": ["values"]}
    assert http.post(f"{url}/threads/{thread}/runs/stream", json=body, headers=headers).status_code == 200
    return thread


def test_an_open_route_lists_no_task_of_a_context_its_caller_did_not_name(agent: Served) -> None:
    """Without keys or a tenant header every caller is one principal: a ListTasks that names no context would hand
    any caller everyone's tasks, their history included, and with their ids the power to continue or cancel them."""
    with a2a_and_langgraph_route(agent) as gateway, httpx.Client(timeout=10) as http:
        url = gateway.url + "/a2a"
        victims = new_id("ctx")
        task = a2a_secret(http, url, victims)
        everything = rpc(http, url, "ListTasks", {})
        mine = rpc(http, url, "ListTasks", {"contextId": new_id("ctx")})["result"]
        named = rpc(http, url, "ListTasks", {"contextId": victims})["result"]
    assert everything["error"]["code"] == -32004 and "hunter2" not in orjson.dumps(everything).decode()
    assert "cannot tell its callers apart" in everything["error"]["message"]
    assert mine["tasks"] == [] and mine["totalSize"] == 0
    assert [t["id"] for t in named["tasks"]] == [task]  # the context's id is the key to it, as before


def test_an_open_route_searches_only_the_threads_its_caller_names(agent: Served) -> None:
    with a2a_and_langgraph_route(agent) as gateway, httpx.Client(timeout=10) as http:
        url = gateway.url + "/lg"
        thread = langgraph_secret(http, url)
        everything = http.post(f"{url}/threads/search", json={})
        named = http.post(f"{url}/threads/search", json={"ids": [thread, str(uuid.uuid4())]})
        runs = http.get(f"{url}/threads/{thread}/runs")
    assert everything.status_code == 403 and "hunter2" not in everything.text
    assert "cannot tell its callers apart" in everything.json()["detail"]
    assert [t["thread_id"] for t in named.json()] == [thread]
    assert runs.status_code == 200 and len(runs.json()) == 1


def test_a_route_that_knows_its_callers_lists_each_its_own(agent: Served) -> None:
    with a2a_and_langgraph_route(agent, tenant_header="x-tenant") as gateway, httpx.Client(timeout=10) as http:
        task = a2a_secret(http, gateway.url + "/a2a", new_id("ctx"), **{"x-tenant": "acme"})
        thread = langgraph_secret(http, gateway.url + "/lg", **{"x-tenant": "acme"})
        tasks = {tenant: rpc(http, gateway.url + "/a2a", "ListTasks", {}, **{"x-tenant": tenant})["result"]["tasks"]
                 for tenant in ("acme", "other")}
        threads = {tenant: http.post(gateway.url + "/lg/threads/search", json={}, headers={"x-tenant": tenant}).json()
                   for tenant in ("acme", "other")}
        untold = rpc(http, gateway.url + "/a2a", "ListTasks", {})  # no header: one of the anonymous callers
    assert [t["id"] for t in tasks["acme"]] == [task] and tasks["other"] == []
    assert [t["thread_id"] for t in threads["acme"]] == [thread] and threads["other"] == []
    assert untold["error"]["code"] == -32004

# -- JSON nested inside what a client sends


def nested_json(depth: int) -> str:
    """An object `depth` levels deep, as JSON text; the standard library writes it deeper than orjson would."""
    value: Any = "bottom"
    for _ in range(depth):
        value = {"d": value}
    return json.dumps(value)


def compaction_of(items_json: str) -> dict[str, Any]:
    """A compaction item as `POST /v1/responses/compact` makes them: the items it stands for, encoded."""
    return {"type": "compaction", "encrypted_content": "agw1." + base64.urlsafe_b64encode(items_json.encode()).decode()}


def answered(response: httpx.Response) -> tuple[int, str]:
    """The status, and the error's message when it is one."""
    return response.status_code, response.json()["error"]["message"] if response.status_code >= 400 else ""


def test_a_compactions_items_are_held_to_the_routes_depth_limit_as_if_written_out(agent: Served) -> None:
    config = GatewayConfig.model_validate({"store": {"url": "memory://"}, "routes": [
        {"paths": ["/v1/responses"], "client_dialects": ["openai-responses"], "limits": {"max_json_depth": 10},
         "upstream": {"url": agent.url + "/agui", "dialect": "ag-ui"}}]})
    with Served(create_app(config)) as gateway, httpx.Client(timeout=10) as http:
        def answer(input_json: str) -> tuple[int, str]:
            body = '{"model": "agent", "input": [' + input_json + ', {"role": "user", "content": "go on"}]}'
            response = http.post(f"{gateway.url}/v1/responses", content=body,
                                 headers={"content-type": "application/json"})
            return answered(response)

        seen = set()
        for depth in (900, *range(4, 10)):  # the items at 3 of the body's 10 levels, their output one deeper
            item = '{"type": "function_call_output", "call_id": "c1", "output": ' + nested_json(depth) + "}"
            written_out, compacted = answer(item), answer(orjson.dumps(compaction_of(f"[{item}]")).decode())
            assert compacted == written_out, depth
            seen.add(written_out)
        assert seen == {(200, ""), (400, "request body is nested deeper than 10 levels")}


def ag_ui_history(arguments: str, result: str) -> list[dict[str, Any]]:
    return [{"id": "u1", "role": "user", "content": "hi"},
            {"id": "a1", "role": "assistant", "toolCalls": [{"id": "c1", "type": "function",
                                                             "function": {"name": "look", "arguments": arguments}}]},
            {"id": "t1", "role": "tool", "toolCallId": "c1", "content": result},
            {"id": "u2", "role": "user", "content": "and now"}]


@pytest.mark.parametrize("upstream", ["vercel", "a2a", "langgraph"])
def test_json_in_a_clients_strings_deeper_than_the_gateway_writes_goes_on_as_text(upstream: str) -> None:
    """Tool call arguments and results are strings that usually hold JSON, which the gateway reads to pass it on
    as JSON: nested deeper than any body it takes (orjson writes 254 levels), it goes on as the text it was."""
    deep = nested_json(300)
    path = {"vercel": "/api/chat", "a2a": "/a2a", "langgraph": "/"}[upstream]
    with Served(create_agent_app(upstream)) as agent_of_upstream:
        config = GatewayConfig.model_validate({"store": {"url": "memory://"}, "routes": [
            {"paths": ["/in"], "client_dialects": ["ag-ui"],
             "upstream": {"url": agent_of_upstream.url + path, "dialect": upstream}}]})
        with Served(create_app(config)) as gateway, httpx.Client(timeout=10) as http:
            if upstream == "langgraph":  # a history its thread has not heard then goes whole, to a new thread
                first = post(http, f"{gateway.url}/in", request_body("ag-ui", [user_message("ag-ui", "hi")], "deep"))
                assert first.status_code == 200
            body = request_body("ag-ui", ag_ui_history(deep, deep), "deep")
            reply = Reply("ag-ui", post(http, f"{gateway.url}/in", body))
            assert reply.error is None and "You said: and now" in reply.text
        sent = httpx.get(agent_of_upstream.url + "/_requests").json()[-1]["body"]
    assert deep in orjson.dumps(sent).decode().replace('\\"', '"')  # as text, whole


def test_a_tool_schema_sent_as_json_text_is_held_to_the_depth_limit_as_one_sent_as_an_object(agent: Served) -> None:
    config = GatewayConfig.model_validate({"store": {"url": "memory://"}, "routes": [
        {"paths": ["/in"], "client_dialects": ["ag-kit"], "limits": {"max_json_depth": 10},
         "upstream": {"url": agent.url + "/agui", "dialect": "ag-ui"}}]})
    with Served(create_app(config)) as gateway, httpx.Client(timeout=10) as http:
        def answer(parameters: Any) -> tuple[int, str]:
            body = {"conversationId": "schema", "messages": [{"role": "user", "content": "hi"}],
                    "tools": [{"name": "look", "description": "", "parameters": parameters}]}
            response = http.post(f"{gateway.url}/in", content=json.dumps(body),
                                 headers={"content-type": "application/json"})
            return answered(response)

        seen = set()
        for depth in (6, 7, 8, 300):  # the schema at 4 of the body's 10 levels
            schema = nested_json(depth)
            as_text = answer(schema)
            assert as_text == answer(json.loads(schema)), depth
            seen.add(as_text)
        assert seen == {(200, ""), (400, "request body is nested deeper than 10 levels")}


def test_a_404_names_only_the_paths_the_callers_key_opens(agent: Served) -> None:
    upstream = {"url": agent.url + "/agui", "dialect": "ag-ui"}
    config = GatewayConfig.model_validate({"store": {"url": "memory://"}, "routes": [
        {"name": "open", "paths": ["/open"], "upstream": upstream},
        {"name": "team", "paths": ["/team-only"], "auth": {"keys": ["team-key"]}, "upstream": upstream},
        {"name": "ops", "paths": ["/ops-only"], "auth": {"keys": ["ops-key"]}, "upstream": upstream}]})
    with Served(create_app(config)) as gateway, httpx.Client(timeout=10) as http:
        def listed(headers: dict[str, str]) -> str:
            missing = http.get(f"{gateway.url}/nowhere", headers=headers)
            assert missing.status_code == 404
            return str(missing.json()["error"]["message"])

        anonymous = listed({})
        assert "/open" in anonymous and "/healthz" in anonymous
        assert "/team-only" not in anonymous and "/ops-only" not in anonymous
        team = listed({"authorization": "Bearer team-key"})
        assert "/open" in team and "/team-only" in team and "/ops-only" not in team
        assert "/ops-only" in listed({"x-api-key": "ops-key"})
        assert "/team-only" not in listed({"authorization": "Bearer not-a-key"})
