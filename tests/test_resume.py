"""Resumable routes end to end: a run outlives its client, a client comes back for the rest (on any replica), a
retry attaches to the running run, and a stop ends it upstream from any replica.

The gateways and the upstream (the built-in agent, paced so a run lasts a while) are real servers on 127.0.0.1;
two gateways over one real Redis are two replicas.
"""

from __future__ import annotations

import gc
import logging
import socket
import threading
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from e2e import request_body, user_message
from faults import FaultUpstream
from node_clients import node_clients_available, run_vercel_resume
from redis_cluster import RedisCluster
from redis_server import RedisServer
from servers import Served
from test_shared_conversations import gateway_process

from bench.resume_soak import run as run_resume_soak
from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.server.app import create_app

PACE = 0.05
"""Seconds between the agent's events: a "slow" run is 24 events, about 2 s."""
JSON = {"content-type": "application/json"}


def config(agent: str, store: str = "memory://", **route: Any) -> GatewayConfig:
    routes = [{"name": name, "paths": [f"/{name}"], "client_dialects": [name], "resumable": True,
               "upstream": {"url": f"{agent}/send-message", "dialect": "ag-kit"}, **route}
              for name in ("ag-ui", "ag-kit", "agent-respond", "vercel")]
    return GatewayConfig.model_validate({"store": {"url": store}, "routes": routes})


@contextmanager
def replicas(count: int, store: str = "memory://", **route: Any) -> Iterator[tuple[str, list[str]]]:
    """The paced agent and `count` gateways in front of it, sharing `store`."""
    with ExitStack() as stack:
        agent = stack.enter_context(Served(create_agent_app("ag-kit", pace=PACE)))
        gateways = [stack.enter_context(Served(create_app(config(agent.url, store, **route)))).url
                    for _ in range(count)]
        yield agent.url, gateways


def frames(body: bytes) -> list[dict[str, Any]]:
    """Each SSE event as {id, data}."""
    found = []
    for block in body.split(b"\n\n"):
        fields: dict[str, Any] = {}
        for line in block.split(b"\n"):
            name, _, value = line.partition(b": ")
            if name in (b"id", b"data"):
                fields[name.decode()] = value.decode()
        if fields:
            found.append(fields)
    return found


def read_some(url: str, body: bytes, count: int, headers: dict[str, str] | None = None) -> bytes:
    """POST, read `count` SSE events, then drop the connection."""
    received = b""
    with httpx.Client(timeout=10) as http, \
            http.stream("POST", url, content=body, headers={**JSON, **(headers or {})}) as response:
        assert response.status_code == 200
        for chunk in response.iter_raw():
            received += chunk
            if received.count(b"\n\n") >= count:
                break
    return received[:_end_of_frame(received, count)]


def _end_of_frame(data: bytes, count: int) -> int:
    at = -2
    for _ in range(count):
        at = data.index(b"\n\n", at + 2)
    return at + 2


def has_event_ids(body: bytes) -> bool:
    return any("id" in event for event in frames(body))


def agent_calls(agent: str) -> list[dict[str, Any]]:
    return [c for c in httpx.get(f"{agent}/_requests").json() if c["path"] == "/send-message"]


def disconnects(agent: str) -> int:
    return int(httpx.get(f"{agent}/_disconnects").json())


