"""A route's fallbacks: a run its upstream fails before the first event goes to the next upstream, of another
dialect, with the conversation whole; a run the client has heard from never moves; an upstream that keeps failing
is ejected, then tried again. Real HTTP: the built-in agent as every upstream, behind a switch that makes it refuse
(503), stay silent, or stop listening."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import Any

import httpx
import pytest
from e2e import Reply, post, request_body, user_message
from redis_server import RedisServer
from servers import Served, free_port
from starlette.types import ASGIApp, Receive, Scope, Send
from test_operations import access_lines

from adapters import registry
from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app
from gateway.server.operations.logs import ACCESS
from gateway.server.request.shared_ejection import LOOK_SECONDS


class Switch:
    """An upstream the test turns: `up` passes each request to `app`; `503` refuses it, `400` says it is wrong;
    `silent` never answers it (until the gateway gives up); `mute` answers 200, then sends nothing; `hangs up`
    answers 200 and ends its body with no event; `cut` sends the first event of a run, then breaks the connection.
    `slow` passes it on after 0.8s. `runs` counts the runs that reached it, whatever it did with them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.mode = "up"
        self.runs = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        self.runs += 1
        if self.mode == "up":
            await self.app(scope, receive, send)
        elif self.mode == "slow":
            await asyncio.sleep(0.8)
            await self.app(scope, receive, send)
        elif self.mode == "503 json":  # an error its dialect reads: relayed as the run's error on a plain route
            await send({"type": "http.response.start", "status": 503,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": b'{"error": {"message": "overloaded"}}'})
        elif self.mode in ("503", "400"):
            await send({"type": "http.response.start", "status": int(self.mode),
                        "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"overloaded" if self.mode == "503" else b"no"})
        elif self.mode == "silent":
            await asyncio.sleep(30)
        elif self.mode in ("mute", "hangs up"):
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/event-stream")]})
            await send({"type": "http.response.body", "body": b"", "more_body": self.mode == "mute"})
            if self.mode == "mute":
                await asyncio.sleep(30)
        elif self.mode == "cut":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/event-stream")]})
            await send({"type": "http.response.body", "more_body": True,
                        "body": b'data: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\n\n'
                                b'data: {"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}\n\n'
                                b'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"Half"}\n\n'})
            raise RuntimeError("the upstream breaks off mid-run")


def gateway_config(primary: str, fallback: str, dialect: str = "vercel", **route: Any) -> GatewayConfig:
    """AG-Kit clients (they send only what is new: the gateway keeps the history) in front of an AG-UI agent,
    falling back to an agent of `dialect` (by default a Vercel AI SDK agent)."""
    return GatewayConfig.model_validate({"routes": [{
        "name": "kit", "paths": ["/kit"], "client_dialects": ["ag-kit"],
        "upstream": {"url": f"{primary}/agui", "dialect": "ag-ui"},
        "fallbacks": [{"url": fallback + registry.get(dialect).paths[0], "dialect": dialect,
                       "name": "vercel-twin"}],
        "timeouts": {"first_event": 1.0, "connect": 1.0}, **route}]})


def turn(http: httpx.Client, gateway: str, text: str, conversation: str) -> Reply:
    return Reply("ag-kit", post(http, f"{gateway}/kit",
                                request_body("ag-kit", [user_message("ag-kit", text)], conversation)))


@pytest.fixture
def fallback() -> Iterator[tuple[Switch, str]]:
    switch = Switch(create_agent_app("vercel"))
    with Served(switch) as served:
        yield switch, served.url


@pytest.fixture(params=["langgraph"])
def keeping(request: pytest.FixtureRequest) -> Iterator[tuple[str, Switch, str]]:
    """A fallback that keeps the conversation itself (a LangGraph thread). An A2A agent, sent one message a turn,
    cannot be given a conversation begun elsewhere: the client is told so (`history_conflict`)."""
    switch = Switch(create_agent_app(request.param))
    with Served(switch) as served:
        yield request.param, switch, served.url


@pytest.fixture
def primary() -> Iterator[tuple[Switch, str]]:
    switch = Switch(create_agent_app("ag-ui"))
    with Served(switch) as served:
        yield switch, served.url


def metric(http: httpx.Client, gateway: str, name: str, **labels: str) -> float:
    """A sample's value on the gateway's `/metrics` (0 when it has none)."""
    wanted = ",".join(f'{k}="{v}"' for k, v in labels.items())
    for line in http.get(f"{gateway}/metrics").text.splitlines():
        if line.startswith(f"{name}{{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    assert wanted is not None
    return 0.0


@pytest.mark.parametrize(("failure", "reason"), [("503", "status"), ("silent", "timeout"), ("mute", "timeout"),
                                                 ("hangs up", "broke")])
def test_a_run_the_upstream_fails_before_its_first_event_goes_to_the_fallback_with_the_conversation_whole(
        failure: str, reason: str, primary: tuple[Switch, str], fallback: tuple[Switch, str]) -> None:
    (agui, agui_url), (vercel, vercel_url) = primary, fallback
    with Served(create_app(gateway_config(agui_url, vercel_url), store=MemoryStore())) as gateway, \
            httpx.Client(timeout=20) as http:
        one = turn(http, gateway.url, "hi", f"moves-{failure}")
        assert "(turn 1)" in one.text and agui.runs == 1 and vercel.runs == 0
        agui.mode = failure
        two = turn(http, gateway.url, "again", f"moves-{failure}")
        assert two.error is None and "You said: again. (turn 2)" in two.text  # the fallback was told turn 1
        assert agui.runs == 2 and vercel.runs == 1
        assert metric(http, gateway.url, "agent_gateway_failovers_total", route="kit", to="vercel-twin",
                      reason=reason) == 1
        agui.mode = "up"
        three = turn(http, gateway.url, "and again", f"moves-{failure}")  # where it last succeeded
        assert "(turn 3)" in three.text and agui.runs == 2 and vercel.runs == 2


def test_a_fallback_that_keeps_its_own_history_is_given_all_of_it_in_a_conversation_of_its_own(
        primary: tuple[Switch, str], keeping: tuple[str, Switch, str]) -> None:
    """What it never heard is the whole conversation: sent only the new message, it would answer "(turn 1)"."""
    (agui, agui_url), (dialect, other, other_url) = primary, keeping
    assert other.runs == 0
    config = gateway_config(agui_url, other_url, dialect)
    with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=20) as http:
        assert "(turn 1)" in turn(http, gateway.url, "hi", "keeping").text
        agui.mode = "503"
        two = turn(http, gateway.url, "again", "keeping")
        assert two.error is None and "You said: again. (turn 2)" in two.text
        three = turn(http, gateway.url, "more", "keeping")  # now only what is new: it keeps the rest
        assert "You said: more. (turn 3)" in three.text and agui.runs == 2
        last = http.get(f"{other_url}/_requests").json()[-1]
        assert "hi" not in str(last) and "again" not in str(last)


def test_the_access_line_names_the_upstream_that_answered_and_the_one_that_failed_first(
        primary: tuple[Switch, str], fallback: tuple[Switch, str], caplog: pytest.LogCaptureFixture) -> None:
    (agui, agui_url), (_, vercel_url) = primary, fallback
    agui.mode = "503"
    with Served(create_app(gateway_config(agui_url, vercel_url), store=MemoryStore())) as gateway, \
            caplog.at_level(logging.INFO, logger=ACCESS), httpx.Client(timeout=20) as http:
        post(http, f"{gateway.url}/kit", request_body("ag-kit", [user_message("ag-kit", "hi")], "logged"),
             {"x-request-id": "failover-log"})
        [line] = access_lines(caplog, "failover-log")
    assert (line.upstream, line.upstream_dialect, line.failovers) == (  # type: ignore[attr-defined]
        "vercel-twin", "vercel", "primary: status")
    assert line.status == 200 and line.error_detail == "HTTP 503: overloaded"  # type: ignore[attr-defined]


def test_a_refused_connection_goes_to_the_fallback_with_the_conversation_whole(
        fallback: tuple[Switch, str]) -> None:
    vercel, vercel_url = fallback
    agui = Switch(create_agent_app("ag-ui"))
    port = free_port()
    with Served(agui, port=port) as served:
        config = gateway_config(served.url, vercel_url)
        with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=20) as http:
            assert "(turn 1)" in turn(http, gateway.url, "hi", "refused").text
            served.__exit__(None, None, None)  # nothing listens on the primary's port any more
            two = turn(http, gateway.url, "again", "refused")
            assert two.error is None and "You said: again. (turn 2)" in two.text
            assert vercel.runs == 1
            assert metric(http, gateway.url, "agent_gateway_failovers_total", route="kit", reason="unreachable") == 1


def test_a_run_whose_first_event_reached_the_client_never_moves(primary: tuple[Switch, str],
                                                                fallback: tuple[Switch, str]) -> None:
    (agui, agui_url), (vercel, vercel_url) = primary, fallback
    agui.mode = "cut"
    with Served(create_app(gateway_config(agui_url, vercel_url), store=MemoryStore())) as gateway, \
            httpx.Client(timeout=20) as http:
        reply = turn(http, gateway.url, "hi", "cut")
        assert "Half" in reply.text and reply.error is not None  # told in band, as on any route
        assert vercel.runs == 0


def test_a_one_body_client_and_upstream_move_on_an_error_body_the_upstreams_dialect_reads(
        fallback: tuple[Switch, str]) -> None:
    """An /agent/respond upstream answering 503 with its dialect's JSON error: on a plain route that is the run's
    error; with a fallback left, the run moves there, and the eval platform gets one whole answer."""
    vercel, vercel_url = fallback
    respond = Switch(create_agent_app("agent-respond"))
    with Served(respond) as served:
        config = GatewayConfig.model_validate({"routes": [{
            "name": "eval", "paths": ["/agent/respond"], "client_dialects": ["agent-respond"],
            "upstream": {"url": f"{served.url}/agent/respond", "dialect": "agent-respond"},
            "fallbacks": [{"url": f"{vercel_url}/api/chat", "dialect": "vercel", "name": "vercel-twin"}]}]})
        respond.mode = "503 json"
        with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=20) as http:
            body = request_body("agent-respond", [user_message("agent-respond", "hi")], "one-body")
            reply = Reply("agent-respond", post(http, f"{gateway.url}/agent/respond", body))
            assert reply.response.status_code == 200 and "You said: hi" in reply.text
            assert respond.runs == 1 and vercel.runs == 1


def test_an_answer_that_the_run_is_wrong_is_the_clients_and_moves_nothing(primary: tuple[Switch, str],
                                                                          fallback: tuple[Switch, str]) -> None:
    (agui, agui_url), (vercel, vercel_url) = primary, fallback
    agui.mode = "400"
    config = gateway_config(agui_url, vercel_url, eject_after=1)
    with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=20) as http:
        refused = post(http, f"{gateway.url}/kit", request_body("ag-kit", [user_message("ag-kit", "hi")], "wrong"))
        assert refused.status_code == 502 and "400" in refused.text and vercel.runs == 0
        assert http.get(f"{gateway.url}/readyz").json() == {"status": "ready"}  # not held against the upstream


def test_an_upstream_failing_runs_in_a_row_is_ejected_then_tried_again(primary: tuple[Switch, str],
                                                                       fallback: tuple[Switch, str]) -> None:
    (agui, agui_url), (vercel, vercel_url) = primary, fallback
    agui.mode = "503"
    config = gateway_config(agui_url, vercel_url, eject_after=2, eject_for=1.0)
    with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=20) as http:
        for n in range(2):
            assert "(turn 1)" in turn(http, gateway.url, "hi", f"eject-{n}").text
        assert agui.runs == 2
        ready = http.get(f"{gateway.url}/readyz")
        assert ready.status_code == 200 and ready.json() == {"status": "ready", "ejected": {"kit": ["primary"]}}
        assert metric(http, gateway.url, "agent_gateway_upstream_ejected", route="kit", upstream="primary") == 1
        assert "(turn 1)" in turn(http, gateway.url, "hi", "eject-skipped").text
        assert agui.runs == 2  # skipped, not asked
        assert metric(http, gateway.url, "agent_gateway_failovers_total", route="kit", reason="ejected") == 1
        agui.mode = "up"
        time.sleep(1.2)  # its ejection is over: one run tries it again
        assert "(turn 1)" in turn(http, gateway.url, "hi", "eject-back").text
        assert agui.runs == 3 and vercel.runs == 3
        assert metric(http, gateway.url, "agent_gateway_upstream_ejected", route="kit", upstream="primary") == 0
        assert http.get(f"{gateway.url}/readyz").json() == {"status": "ready"}


