"""A Redis store behind Sentinel: the URL read, the primary found through the sentinels, failovers followed without a
restart and without losing a write, and everything the replicas share in Redis working across them before and
after a failover.

The Redis here is real: a primary, a replica and three sentinels, all `redis-server` processes on 127.0.0.1
(`redis_sentinel.py`); the gateways are in-process replicas over it, in front of the built-in agent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx
import orjson
import pytest
import yaml
from e2e import Reply, post, request_body, user_message
from redis_sentinel import RedisSentinels
from redis_server import RedisServer
from servers import Served
from test_resume import JSON, PACE, agui_body, assert_whole, disconnects, frames, read_some, wait_until
from test_shared_conversations import gateway_process

from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import RedisStore, StoreUnreachable, redact_url
from gateway.conversations.store.redis_servers import sentinel_url
from gateway.server.app import create_app


def test_a_sentinel_url_names_its_sentinels_the_primary_and_whose_credentials_are_whose() -> None:
    found = sentinel_url("redis+sentinel://app:secret@s1:26380,[::1],s3/mymaster/2?sentinel_password=watch")
    assert found.sentinels == (("s1", 26380), ("::1", 26379), ("s3", 26379))
    assert found.service == "mymaster"
    assert found.primary_options == {"username": "app", "password": "secret", "db": 2}
    assert found.sentinel_options == {"password": "watch"}
    tls = sentinel_url("rediss+sentinel://:pw@s1/cache?ssl_cert_reqs=none")
    assert tls.primary_options == {"password": "pw", "db": 0, "ssl": True, "ssl_cert_reqs": "none"}
    assert tls.sentinel_options == {"ssl": True, "ssl_cert_reqs": "none"}


@pytest.mark.parametrize(("url", "said"), [
    ("redis+sentinel:///mymaster/0", "names its sentinels"),
    ("redis+sentinel://s1:26379,s2:26379/", "names the primary"),
    ("redis+sentinel://s1:port/mymaster", "not a sentinel's host:port"),
    ("redis+sentinel://s1/mymaster/zero", "is a number"),
])
def test_a_sentinel_url_that_names_no_sentinel_or_primary_is_refused_as_the_configuration_loads(
        url: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        GatewayConfig.model_validate({"store": {"url": url}, "routes": []})


def test_a_redacted_sentinel_url_keeps_every_sentinel_and_drops_the_passwords() -> None:
    assert redact_url("redis+sentinel://app:pw@s1:26379,s2:26380/mymaster/0?sentinel_password=x") == \
        "redis+sentinel://app@s1:26379,s2:26380/mymaster/0"


@pytest.fixture(scope="module")
def sentinels() -> Iterator[RedisSentinels]:
    with RedisSentinels() as redis:
        yield redis


def test_the_store_follows_a_failover_and_keeps_a_write_made_before_the_old_primary_steps_down(
        sentinels: RedisSentinels) -> None:
    """Right after a failover the old primary still takes writes, for seconds, and drops them as it becomes a
    replica: the store must have left it the moment the sentinels announced the new one."""

    async def scenario() -> None:
        store = RedisStore(sentinels.url)
        try:
            await store.put("before", b"1")
            reach = await store.reach()
            assert (reach.kind, reach.primary, reach.reachable) == \
                ("sentinel", f"127.0.0.1:{sentinels.primary_port()}", True)
            old = await asyncio.to_thread(sentinels.failover, settled=False)
            await store.put("after", b"2")
            await asyncio.to_thread(sentinels.settle, old)
            assert await store.get("before") == b"1"
            assert await store.get("after") == b"2", "written to the old primary, and lost as it stepped down"
            reach = await store.reach()
            assert reach.primary == f"127.0.0.1:{sentinels.primary_port()}" != f"127.0.0.1:{old}"
        finally:
            await store.close()

    asyncio.run(scenario())


def test_with_wait_replicas_a_write_no_replica_acknowledged_in_time_is_not_taken_as_saved(
        sentinels: RedisSentinels) -> None:
    sentinels.wait(sentinels.in_sync, "the replica to follow the primary")  # after a failover, it resyncs first
    replica = next(server for server in (sentinels.primary, sentinels.replica)
                   if server.port != sentinels.primary_port())

    async def scenario() -> None:
        store = RedisStore(f"{sentinels.url}?wait_replicas=1", timeout=2.0)
        try:
            await store.put("acknowledged", b"1")
            replica.freeze()
            try:
                with pytest.raises(StoreUnreachable, match="0 of the 1 replicas asked for acknowledged the write"):
                    await store.put("unacknowledged", b"2")
            finally:
                replica.thaw()
            assert await store.get("acknowledged") == b"1"
        finally:
            await store.close()

    asyncio.run(scenario())


def test_wait_replicas_that_is_not_a_count_is_refused_as_the_configuration_loads() -> None:
    with pytest.raises(ValueError, match="wait_replicas is a number of replicas"):
        GatewayConfig.model_validate({"store": {"url": "redis://h:6379/0?wait_replicas=all"}, "routes": []})


def test_serve_check_says_it_found_sentinels_and_where_their_primary_is(sentinels: RedisSentinels,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from gateway.cli import main

    with Served(create_agent_app("ag-kit")) as agent:
        assert main(["serve", "--check", "--upstream", agent.url + "/send-message", "--upstream-dialect", "ag-kit",
                     "--store", sentinels.url]) == 0
    store_line = capsys.readouterr().out.splitlines()[2]
    assert store_line.startswith(f"store {sentinels.url}: ok (sentinel, primary 127.0.0.1:{sentinels.primary_port()}, ")


def gateway_config(agents: dict[str, str], store: str, patience: float = 5.0) -> GatewayConfig:
    """A delta client (AG-Kit) before a full-history upstream (AG-UI): the upstream hears the earlier turns only
    from the store. And resumable routes before the paced agent, for runs read, resumed and stopped anywhere."""
    resumable = [{"name": name, "paths": [f"/{name}"], "client_dialects": [name], "resumable": True,
                  "upstream": {"url": f"{agents['paced']}/send-message", "dialect": "ag-kit"}}
                 for name in ("ag-ui", "vercel")]
    return GatewayConfig.model_validate({"store": {"url": store, "patience": patience}, "routes": [
        {"name": "kit", "paths": ["/kit"], "client_dialects": ["ag-kit"],
         "upstream": {"url": f"{agents['ag-ui']}/agui", "dialect": "ag-ui"}}, *resumable]})


@contextmanager
def agents() -> Iterator[dict[str, str]]:
    with Served(create_agent_app("ag-ui")) as agui, Served(create_agent_app("ag-kit", pace=PACE)) as paced:
        yield {"ag-ui": agui.url, "paced": paced.url}


@contextmanager
def replicas(config: GatewayConfig, count: int = 2) -> Iterator[list[str]]:
    with ExitStack() as stack:
        yield [stack.enter_context(Served(create_app(config))).url for _ in range(count)]


def say(http: httpx.Client, gateway: str, text: str, conversation: str) -> str:
    return Reply("ag-kit", post(http, f"{gateway}/kit", request_body("ag-kit", [user_message("ag-kit", text)],
                                                                     conversation))).text


def test_readyz_says_a_single_redis_is_one_and_where_it_is_and_not_ready_while_it_is_down() -> None:
    with RedisServer() as redis, agents() as upstreams, replicas(gateway_config(upstreams, redis.url), 1) as [one]:
        single = {"kind": "single", "primary": f"127.0.0.1:{redis.port}"}
        assert httpx.get(f"{one}/readyz").json() == {"status": "ready", "redis": {**single, "reachable": True}}
        redis.stop()
        down = httpx.get(f"{one}/readyz", timeout=10)
        assert down.status_code == 503
        assert down.json() == {"status": "store unreachable", "redis": {**single, "reachable": False}}


def test_two_replicas_over_sentinels_share_conversations_runs_and_stops_through_a_failover(
        sentinels: RedisSentinels) -> None:
    with agents() as upstreams, replicas(gateway_config(upstreams, sentinels.url)) as [one, two], \
            httpx.Client(timeout=20) as http:
        assert "(turn 1)" in say(http, one, "hi", "sentinel-1")
        assert "(turn 2)" in say(http, two, "again", "sentinel-1")
        ready = http.get(f"{one}/readyz").json()
        assert ready == {"status": "ready", "redis": {
            "kind": "sentinel", "primary": f"127.0.0.1:{sentinels.primary_port()}", "reachable": True}}
        body = agui_body("sentinel-run")
        first = frames(read_some(f"{one}/ag-ui", body, 6))
        rest = httpx.post(f"{two}/ag-ui", content=body, headers={**JSON, "last-event-id": first[-1]["id"]},
                          timeout=10)
        assert_whole(first + frames(rest.content))  # a run dropped on one replica, read on to its end on the other

        sentinels.failover()

        assert "(turn 3)" in say(http, one, "third", "sentinel-1")
        assert "(turn 4)" in say(http, two, "fourth", "sentinel-1")
        assert http.get(f"{two}/readyz").json()["redis"]["primary"] == f"127.0.0.1:{sentinels.primary_port()}"
        body = agui_body("sentinel-run-2")
        first = frames(read_some(f"{two}/ag-ui", body, 6))
        rest = httpx.post(f"{one}/ag-ui", content=body, headers={**JSON, "last-event-id": first[-1]["id"]},
                          timeout=10)
        assert_whole(first + frames(rest.content))
        # A stop asked of one replica reaches the other's run: its listener is subscribed on the new primary.
        stopped = disconnects(upstreams["paced"])
        chat = orjson.dumps(request_body("vercel", [user_message("vercel", "slow please")], conversation="chat-s"))
        read_some(f"{one}/vercel", chat, 3)
        assert httpx.delete(f"{two}/vercel/chat-s/stream").status_code == 202
        assert wait_until(lambda: disconnects(upstreams["paced"]) == stopped + 1, 10), "the stop never arrived"


def test_a_stop_asked_of_another_replica_right_after_a_manual_failover_reaches_the_run(
        sentinels: RedisSentinels) -> None:
    """For seconds after `SENTINEL FAILOVER` the old primary is still up and still a primary: a listener subscribed
    there hears nothing published on the new one. The board's listener must move the moment the sentinels
    announce the switch, not when the old primary steps down and drops it."""
    with agents() as upstreams, replicas(gateway_config(upstreams, sentinels.url)) as [one, two]:
        # A run on each replica starts its board's listener, on the primary before the failover.
        for gateway in (one, two):
            assert httpx.post(f"{gateway}/ag-ui", content=agui_body(f"listening-{gateway[-5:]}", "hi"),
                              headers=JSON, timeout=10).status_code == 200
        old = sentinels.failover(settled=False)
        try:
            stopped = disconnects(upstreams["paced"])
            chat = orjson.dumps(request_body("vercel", [user_message("vercel", "hang on")], conversation="chat-f"))
            read_some(f"{one}/vercel", chat, 2)
            assert httpx.delete(f"{two}/vercel/chat-f/stream").status_code == 202
            assert wait_until(lambda: disconnects(upstreams["paced"]) == stopped + 1, 15), "the stop never arrived"
        finally:
            sentinels.settle(old)


SLOW_PACE = 0.4
"""Seconds between the agent's events for a run that outlasts a failover: a "slow" run is 24 events, about 10 s."""