def wait_until(check: Any, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return bool(check())


def agui_body(thread: str, text: str = "slow please") -> bytes:
    return orjson.dumps(request_body("ag-ui", [user_message("ag-ui", text)], conversation=thread))


def assert_whole(events: list[dict[str, Any]]) -> None:
    """Numbered 1..n with none missing, doubled or out of order, from RUN_STARTED to RUN_FINISHED."""
    assert [int(e["id"]) for e in events] == list(range(1, len(events) + 1))
    types = [orjson.loads(e["data"])["type"] for e in events]
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED", types
    text = "".join(orjson.loads(e["data"]).get("delta", "") for e in events)
    assert text == "".join(f"tick {i}. " for i in range(1, 21))


# -- one gateway


def test_every_agui_event_of_a_resumable_run_has_an_id_and_a_reconnect_gets_the_rest_once() -> None:
    with replicas(1) as (agent, [gateway]):
        body = agui_body("thread-1")
        first = frames(read_some(f"{gateway}/ag-ui", body, 5))
        response = httpx.post(f"{gateway}/ag-ui", content=body, headers={**JSON, "last-event-id": first[-1]["id"]},
                              timeout=10)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert_whole(first + frames(response.content))
        assert len(agent_calls(agent)) == 1, "the reconnect ran the agent again"


def test_a_disconnect_does_not_stop_a_resumable_run() -> None:
    with replicas(1) as (agent, [gateway]):
        read_some(f"{gateway}/ag-ui", agui_body("thread-2"), 3)
        time.sleep(24 * PACE + 0.5)
        assert disconnects(agent) == 0, "the gateway cut the upstream off when its client left"
        # The run was stored once, as it ended: the next turn has it in its history.
        response = httpx.post(f"{gateway}/ag-ui", content=agui_body("thread-2", "hello"), headers=JSON, timeout=10)
        assert len(agent_calls(agent)) == 2
        assert response.status_code == 200


def test_an_agui_request_for_a_running_run_attaches_to_it() -> None:
    """A re-POST of the same threadId and runId, without Last-Event-ID: the whole reply, from the same run."""
    with replicas(1) as (agent, [gateway]):
        body = agui_body("thread-3")
        read_some(f"{gateway}/ag-ui", body, 2)
        again = httpx.post(f"{gateway}/ag-ui", content=body, headers=JSON, timeout=10)
        assert_whole(frames(again.content))
        assert len(agent_calls(agent)) == 1


@pytest.mark.parametrize("client", ["ag-kit", "agent-respond"])
def test_a_retry_of_the_same_request_while_its_run_runs_attaches_to_it(client: str) -> None:
    """The eval platform retries a request that timed out on its side: one run upstream, the same reply twice."""
    with replicas(1) as (agent, [gateway]):
        body = orjson.dumps(request_body(client, [user_message(client, "slow please")], conversation="c-4"))
        replies: list[httpx.Response] = []

        def send() -> None:
            replies.append(httpx.post(f"{gateway}/{client}", content=body, headers=JSON, timeout=15))

        threads = [threading.Thread(target=send) for _ in range(2)]
        for thread in threads:
            thread.start()
            time.sleep(0.3)
        for thread in threads:
            thread.join(15)
        assert [r.status_code for r in replies] == [200, 200]
        assert replies[0].content == replies[1].content
        assert b"tick 20." in replies[0].content
        assert len(agent_calls(agent)) == 1


def test_a_retry_with_the_same_idempotency_key_attaches_whatever_its_body() -> None:
    with replicas(1) as (agent, [gateway]):
        keyed = {**JSON, "idempotency-key": "retry-5"}
        first = orjson.dumps(request_body("ag-kit", [user_message("ag-kit", "slow please")], conversation="c-5"))
        read_some(f"{gateway}/ag-kit", first, 2, keyed)
        second = orjson.dumps(request_body("ag-kit", [user_message("ag-kit", "slow, please")], conversation="c-5"))
        response = httpx.post(f"{gateway}/ag-kit", content=second, headers=keyed, timeout=10)
        assert b"tick 20." in response.content
        assert len(agent_calls(agent)) == 1


def test_the_same_request_after_its_run_ended_is_a_new_run() -> None:
    with replicas(1) as (agent, [gateway]):
        body = orjson.dumps(request_body("ag-kit", [user_message("ag-kit", "hello")], conversation="c-6"))
        for _ in range(2):
            assert httpx.post(f"{gateway}/ag-kit", content=body, headers=JSON, timeout=10).status_code == 200
        assert len(agent_calls(agent)) == 2


def test_a_conversation_resumes_from_the_start_of_its_reply_or_answers_204() -> None:
    """The AI SDK's `resumeStream()`: GET {api}/{chatId}/stream."""
    with replicas(1) as (agent, [gateway]):
        assert httpx.get(f"{gateway}/vercel/chat-7/stream").status_code == 204
        body = orjson.dumps(request_body("vercel", [user_message("vercel", "slow please")], conversation="chat-7"))
        dropped = read_some(f"{gateway}/vercel", body, 4)
        resumed = httpx.get(f"{gateway}/vercel/chat-7/stream", timeout=10)
        assert resumed.status_code == 200
        assert resumed.headers["x-vercel-ai-ui-message-stream"] == "v1"
        assert resumed.content.startswith(dropped)
        assert resumed.content.endswith(b"data: [DONE]\n\n")
        assert not has_event_ids(resumed.content)  # the AI SDK has no use for them
        assert httpx.get(f"{gateway}/vercel/chat-7/stream").status_code == 204  # ended: nothing to resume
        assert len(agent_calls(agent)) == 1


def test_a_stop_ends_the_run_upstream_and_its_stream() -> None:
    with replicas(1) as (agent, [gateway]):
        body = agui_body("thread-8")
        stopped: list[int] = []
        received = b""
        with httpx.Client(timeout=10) as http, \
                http.stream("POST", f"{gateway}/ag-ui", content=body, headers=JSON) as response:
            for chunk in response.iter_raw():
                received += chunk
                if not stopped and received.count(b"\n\n") >= 3:
                    stopped.append(httpx.post(f"{gateway}/ag-ui/thread-8/stop", headers=JSON).status_code)
        assert stopped == [202]
        events = frames(received)
        last = orjson.loads(events[-1]["data"])
        assert last["type"] in ("RUN_FINISHED", "RUN_ERROR"), last
        assert b"tick 20." not in received
        assert wait_until(lambda: disconnects(agent) == 1), "the upstream run was not cut off"
        assert httpx.delete(f"{gateway}/ag-ui/thread-8/stream").status_code == 404  # nothing runs now


def test_stopping_a_conversation_with_no_run_is_a_404_in_the_users_terms() -> None:
    with replicas(1) as (_agent, [gateway]):
        response = httpx.delete(f"{gateway}/vercel/nothing/stream")
        assert response.status_code == 404
        assert response.json()["error"] == {"code": "no_running_run",
                                            "message": "no run of conversation 'nothing' is running"}


def test_a_reply_past_the_kept_limit_is_not_resumable_but_its_client_gets_it_whole() -> None:
    with replicas(1, limits={"max_resume_events": 5}) as (_agent, [gateway]):
        body = agui_body("thread-9")
        whole = httpx.post(f"{gateway}/ag-ui", content=body, headers=JSON, timeout=10)
        assert b"tick 20." in whole.content
        late = httpx.post(f"{gateway}/ag-ui", content=body, headers={**JSON, "last-event-id": "3"}, timeout=10)
        assert late.status_code == 410
        assert late.json()["error"]["code"] == "resume_unavailable"


def test_a_late_reconnect_after_the_run_ended_gets_the_rest_until_the_reply_expires() -> None:
    with replicas(1, timeouts={"resume_keep": 1.0}) as (_agent, [gateway]):
        body = agui_body("thread-10")
        first = frames(read_some(f"{gateway}/ag-ui", body, 4))
        time.sleep(24 * PACE + 0.3)
        rest = httpx.post(f"{gateway}/ag-ui", content=body, headers={**JSON, "last-event-id": first[-1]["id"]})
        assert_whole(first + frames(rest.content))
        time.sleep(1.2)
        expired = httpx.post(f"{gateway}/ag-ui", content=body, headers={**JSON, "last-event-id": first[-1]["id"]})
        assert expired.status_code == 410


def test_routes_that_are_not_resumable_still_stop_the_run_when_the_client_leaves() -> None:
    with replicas(1, resumable=False) as (agent, [gateway]):
        received = read_some(f"{gateway}/ag-ui", agui_body("thread-11"), 3)
        assert not has_event_ids(received)
        assert wait_until(lambda: disconnects(agent) == 1)


# -- two replicas over one Redis


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="module", params=["one server", "cluster"])
def shared(request: pytest.FixtureRequest) -> Iterator[RedisServer | RedisCluster]:
    """What the replicas share: one Redis, or a cluster of three primaries (whose runs spread over its slots)."""
    with RedisServer() if request.param == "one server" else RedisCluster(replicas=0) as redis:
        yield redis