def test_readyz_is_unready_only_when_every_upstream_of_a_route_is_ejected(primary: tuple[Switch, str],
                                                                          fallback: tuple[Switch, str]) -> None:
    (agui, agui_url), (vercel, vercel_url) = primary, fallback
    agui.mode = vercel.mode = "503"
    config = gateway_config(agui_url, vercel_url, eject_after=1, eject_for=30.0)
    with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=20) as http:
        failed = post(http, f"{gateway.url}/kit", request_body("ag-kit", [user_message("ag-kit", "hi")], "all"))
        assert failed.status_code == 502  # the last upstream's failure, in the client's dialect
        ready = http.get(f"{gateway.url}/readyz")
        assert ready.status_code == 503
        assert ready.json()["ejected"] == {"kit": ["primary", "vercel-twin"]}
        refused = post(http, f"{gateway.url}/kit", request_body("ag-kit", [user_message("ag-kit", "hi")], "none"))
        assert refused.status_code == 502 and agui.runs == 1 and vercel.runs == 1


def test_two_replicas_sharing_redis_share_failures_and_ejection(primary: tuple[Switch, str],
                                                                fallback: tuple[Switch, str]) -> None:
    """A failure on each replica is two in a row; an ejection one replica made skips the upstream on the other."""
    (agui, agui_url), (vercel, vercel_url) = primary, fallback
    agui.mode = "503"
    with RedisServer() as redis, ExitStack() as stack, httpx.Client(timeout=20) as http:
        config = gateway_config(agui_url, vercel_url, eject_after=2, eject_for=30.0)
        config.store.url = redis.url
        one, two = (stack.enter_context(Served(create_app(config))).url for _ in range(2))
        assert "(turn 1)" in turn(http, one, "hi", "replica-1").text
        assert "(turn 1)" in turn(http, two, "hi", "replica-2").text
        assert agui.runs == 2  # one failure on each: two in a row, so ejected
        assert "(turn 1)" in turn(http, two, "hi", "replica-3").text
        assert agui.runs == 2
        time.sleep(LOOK_SECONDS + 0.2)  # the first replica looks again at the others' ejections
        assert "(turn 1)" in turn(http, one, "hi", "replica-4").text
        assert agui.runs == 2 and vercel.runs == 4
        ready = http.get(f"{one}/readyz").json()
        assert ready["status"] == "ready" and ready["ejected"] == {"kit": ["primary"]}