def test_a_run_followed_from_the_other_replica_through_a_failover_gets_every_event_or_an_in_band_error(
        sentinels: RedisSentinels) -> None:
    """The run goes on on its own replica while the sentinels promote the replica; a client follows it from the other
    replica, which reads the run's stream in Redis through the failover. It gets every event, numbered without a
    gap, to the run's end, or the in-band error a follower gets when Redis is gone: never a silent gap, a bare end,
    or a hang."""
    with Served(create_agent_app("ag-kit", pace=SLOW_PACE)) as slow, \
            replicas(gateway_config({"ag-ui": slow.url, "paced": slow.url}, sentinels.url)) as [one, two], \
            ThreadPoolExecutor(1) as background:
        body = agui_body("through-a-failover")
        first = frames(read_some(f"{one}/ag-ui", body, 3))
        failing_over = background.submit(sentinels.failover, settled=False)
        rest = httpx.post(f"{two}/ag-ui", content=body, headers={**JSON, "last-event-id": first[-1]["id"]},
                          timeout=30)
        sentinels.settle(failing_over.result(timeout=60))
    events = first + frames(rest.content)
    numbered = [int(event["id"]) for event in events if "id" in event]
    assert numbered == list(range(1, len(numbered) + 1)), f"events lost in the failover: {numbered}"
    last = orjson.loads(events[-1]["data"])
    if last["type"] == "RUN_ERROR":
        assert last["code"] == "resume_unavailable", last
    else:
        assert_whole(events)