def test_a_reconnect_with_last_event_id_gets_the_rest_from_the_other_replica(shared: RedisServer) -> None:
    with replicas(2, shared.url) as (agent, [one, two]):
        body = agui_body("thread-r1")
        first = frames(read_some(f"{one}/ag-ui", body, 6))
        rest = httpx.post(f"{two}/ag-ui", content=body, headers={**JSON, "last-event-id": first[-1]["id"]},
                          timeout=10)
        assert rest.status_code == 200
        assert_whole(first + frames(rest.content))
        assert len(agent_calls(agent)) == 1


def test_a_retry_on_the_other_replica_attaches_to_the_run(shared: RedisServer) -> None:
    with replicas(2, shared.url) as (agent, [one, two]):
        body = orjson.dumps(request_body("agent-respond", [user_message("agent-respond", "slow please")]))
        with pytest.raises(httpx.ReadTimeout):  # the platform gives up on its side, and retries elsewhere
            httpx.post(f"{one}/agent-respond", content=body, headers=JSON, timeout=0.5)
        retry = httpx.post(f"{two}/agent-respond", content=body, headers=JSON, timeout=10)
        assert retry.status_code == 200
        assert "tick 20." in retry.json()["messages"][-1]["content"]
        assert len(agent_calls(agent)) == 1


