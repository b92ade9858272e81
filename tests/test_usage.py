"""Usage per key: tokens and cost counted under the key that asked, and token budgets refused in the client's
dialect before the upstream is called, shared by the processes on one SQLite file and the replicas on one Redis."""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import redis as redis_client
from e2e import Reply, post, request_body, user_message
from prometheus_client.parser import text_string_to_metric_families
from redis_server import RedisServer
from servers import Served, free_port, wait_answering
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig, key_id
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app
from gateway.server.operations.logs import ACCESS

KEYS = {"alice": "key-alice", "bob": "key-bob"}


@pytest.fixture(scope="module")
def agent() -> Iterator[Served]:
    with Served(create_agent_app("ag-ui")) as served:
        yield served


def config(agent: Served, store: dict[str, Any] | None = None, **route: Any) -> GatewayConfig:
    return GatewayConfig.model_validate({**({"store": store} if store else {}), "routes": [
        {"name": "paid", "upstream": {"url": agent.url + "/agui", "dialect": "ag-ui"}, **route}]})


def samples(http: httpx.Client, url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(http.get(f"{url}/metrics").text) for s in family.samples}


def ask(http: httpx.Client, url: str, text: str, key: str | None = None, dialect: str = "ag-ui",
        headers: dict[str, str] | None = None) -> httpx.Response:
    path = {"ag-ui": "/agui", "openai-chat": "/v1/chat/completions"}[dialect]
    sent = {**({"x-api-key": key} if key else {}), **(headers or {})}
    return post(http, url + path, request_body(dialect, [user_message(dialect, text)], agent="paid"), headers=sent)


def upstream_calls(http: httpx.Client, agent: Served) -> int:
    return len(http.get(agent.url + "/_requests").json())


def tokens(found: dict[tuple[str, tuple[tuple[str, str], ...]], float], key: str, kind: str) -> float:
    return found.get(("agent_gateway_tokens_total", (("key_id", key), ("kind", kind), ("route", "paid"))), 0)


def test_the_builtin_agents_tokens_are_counted_per_key_in_metrics_and_the_access_log(
        agent: Served, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger=ACCESS), \
            Served(create_app(config(agent, auth={"keys": list(KEYS.values())}), store=MemoryStore())) as gateway, \
            httpx.Client(timeout=10) as http:
        assert "You said" in Reply("ag-ui", ask(http, gateway.url, "one two three", KEYS["alice"])).text
        ask(http, gateway.url, "four", KEYS["alice"])
        ask(http, gateway.url, "five six", KEYS["bob"])
        found = samples(http, gateway.url)
        deadline = time.monotonic() + 5  # the access line is written as the last byte goes: wait for it
        while len(lines := [r for r in caplog.records if r.name == ACCESS and getattr(r, "tokens", None)]) < 3:
            assert time.monotonic() < deadline
            time.sleep(0.01)
    alice, bob = key_id(KEYS["alice"]), key_id(KEYS["bob"])
    assert tokens(found, alice, "input") == 3 + 1  # a token a word of what each request sent
    assert tokens(found, alice, "output") > 0 and tokens(found, bob, "output") > 0
    assert tokens(found, bob, "input") == 2
    assert {getattr(r, "key_id", None) for r in lines} == {alice, bob}
    assert all(r.tokens["input"] > 0 and r.tokens["output"] > 0 for r in lines)


def test_a_priced_route_counts_cost_per_key_by_model_or_its_default(agent: Served) -> None:
    pricing = {"currency": "EUR", "default": {"input": 1_000_000, "output": 0},
               "models": {"builtin-agent": {"input": 0, "output": 2_000_000}}}
    with Served(create_app(config(agent, pricing=pricing), store=MemoryStore())) as gateway, \
            httpx.Client(timeout=10) as http:
        ask(http, gateway.url, "hi")
        found = samples(http, gateway.url)
    output = tokens(found, "anonymous", "output")
    assert output > 0  # the built-in agent's model is priced by name: 2 EUR an output token, nothing for input
    assert found["agent_gateway_cost_total", (("currency", "EUR"), ("key_id", "anonymous"), ("route", "paid"))] == \
        2 * output


def usage_naming_no_model() -> Starlette:
    """An AG-UI agent whose runs report 3 input and 5 output tokens but no model, as many frameworks' reports do."""

    async def run(request: Request) -> Response:
        body = orjson.loads(await request.body())
        ids = {"threadId": body.get("threadId", "thread"), "runId": body.get("runId", "run")}
        events = [{"type": "RUN_STARTED", **ids},
                  {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
                  {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "Counted."},
                  {"type": "TEXT_MESSAGE_END", "messageId": "m"},
                  {"type": "RUN_FINISHED", **ids, "usage": [{"inputTokens": 3, "outputTokens": 5}]}]
        return Response(b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events),
                        media_type="text/event-stream")

    return Starlette(routes=[Route("/agui", run, methods=["POST"])])