def test_a_follower_that_finds_entries_a_failover_lost_is_told_the_run_was_lost_not_passed_over_them() -> None:
    """What a failover can leave in a run's stream: the entries its replica wrote to the old primary as the
    sentinels replaced it are gone, and those written to the new one go on after the gap. Made here by deleting two
    entries of an ended run from a single Redis."""
    import redis as redis_py

    with RedisServer() as redis, agents() as upstreams, replicas(gateway_config(upstreams, redis.url)) as [one, two]:
        body = agui_body("gap")
        first = frames(read_some(f"{one}/ag-ui", body, 3))
        with redis_py.Redis.from_url(redis.url) as direct:
            assert wait_until(lambda: len(direct.keys("agw:run:*:s")) == 1 and direct.hget(
                direct.keys("agw:run:*:m")[0], "state") == b"ended", 10), "the run never ended"
            [stream] = direct.keys("agw:run:*:s")
            assert direct.xdel(stream, "1-6", "1-7") == 2
        rest = httpx.post(f"{two}/ag-ui", content=body, headers={**JSON, "last-event-id": first[-1]["id"]},
                          timeout=10)
    events = first + frames(rest.content)
    assert [int(event["id"]) for event in events if "id" in event] == [1, 2, 3, 4, 5]
    error = orjson.loads(events[-1]["data"])
    assert error["code"] == "resume_unavailable", events[-1]
    assert error["message"] == "part of the run's reply was lost as Redis failed over: start it again"