def test_a_stop_asked_of_the_other_replica_ends_the_run_upstream(shared: RedisServer) -> None:
    with replicas(2, shared.url) as (agent, [one, two]):
        body = orjson.dumps(request_body("vercel", [user_message("vercel", "slow please")], conversation="chat-r3"))
        read_some(f"{one}/vercel", body, 3)
        assert httpx.delete(f"{two}/vercel/chat-r3/stream").status_code == 202
        assert wait_until(lambda: disconnects(agent) == 1), "the stop did not reach the replica running the run"
        assert wait_until(lambda: httpx.get(f"{two}/vercel/chat-r3/stream").status_code == 204)


def test_redis_going_away_mid_run_leaves_runs_unresumable_with_a_log_line(
        caplog: pytest.LogCaptureFixture) -> None:
    with RedisServer() as redis, replicas(1, redis.url) as (agent, [gateway]):
        caplog.set_level(logging.WARNING)
        body = agui_body("thread-r4")
        received = b""
        with httpx.Client(timeout=10) as http, \
                http.stream("POST", f"{gateway}/ag-ui", content=body, headers=JSON) as response:
            for chunk in response.iter_raw():
                received += chunk
                if redis.running and received.count(b"\n\n") >= 3:
                    redis.stop()
        assert_whole(frames(received))  # its own client lost nothing
        after = httpx.post(f"{gateway}/ag-ui", content=agui_body("thread-r5", "hello"), headers=JSON, timeout=10)
        assert after.status_code == 200 and b"RUN_FINISHED" in after.content
        assert not has_event_ids(after.content)
        assert "the run is not resumable, the store failed" in caplog.text
        assert len(agent_calls(agent)) == 2


# -- the real AI SDK chat, through two gateway processes over one Redis


@pytest.mark.skipif(not node_clients_available(), reason="needs `npm ci --prefix tests/clients`")
def test_the_ai_sdk_chat_resumes_through_another_gateway_process_and_its_stop_button_stops_the_run(
        redis: RedisServer, tmp_path: Path) -> None:
    with Served(create_agent_app("ag-kit", pace=PACE)) as agent:
        path = tmp_path / "gateway.yaml"
        path.write_text(orjson.dumps({"store": {"url": redis.url}, "routes": [
            {"name": "chat", "paths": ["/api/chat"], "client_dialects": ["vercel"], "resumable": True,
             "upstream": {"url": f"{agent.url}/send-message", "dialect": "ag-kit"}}]}).decode())
        with gateway_process(path) as one, gateway_process(path) as two:
            plan = {"urlA": f"{one}/api/chat", "urlB": f"{two}/api/chat", "text": "slow please",
                    "dropAfterChunks": 6}
            plain = run_vercel_resume({**plan, "mode": "plain", "chatId": "chat-plain"})
            resumed = run_vercel_resume({**plan, "mode": "resume", "chatId": "chat-resumed"})
            assert resumed["dropped"] and resumed["resumeStatus"] == 200, resumed
            assert resumed["status"] == "ready", resumed["error"]
            assert [m["role"] for m in resumed["messages"]] == ["user", "assistant"]
            assert _parts(resumed["messages"][-1]) == _parts(plain["messages"][-1])
            assert len(agent_calls(agent.url)) == 2  # the plain run and the resumed one: no run twice

            stopped = run_vercel_resume({**plan, "mode": "stop", "chatId": "chat-stopped"})
            assert stopped["stopStatus"] == 202, stopped
            assert wait_until(lambda: disconnects(agent.url) == 1), "the stop did not reach the run upstream"
            assert stopped["resumeStatus"] == 204 or "tick 20." not in str(stopped["messages"])