@pytest.mark.parametrize(("asked", "dialect", "per_token"), [
    ({"model": "small"}, "ag-ui", 1),  # the upstream's `model`
    ({}, "openai-chat", 2),  # the client's request's model
    ({}, "ag-ui", 7),  # neither: the route's name, which the prices do not name, so the default
])
def test_a_run_whose_usage_names_no_model_is_priced_by_the_model_it_asked_for(
        asked: dict[str, str], dialect: str, per_token: int) -> None:
    pricing = {"default": {"input": 7_000_000, "output": 7_000_000},
               "models": {"small": {"input": 1_000_000, "output": 1_000_000},
                          "large": {"input": 2_000_000, "output": 2_000_000}}}
    with Served(usage_naming_no_model()) as agent:
        settings = GatewayConfig.model_validate({"routes": [{"name": "paid", "pricing": pricing, "upstream": {
            "url": agent.url + "/agui", "dialect": "ag-ui", **asked}}]})
        with Served(create_app(settings, store=MemoryStore())) as gateway, httpx.Client(timeout=10) as http:
            body = request_body(dialect, [user_message(dialect, "hi")], agent="paid")
            if dialect == "openai-chat":
                body["model"] = "large"
            path = {"ag-ui": "/agui", "openai-chat": "/v1/chat/completions"}[dialect]
            assert post(http, gateway.url + path, body).status_code == 200
            found = samples(http, gateway.url)
    assert tokens(found, "anonymous", "input") == 3 and tokens(found, "anonymous", "output") == 5
    assert found["agent_gateway_cost_total", (("currency", "USD"), ("key_id", "anonymous"), ("route", "paid"))] == \
        (3 + 5) * per_token


def test_a_key_over_its_budget_gets_a_429_in_its_dialect_before_the_upstream_is_called(agent: Served) -> None:
    limits = {"tokens_per_key": {"per": "day", "max": 3}}
    with Served(create_app(config(agent, auth={"keys": list(KEYS.values())}, limits=limits),
                           store=MemoryStore())) as gateway, httpx.Client(timeout=10) as http:
        started = Reply("ag-ui", ask(http, gateway.url, "please say more than three words", KEYS["alice"]))
        assert "You said: please say more than three words" in started.text  # the run that crosses it finishes
        before = upstream_calls(http, agent)
        refused = [ask(http, gateway.url, "again", KEYS["alice"], dialect) for dialect in ("ag-ui", "openai-chat")]
        assert upstream_calls(http, agent) == before  # neither went upstream
        other_key = Reply("ag-ui", ask(http, gateway.url, "hi", KEYS["bob"]))
    for response in refused:
        assert response.status_code == 429
        assert 0 < int(response.headers["retry-after"]) <= 86400
    assert refused[0].json()["error"]["code"] == "over_budget"  # the gateway's own shape, which AG-UI's clients read
    assert "tokens for this day" in refused[1].json()["error"]["message"]  # OpenAI's error shape
    assert "You said: hi" in other_key.text  # budgets are per key


def test_a_run_started_within_budget_finishes_when_the_key_goes_over_it_meanwhile(agent: Served) -> None:
    limits = {"tokens_per_key": {"per": "day", "max": 3}}
    with Served(create_app(config(agent, auth={"keys": list(KEYS.values())}, limits=limits),
                           store=MemoryStore())) as gateway, httpx.Client(timeout=10) as http:
        opened, slow_text = threading.Event(), []

        def slow() -> None:  # twenty ticks, 50 ms apart
            body = request_body("ag-ui", [user_message("ag-ui", "slow please")])
            with http.stream("POST", f"{gateway.url}/agui", json=body, headers={"x-api-key": KEYS["alice"]}) as sent:
                chunks = sent.iter_text()
                slow_text.append(next(chunks))
                opened.set()
                slow_text.extend(chunks)

        running = threading.Thread(target=slow)
        running.start()
        assert opened.wait(10)
        assert ask(http, gateway.url, "spend the whole budget now", KEYS["alice"]).status_code == 200
        running.join(10)
        after = ask(http, gateway.url, "and now", KEYS["alice"])
    assert "tick 20." in "".join(slow_text) and "RUN_FINISHED" in "".join(slow_text)  # every tick, and its end
    assert after.status_code == 429


def test_tenants_of_a_tenant_header_route_have_a_budget_each(agent: Served) -> None:
    limits = {"tokens_per_key": {"per": "hour", "max": 2}}
    with Served(create_app(config(agent, tenant_header="x-tenant", limits=limits), store=MemoryStore())) as gateway, \
            httpx.Client(timeout=10) as http:
        ask(http, gateway.url, "spend it all", headers={"x-tenant": "acme"})
        acme = ask(http, gateway.url, "more", headers={"x-tenant": "acme"})
        globex = ask(http, gateway.url, "mine", headers={"x-tenant": "globex"})
        found = samples(http, gateway.url)
    assert acme.status_code == 429 and globex.status_code == 200
    assert tokens(found, "tenant:acme", "input") == 3