def test_a_turn_waits_out_a_killed_primary_within_its_patience_and_is_answered_with_its_whole_history() -> None:
    """The primary dies; the sentinels promote the replica in a few seconds. A turn that needs its history waits
    for it on a replica whose patience outlasts the failover, and is refused with a 503 on one whose does not;
    never answered as a first turn."""
    with RedisSentinels() as redis, agents() as upstreams, httpx.Client(timeout=40) as http, \
            replicas(gateway_config(upstreams, redis.url, patience=30.0)) as [patient, _], \
            replicas(gateway_config(upstreams, redis.url, patience=0.2), count=1) as [hasty]:
        assert "(turn 1)" in say(http, patient, "hi", "killed")
        assert "(turn 2)" in say(http, hasty, "again", "killed")
        redis.wait(redis.in_sync, "the replica to have both turns")
        heard = len(httpx.get(f"{upstreams['ag-ui']}/_requests").json())
        redis.primary.stop()
        refused = http.post(f"{hasty}/kit", json=request_body("ag-kit", [user_message("ag-kit", "now")], "killed"))
        assert refused.status_code == 503 and refused.headers["retry-after"] == "5", refused.text
        assert refused.json()["error"]["code"] == "store_unavailable"
        assert "(turn 3)" in say(http, patient, "still there?", "killed")
        assert len(httpx.get(f"{upstreams['ag-ui']}/_requests").json()) == heard + 1
        assert http.get(f"{patient}/readyz").json()["redis"]["primary"] == f"127.0.0.1:{redis.replica.port}"
        assert "(turn 4)" in say(http, hasty, "and you?", "killed")



CHAOS_CONVERSATIONS = 12
CHAOS_TURNS = 3


@contextmanager
def gateway_processes(tmp_path: Path, agents: dict[str, str], store: str, patience: float) -> Iterator[list[str]]:
    """Two `agent-gateway serve` processes, as replicas are deployed."""
    config = tmp_path / "gateway.yaml"
    config.write_text(yaml.safe_dump({"store": {"url": store, "patience": patience}, "routes": [
        {"name": "kit", "paths": ["/kit"], "client_dialects": ["ag-kit"],
         "upstream": {"url": f"{agents['ag-ui']}/agui", "dialect": "ag-ui"}}]}))
    with gateway_process(config) as one, gateway_process(config) as two:
        yield [one, two]


def test_a_primary_killed_mid_traffic_costs_no_conversation_its_history(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Bounded load on two replicas (conversations each taking turns on both in turn) while the primary is killed
    (SIGKILL): every turn is answered or refused with a clear 503, none hangs, and afterwards every conversation
    goes on with the history it had before the kill."""
    outcomes: dict[str, list[str]] = {}

    def converse(http: httpx.Client, gateways: list[str], conversation: str) -> None:
        for n in range(CHAOS_TURNS):
            response = http.post(f"{gateways[n % 2]}/kit", json=request_body(
                "ag-kit", [user_message("ag-kit", f"turn of {conversation}")], conversation))
            if response.status_code == 503:
                assert response.json()["error"]["code"] == "store_unavailable", response.text
                outcomes[conversation].append("503")
            else:
                assert response.status_code == 200, response.text
                outcomes[conversation].append(Reply("ag-kit", response).text)

    with RedisSentinels() as redis, agents() as upstreams, httpx.Client(timeout=60) as http, \
            gateway_processes(tmp_path, upstreams, redis.url, patience=20.0) as gateways:
        names = [f"chaos-{n}" for n in range(CHAOS_CONVERSATIONS)]
        for name in names:
            outcomes[name] = []
            assert "(turn 1)" in say(http, gateways[0], "first", name)
        redis.wait(redis.in_sync, "the replica to have every first turn")
        with ThreadPoolExecutor(CHAOS_CONVERSATIONS) as pool:
            running = [pool.submit(converse, http, gateways, name) for name in names]
            redis.wait(lambda: sum(len(said) for said in outcomes.values()) >= CHAOS_CONVERSATIONS,
                       "the load to be under way")
            redis.primary.kill()
            for done in running:
                done.result(timeout=120)
        answered = {name: sum(said != "503" for said in outcomes[name]) for name in names}
        lost = 0
        for name in names:
            last = say(http, gateways[1], "last", name)
            turn = int(last.rpartition("(turn ")[2].partition(")")[0])
            assert turn >= 2, f"{name} lost the history it had before the kill: {last!r}"
            lost += 2 + answered[name] - turn
        turns = sum(answered.values())
        refused = sum(said.count("503") for said in outcomes.values())
        with capsys.disabled():
            print(f"\nchaos over Sentinel: {turns} turns answered, {refused} refused with a 503, {lost} lost")
        assert lost == 0