def _parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    """What the user sees of a message: its text parts."""
    return [{"type": p["type"], "text": p["text"]} for p in message["parts"] if p["type"] == "text"]


def test_200_streams_dropped_and_resumed_across_two_replicas_lose_and_double_nothing(tmp_path: Path) -> None:
    """The CI form of `bench/resume_soak.py`: two gateway processes over one Redis, each stream dropped twice at
    random points and resumed on the other replica with Last-Event-ID."""
    report = run_resume_soak(200, 2, 40, 0.05, tmp_path)
    assert report.clean, report.summary()
    assert report.drops == 400


# -- what a resumable run may hold


STALL = 0.5
"""The gateways below send keep-alives this often: a client of a resumable run that takes nothing for as long is
dropped (the run goes on)."""


@contextmanager
def flooding_gateways(upstream: FaultUpstream, total: float, count: int = 1, store: str = "memory://"
                      ) -> Iterator[list[str]]:
    """`count` gateways over `store` with a resumable AG-UI route in front of an AG-Kit upstream sending ~8 KiB
    events a millisecond apart, for `total` seconds: more than a client's socket buffers hold, well under the
    reply's limits."""
    flood = {"url": upstream.url("ag-kit", "forever", gap=0.001, pad=8192), "dialect": "ag-kit"}
    config = GatewayConfig.model_validate({"store": {"url": store}, "keepalive_seconds": STALL, "routes": [
        {"name": "flood", "paths": ["/flood"], "client_dialects": ["ag-ui"], "resumable": True, "upstream": flood,
         "timeouts": {"total": total}, "limits": {"max_resume_bytes": 256 * 2**20}}]})
    with ExitStack() as stack:
        yield [stack.enter_context(Served(create_app(config))).url for _ in range(count)]