@contextmanager
def two_replicas(agent: Served, redis: RedisServer, **route: Any) -> Iterator[tuple[str, str]]:
    with ExitStack() as stack:
        settings = config(agent, {"url": redis.url}, **route)
        one, two = (stack.enter_context(Served(create_app(settings))).url for _ in range(2))
        yield one, two


def test_two_replicas_on_one_redis_share_one_budget(agent: Served) -> None:
    limits = {"tokens_per_key": {"per": "day", "max": 3}}
    with RedisServer() as redis, two_replicas(agent, redis, auth={"keys": list(KEYS.values())}, limits=limits) as (
            one, two), httpx.Client(timeout=10) as http:
        assert ask(http, one, "spend the budget on one", KEYS["alice"]).status_code == 200
        counted = redis_client.Redis.from_url(redis.url)
        deadline = time.monotonic() + 5  # counted as the run's last byte goes, in the background
        while not counted.keys("agw:budget:*"):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        before = upstream_calls(http, agent)
        refused = ask(http, two, "and on two", KEYS["alice"])
        assert upstream_calls(http, agent) == before
        assert ask(http, two, "bob still may", KEYS["bob"]).status_code == 200
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0


def counted_in(path: Path) -> int:
    """The budget counters a SQLite store's file holds."""
    with closing(sqlite3.connect(path)) as conn:
        return int(conn.execute("SELECT count(*) FROM counters").fetchone()[0])


def test_two_gateways_on_one_sqlite_file_share_one_budget(agent: Served, tmp_path: Path) -> None:
    """As the workers of `serve --workers N` do: each opens the file, and a key spends one budget across them."""
    limits = {"tokens_per_key": {"per": "day", "max": 3}}
    path = tmp_path / "gateway.db"
    settings = config(agent, {"url": f"sqlite:///{path}"}, auth={"keys": list(KEYS.values())}, limits=limits)
    with ExitStack() as stack:
        one, two = (stack.enter_context(Served(create_app(settings))).url for _ in range(2))
        http = stack.enter_context(httpx.Client(timeout=10))
        assert ask(http, one, "spend the budget on one", KEYS["alice"]).status_code == 200
        deadline = time.monotonic() + 5  # counted as the run's last byte goes, in the background
        while not counted_in(path):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        before = upstream_calls(http, agent)
        refused = ask(http, two, "and on two", KEYS["alice"])
        assert upstream_calls(http, agent) == before
        assert ask(http, two, "bob still may", KEYS["bob"]).status_code == 200
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
    assert refused.json()["error"]["code"] == "over_budget"


def test_the_workers_of_serve_share_one_budget_on_the_sqlite_store(agent: Served, tmp_path: Path) -> None:
    """`serve --workers 2` on the default kind of store: whichever worker a connection reaches, the key's budget is
    the one the other worker spent."""
    port, path = free_port(), tmp_path / "gateway.db"
    settings = tmp_path / "gateway.json"
    settings.write_text(orjson.dumps({"store": {"url": f"sqlite:///{path}"}, "routes": [{
        "name": "paid", "upstream": {"url": agent.url + "/agui", "dialect": "ag-ui"},
        "auth": {"keys": list(KEYS.values())}, "limits": {"tokens_per_key": {"per": "day", "max": 3}}}]}).decode())
    process = subprocess.Popen([sys.executable, "-m", "gateway", "serve", "--workers", "2", "--port", str(port),
                                "--config", str(settings)], cwd=tmp_path, stdin=subprocess.DEVNULL,
                               env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_answering(process, f"{url}/healthz", seconds=30, what="serve")
        with httpx.Client(timeout=10) as http:
            assert ask(http, url, "spend the budget", KEYS["alice"]).status_code == 200
        deadline = time.monotonic() + 5
        while not counted_in(path):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        answered = []
        for _ in range(6):  # a connection each, spread across the workers
            with httpx.Client(timeout=10) as http:
                answered.append(ask(http, url, "more", KEYS["alice"]).status_code)
    finally:
        process.terminate()
        process.wait(15)
    assert answered == [429] * 6


def test_a_budget_lets_requests_through_while_its_store_is_down(agent: Served,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    limits = {"tokens_per_key": {"per": "day", "max": 1}}
    with RedisServer() as redis, caplog.at_level(logging.WARNING, logger="agent_gateway.budget"), \
            Served(create_app(config(agent, {"url": redis.url}, limits=limits))) as gateway, \
            httpx.Client(timeout=10) as http:
        redis.stop()
        answered = [ask(http, gateway.url, "over the budget, unseen").status_code for _ in range(2)]
    assert answered == [200, 200]
    assert any("token budget not checked, the store failed" in r.getMessage() for r in caplog.records)