def test_once_an_ejection_is_over_one_run_on_one_replica_tries_the_upstream_again(
        primary: tuple[Switch, str], fallback: tuple[Switch, str]) -> None:
    """While the first replica's run tries the upstream again (slowly), the other replica's runs skip it."""
    (agui, agui_url), (vercel, vercel_url) = primary, fallback
    agui.mode = "503"
    with RedisServer() as redis, ExitStack() as stack, httpx.Client(timeout=20) as http:
        config = gateway_config(agui_url, vercel_url, eject_after=1, eject_for=1.0)
        config.store.url = redis.url
        one, two = (stack.enter_context(Served(create_app(config))).url for _ in range(2))
        assert "(turn 1)" in turn(http, one, "hi", "trial-1").text
        assert "(turn 1)" in turn(http, two, "hi", "trial-2").text  # ejected on the other replica too
        assert agui.runs == 1
        agui.mode = "slow"
        time.sleep(1.2)  # both replicas' ejections are over
        with ThreadPoolExecutor(1) as pool:
            trying = pool.submit(turn, http, one, "hi", "trial-3")
            while agui.runs < 2:  # the first replica's run is trying it
                time.sleep(0.02)
            assert "(turn 1)" in turn(http, two, "hi", "trial-4").text
            assert agui.runs == 2 and vercel.runs == 3  # not tried by the second replica meanwhile
            assert "(turn 1)" in trying.result().text
        assert agui.runs == 2 and vercel.runs == 3  # the trial run was the primary's