def never_reading(url: str, method: str, path: str, body: bytes = b"") -> socket.socket:
    """A client that sends its request and reads nothing, with a small receive buffer."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    sock.connect((host, int(port)))
    sock.sendall(f"{method} {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
                 f"content-length: {len(body)}\r\n\r\n".encode() + body)
    return sock


def in_flight(url: str) -> float:
    metrics = httpx.get(f"{url}/metrics").text
    gauge = 'agent_gateway_streams_in_flight{route="flood"}'
    return float(next(line for line in metrics.splitlines() if line.startswith(gauge)).rsplit(" ", 1)[1])


@pytest.fixture(scope="module")
def upstream() -> Iterator[FaultUpstream]:
    with FaultUpstream() as served:
        yield served


@pytest.mark.parametrize("replicas", [1, 2])
def test_a_follower_that_stops_reading_is_dropped_and_holds_nothing(upstream: FaultUpstream, redis: RedisServer,
                                                                     replicas: int) -> None:
    """On the replica that runs the run, or on another that reads its reply from Redis."""
    store = redis.url if replicas == 2 else "memory://"
    with flooding_gateways(upstream, 2.0, replicas, store) as gateways:
        running, following = gateways[0], gateways[-1]
        body = agui_body(f"thread-f1-{replicas}", "flood")
        headers = {**JSON, "x-request-id": f"flood-{replicas}"}
        reader = threading.Thread(target=lambda: httpx.post(f"{running}/flood", content=body, headers=headers,
                                                            timeout=10))
        reader.start()
        upstream.find(f"flood-{replicas}")  # the run has claimed its place: it can be followed
        follower = never_reading(following, "GET", f"/flood/thread-f1-{replicas}/stream")
        try:
            assert wait_until(lambda: in_flight(following) == replicas % 2 + 1)
            reader.join(10)
            assert wait_until(lambda: in_flight(following) == 0, STALL + 2), "the follower still holds its slot"
        finally:
            follower.close()


def test_a_stalled_client_of_a_resumable_run_is_dropped_and_the_run_goes_on_for_its_followers(
        upstream: FaultUpstream) -> None:
    total = 3.0
    with flooding_gateways(upstream, total) as [gateway]:
        stalled = never_reading(gateway, "POST", "/flood", agui_body("thread-f2", "flood"))
        try:
            assert wait_until(lambda: in_flight(gateway) == 1)
            followed = httpx.get(f"{gateway}/flood/thread-f2/stream", timeout=total + 5)
        finally:
            stalled.close()
        events = frames(followed.content)
        last = orjson.loads(events[-1]["data"])
        assert last["type"] == "RUN_ERROR" and f"longer than {total:g}s" in last["message"], last
        assert len(followed.content) > 2 * 2**20  # far more than the stalled client's buffers took


@pytest.mark.parametrize("client", ["ag-ui", "vercel", "agent-respond"])
def test_what_kept_replies_cost_the_process_is_what_it_counts_against_its_limit(client: str) -> None:
    """`store.max_resume_kept_bytes` bounds the memory of the replies kept for late resumes only if each is counted
    at what it costs: its pieces as Python objects and its bookkeeping, not its bytes alone."""
    runs = 200

    def grown(resumable: bool) -> tuple[float, float]:
        """(memory the process holds after each run, what the run board counts for each)."""
        with Served(create_agent_app("ag-kit")) as agent:
            app = create_app(config(agent.url, resumable=resumable))
            with Served(app) as gateway, httpx.Client(timeout=10) as http:
                def run(index: int) -> None:
                    body = orjson.dumps(request_body(client, [user_message(client, "hi")], f"kept-{index}"))
                    assert http.post(f"{gateway.url}/{client}", content=body, headers=JSON).status_code == 200

                for index in range(20):
                    run(index)  # the connections, caches and first allocations of both gateways alike
                tracemalloc.start()
                try:
                    gc.collect()
                    before = tracemalloc.get_traced_memory()[0]
                    for index in range(20, 20 + runs):
                        run(index)
                    gc.collect()
                    held = tracemalloc.get_traced_memory()[0] - before
                finally:
                    tracemalloc.stop()
                board = app.handlers[f"/{client}"][0].board  # type: ignore[attr-defined]
                return held / runs, board._kept_bytes / (runs + 20)

    plain, _ = grown(False)
    kept, counted = grown(True)
    print(f"\n{client}: a kept reply costs {kept - plain:.0f} bytes; the board counts {counted:.0f}")
    assert kept - plain <= counted <= 3 * (kept - plain)


def test_kept_replies_past_the_process_count_go_oldest_first_and_never_another_principals() -> None:
    """One key's runs push out only that key's oldest kept replies; past the process's count, the oldest go."""
    with Served(create_agent_app("ag-kit")) as agent:
        route = {"name": "kept", "paths": ["/kept"], "client_dialects": ["ag-ui"], "resumable": True,
                 "auth": {"keys": ["key-a", "key-b"]}, "upstream": {"url": f"{agent.url}/send-message",
                                                                    "dialect": "ag-kit"}}
        store = {"url": "memory://", "max_resume_kept": 3, "max_resume_kept_per_principal": 2}
        app = create_app(GatewayConfig.model_validate({"store": store, "routes": [route]}))
        with Served(app) as gateway, httpx.Client(timeout=10) as http:
            def run(key: str, thread: str) -> bytes:
                body = agui_body(thread, "hello")
                assert http.post(f"{gateway.url}/kept", content=body, headers={**JSON, "x-api-key": key}
                                 ).status_code == 200
                return body

            def resumable(key: str, body: bytes) -> bool:
                late = http.post(f"{gateway.url}/kept", content=body,
                                 headers={**JSON, "x-api-key": key, "last-event-id": "1"})
                assert late.status_code in (200, 410), late.text
                return late.status_code == 200

            a = run("key-a", "a-1")
            b = [run("key-b", f"b-{n}") for n in range(3)]
            assert resumable("key-a", a)  # B's runs did not push it out
            assert [resumable("key-b", body) for body in b] == [False, True, True]
            later = run("key-a", "a-2")  # a fourth kept reply in the process: the oldest goes, A's first
            assert [resumable("key-a", body) for body in (a, later)] == [False, True]
            assert [resumable("key-b", body) for body in b[1:]] == [True, True]


def test_a_run_lost_with_its_replica_ends_its_followers_in_band_and_a_late_resume_is_a_410(
        redis: RedisServer, tmp_path: Path) -> None:
    """Replica A runs the run and dies (SIGKILL); a follower on replica B is told in its dialect that the run was
    lost, rather than sent a bare end it would take for a dropped connection and reconnect to, and a client that
    comes back after the death is told 410, not sent an empty 200."""
    import os
    import signal

    from faults import GatewayProcess

    with Served(create_agent_app("ag-kit", pace=0.1)) as agent:
        config = tmp_path / "resumable.yaml"
        config.write_text(orjson.dumps({"store": {"url": redis.url}, "routes": [
            {"name": "r", "paths": ["/agui"], "client_dialects": ["ag-ui"], "resumable": True,
             "upstream": {"url": f"{agent.url}/send-message", "dialect": "ag-kit"}}]}).decode())
        with GatewayProcess(config) as running, GatewayProcess(config) as other:
            body = agui_body("thread-lost")
            first = frames(read_some(f"{running.url}/agui", body, 3))
            followed = b""
            with httpx.Client(timeout=30) as http, \
                    http.stream("GET", f"{other.url}/agui/thread-lost/stream") as response:
                for chunk in response.iter_raw():
                    followed += chunk
                    if followed.count(b"\n\n") >= 5 and running.process is not None:
                        os.kill(running.pid, signal.SIGKILL)
                        running.process.wait()
                        running.process = None
            seen = frames(followed)
            last = orjson.loads(seen[-1]["data"])
            assert last["type"] == "RUN_ERROR" and "lost with the replica" in last["message"], last
            behind = httpx.post(f"{other.url}/agui", content=body, timeout=30,
                                headers={**JSON, "last-event-id": first[-1]["id"]})
            had_all = httpx.post(f"{other.url}/agui", content=body, timeout=30,
                                 headers={**JSON, "last-event-id": seen[-2]["id"]})
    assert behind.status_code == 200 and frames(behind.content)[-1] == seen[-1]  # what was kept, then the loss
    assert had_all.status_code == 410 and had_all.json()["error"]["code"] == "resume_unavailable", had_all.text


def test_connections_redis_dropped_under_a_live_run_cost_its_followers_nothing(redis: RedisServer) -> None:
    """A Redis restart leaves every pooled connection dead, the blocking readers' too: the next follow on another
    replica retries them rather than answer 410 for a run that is live (a client that obeys a 410 pays for a
    second run)."""
    import subprocess

    with replicas(2, redis.url) as (agent, [one, two]):
        body = agui_body("thread-r6")
        with httpx.Client(timeout=10) as http:
            first = frames(read_some(f"{one}/ag-ui", body, 3))
            warm = http.post(f"{two}/ag-ui", content=body, headers={**JSON, "last-event-id": first[-1]["id"]})
            assert warm.status_code == 200  # the other replica's readers have connections now
            live = agui_body("thread-r7")
            read_some(f"{one}/ag-ui", live, 3)  # a second run, live while Redis drops them
            subprocess.run(["redis-cli", "-p", str(redis.port), "CLIENT", "KILL", "TYPE", "normal"], check=True,
                           capture_output=True)
            rest = http.post(f"{two}/ag-ui", content=live, headers={**JSON, "last-event-id": "3"})
        assert rest.status_code == 200, rest.text
        assert b"tick 20." in rest.content
        assert len(agent_calls(agent)) == 2


def test_a_resume_while_the_store_is_down_is_a_503_never_a_second_run(redis: RedisServer) -> None:
    """A client that had part of a reply must be sent the rest or told to retry: a store it cannot reach is no
    reason to run the turn again (and pay the upstream twice)."""
    with replicas(2, redis.url) as (agent, [one, two]):
        body = agui_body("thread-r8")
        seen = frames(read_some(f"{one}/ag-ui", body, 3))
        redis.stop()
        try:
            with httpx.Client(timeout=10) as http:
                again = http.post(f"{two}/ag-ui", content=body, headers={**JSON, "last-event-id": seen[-1]["id"]})
        finally:
            redis.start()
        assert again.status_code == 503, again.text
        assert "store" in again.json()["error"]["message"]
        assert len(agent_calls(agent)) == 1
