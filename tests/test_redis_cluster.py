"""A Redis Cluster store, proven end to end: two gateway replicas over three primaries with a replica each share
conversations, runs, stops, A2A tasks and budgets; say `cluster` and its primaries where asked; ride out a primary
killed mid-traffic (its stop listener and the followers of its runs too) and slots moving between primaries; and,
with `?wait_replicas=1`, take a write as saved only once its slot's replica has it.

The Redis here is real: six `redis-server` processes on 127.0.0.1 joined as a cluster (`redis_cluster.py`); the
gateways are in-process replicas over it (and `serve` processes for the chaos test), in front of the built-in agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import redis
from e2e import Reply, request_body, user_message
from redis_cluster import RedisCluster
from servers import Served
from test_redis_servers import agents, gateway_processes, say
from test_resume import JSON, agui_body, assert_whole, disconnects, frames, read_some, wait_until

from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import RedisStore, StoreError, StoreUnreachable
from gateway.runs.redis import RedisRunBoard
from gateway.server.app import create_app
from tests.adapters.a2a.test_tasks import message, rpc, send, stream

KEYS = ["key-alice", "key-bob"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[RedisCluster]:
    with RedisCluster(primaries=3, replicas=1) as started:
        yield started


def primaries(cluster: RedisCluster) -> str:
    return ", ".join(sorted(f"127.0.0.1:{port}" for port in cluster.primary_ports()))


def cluster_config(agents: dict[str, str], store: str, a2a: str, patience: float = 5.0) -> GatewayConfig:
    """The routes of test_redis_servers.py's replicas, and an A2A route and a route with a token budget."""
    resumable = [{"name": name, "paths": [f"/{name}"], "client_dialects": [name], "resumable": True,
                  "upstream": {"url": f"{agents['paced']}/send-message", "dialect": "ag-kit"}}
                 for name in ("ag-ui", "vercel")]
    return GatewayConfig.model_validate({"store": {"url": store, "patience": patience}, "routes": [
        {"name": "kit", "paths": ["/kit"], "client_dialects": ["ag-kit"],
         "upstream": {"url": f"{agents['ag-ui']}/agui", "dialect": "ag-ui"}}, *resumable,
        {"name": "tasks", "paths": ["/a2a"], "client_dialects": ["a2a"],
         "upstream": {"url": f"{a2a}/agui", "dialect": "ag-ui"}},
        {"name": "paid", "paths": ["/paid"], "client_dialects": ["ag-ui"],
         "upstream": {"url": f"{agents['ag-ui']}/agui", "dialect": "ag-ui"},
         "auth": {"keys": KEYS}, "limits": {"tokens_per_key": {"per": "day", "max": 3}}}]})


@contextmanager
def replicas(config: GatewayConfig, count: int = 2) -> Iterator[list[str]]:
    with ExitStack() as stack:
        yield [stack.enter_context(Served(create_app(config))).url for _ in range(count)]


def spend(http: httpx.Client, gateway: str, key: str) -> httpx.Response:
    return http.post(f"{gateway}/paid", content=orjson.dumps(request_body(
        "ag-ui", [user_message("ag-ui", "spend the budget")], agent="paid")), headers={**JSON, "x-api-key": key})


def budgets_counted(cluster: RedisCluster) -> bool:
    client = redis.RedisCluster(host="127.0.0.1", port=cluster.primary_ports()[0])
    try:
        return any(True for _ in client.scan_iter(match="agw:budget:*"))
    finally:
        client.close()


def assert_shared(upstreams: dict[str, str], one: str, two: str, http: httpx.Client, n: int) -> None:
    """What two replicas share, each asked of one and seen through the other: `n` tells the rounds apart."""
    conversation = f"cluster-{n}"
    assert "(turn 1)" in say(http, one, "hi", conversation)
    assert "(turn 2)" in say(http, two, "again", conversation)
    assert "(turn 3)" in say(http, one, "third", conversation)

    body = agui_body(f"cluster-run-{n}")
    first = frames(read_some(f"{one}/ag-ui", body, 6))
    rest = httpx.post(f"{two}/ag-ui", content=body, headers={**JSON, "last-event-id": first[-1]["id"]},
                      timeout=10)
    assert_whole(first + frames(rest.content))  # a run dropped on one replica, read on to its end on the other

    stopped = disconnects(upstreams["paced"])
    chat = orjson.dumps(request_body("vercel", [user_message("vercel", "slow please")], conversation=f"chat-{n}"))
    read_some(f"{one}/vercel", chat, 3)
    assert httpx.delete(f"{two}/vercel/chat-{n}/stream").status_code == 202
    assert wait_until(lambda: disconnects(upstreams["paced"]) == stopped + 1, 10), "the stop never arrived"

    results: list[dict[str, Any]] = []
    streaming = ThreadPoolExecutor(1).submit(stream, f"{one}/a2a", "SendStreamingMessage",
                                             {"message": message("go slow")}, results)
    assert wait_until(lambda: any("artifactUpdate" in r for r in results), 10)
    task, context = results[0]["task"]["id"], results[0]["task"]["contextId"]
    working = rpc(f"{two}/a2a", "GetTask", {"id": task})["result"]
    assert working["status"]["state"] == "TASK_STATE_WORKING"
    listed = rpc(f"{two}/a2a", "ListTasks", {"contextId": context})["result"]
    assert [t["status"]["state"] for t in listed["tasks"] if t["id"] == task] == ["TASK_STATE_WORKING"]
    streaming.result(timeout=20)
    assert rpc(f"{two}/a2a", "GetTask", {"id": task})["result"]["status"]["state"] == "TASK_STATE_COMPLETED"
    done = send(f"{two}/a2a", "hello again", contextId=context)
    listed = rpc(f"{one}/a2a", "ListTasks", {"contextId": context})["result"]
    assert {t["id"] for t in listed["tasks"]} == {task, done["id"]}


def test_two_replicas_over_a_cluster_share_conversations_runs_stops_tasks_and_budgets_through_a_failover(
        cluster: RedisCluster) -> None:
    with agents() as upstreams, Served(create_agent_app("ag-ui", pace=0.05)) as a2a, \
            replicas(cluster_config(upstreams, cluster.url, a2a.url)) as [one, two], \
            httpx.Client(timeout=20) as http:
        ready = http.get(f"{one}/readyz").json()
        assert ready == {"status": "ready", "redis": {"kind": "cluster", "primary": primaries(cluster),
                                                      "reachable": True}}
        assert_shared(upstreams, one, two, http, 1)

        assert spend(http, one, KEYS[0]).status_code == 200
        assert wait_until(lambda: budgets_counted(cluster), 5)  # counted as the run's last byte goes
        refused = spend(http, two, KEYS[0])
        assert refused.status_code == 429 and refused.json()["error"]["code"] == "over_budget"
        assert spend(http, two, KEYS[1]).status_code == 200

        # The primary of the stop channel's slot: the replicas' listeners were subscribed there. The conversations'
        # shards are on every primary, so some of theirs too.
        killed = cluster.kill_primary_of("agw:run:stop")
        cluster.wait(lambda: len(cluster.primary_ports()) == 3 and cluster.healthy(), "the failover")
        try:
            assert_shared(upstreams, two, one, http, 2)
            assert "(turn 4)" in say(http, two, "fourth", "cluster-1")
            assert http.get(f"{two}/readyz").json()["redis"]["primary"] == primaries(cluster)
            assert f"127.0.0.1:{killed.port}" not in primaries(cluster)
        finally:
            killed.start()  # back as a replica of the primary that took its place
            cluster.wait_healthy()


def test_a_stop_reaches_a_run_after_the_primary_of_the_stop_channel_failed_over(cluster: RedisCluster) -> None:
    """The listener's subscription fails with the primary of the stop channel's slot, and is made again on the
    replica that took its place: the listener must learn where the slot went itself (its replica's beat is kept
    on another primary here, so that no command of its own fails and teaches the client)."""
    cluster.wait_healthy()
    stop_channel = cluster.primary_of("agw:run:stop").port
    replica = next(name for name in (f"replica-{n}" for n in range(64))
                   if cluster.primary_of(f"agw:run:alive:{name}").port != stop_channel)
    stopped: list[str] = []

    async def stop_arrives(asking: RedisRunBoard) -> bool:
        for _ in range(100):
            with contextlib.suppress(StoreError):  # the asking replica learns of the failover as it asks
                await asking.stop_named("the-run")
            await asyncio.sleep(0.1)
            if stopped:
                return True
        return False

    async def scenario() -> None:
        stores = [RedisStore(cluster.url), RedisStore(cluster.url)]
        running, asking = RedisRunBoard(stores[0]), RedisRunBoard(stores[1])
        running.replica = replica
        try:
            running.stoppable("the-run", lambda: stopped.append("stopped"))
            assert await stop_arrives(asking)
            stopped.clear()
            killed = await asyncio.to_thread(cluster.kill_primary_of, "agw:run:stop")
            try:
                await asyncio.to_thread(cluster.wait, lambda: len(cluster.primary_ports()) == 3, "the failover")
                assert await stop_arrives(asking), "the listener is still subscribed on the primary that died"
            finally:
                killed.start()  # back as a replica of the primary that took its place
                await asyncio.to_thread(cluster.wait_healthy)
        finally:
            for board in (running, asking):
                await board.close()
            for store in stores:
                await store.close()

    asyncio.run(scenario())


def test_a_follower_on_another_replica_is_told_the_run_is_lost_once_the_primary_of_its_keys_failed_over(
        cluster: RedisCluster) -> None:
    """The run's keys' primary dies mid-run: the run goes on on its replica, unmirrored, and a follower on another
    replica reading its stream (a blocking XREAD on that primary) must be told it is lost once the replica taking
    its place answers, not wait out the run's silence (`timeouts.idle`) for entries that will never come."""
    cluster.wait_healthy()
    with Served(create_agent_app("ag-kit", pace=0.3)) as paced:
        config = GatewayConfig.model_validate({"store": {"url": cluster.url}, "routes": [
            {"name": "ag-ui", "paths": ["/ag-ui"], "client_dialects": ["ag-ui"], "resumable": True,
             "timeouts": {"idle": 600},
             "upstream": {"url": f"{paced.url}/send-message", "dialect": "ag-kit"}}]})
        with replicas(config) as [one, two]:
            body = agui_body("followed-through-a-failover")
            earlier = set(run_keys(cluster))  # kept from other tests' runs
            first = frames(read_some(f"{one}/ag-ui", body, 3))
            [meta] = set(run_keys(cluster)) - earlier
            followed: list[bytes] = []

            def follow() -> None:
                with httpx.stream("POST", f"{two}/ag-ui", content=body, timeout=120,
                                  headers={**JSON, "last-event-id": first[-1]["id"]}) as response:
                    followed.extend(response.iter_raw())

            following = ThreadPoolExecutor(1).submit(follow)
            assert wait_until(lambda: bool(followed), 10)
            killed = cluster.kill_primary_of(meta)
            try:
                following.result(timeout=60)
            finally:
                killed.start()
                cluster.wait_healthy()
    events = frames(b"".join(followed))
    assert orjson.loads(events[-1]["data"])["type"] == "RUN_ERROR"


def run_keys(cluster: RedisCluster) -> list[str]:
    client = redis.RedisCluster(host="127.0.0.1", port=cluster.primary_ports()[0])
    try:
        return [key.decode() for key in client.scan_iter(match="agw:run:{*}:m")]
    finally:
        client.close()


def test_serve_check_says_it_found_a_cluster_and_its_primaries(cluster: RedisCluster,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from gateway.cli import main

    with Served(create_agent_app("ag-kit")) as agent:
        assert main(["serve", "--check", "--upstream", agent.url + "/send-message", "--upstream-dialect", "ag-kit",
                     "--store", cluster.url]) == 0
    store_line = capsys.readouterr().out.splitlines()[2]
    assert store_line.startswith(f"store {cluster.url}: ok (cluster, primaries {primaries(cluster)}, ")


def test_with_wait_replicas_a_cluster_write_counts_once_its_slots_replica_has_it(cluster: RedisCluster) -> None:
    cluster.wait_healthy()

    async def scenario() -> None:
        store = RedisStore(f"{cluster.url}?wait_replicas=1", timeout=2.0)
        try:
            await store.put("acknowledged", b"1")
            primary = cluster.primary_of(store._shard("unacknowledged"))
            replica = next(node for node in cluster.running() if node.port in cluster.replicas_in_sync()
                           and _primary_port_of(node.port) == primary.port)
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


def test_a_command_whose_connection_the_cluster_client_closes_under_it_fails_as_unreachable(
        cluster: RedisCluster) -> None:
    """As a primary fails over, the cluster's client closes every connection to relearn the slots (CLUSTERDOWN),
    the connections other commands are using too: those commands must fail as a store that does not answer (a turn
    waits within its patience, and saves), never as an error of the gateway's own."""
    failures: set[str] = set()

    async def scenario() -> None:
        store = RedisStore(cluster.url, prefix="closed-under:")
        closing = True

        async def turns(n: int) -> None:
            while closing:
                try:
                    await store.put(f"conversation-{n}", b"x")
                    await store.get(f"conversation-{n}")
                except StoreUnreachable:
                    pass
                except Exception as exc:  # what else a command raised is what is asserted
                    failures.add(f"{type(exc).__name__}: {exc}")

        try:
            running = [asyncio.create_task(turns(n)) for n in range(64)]
            for _ in range(100):
                await asyncio.sleep(0.01)
                await store.client.aclose()  # what redis-py's cluster client does on CLUSTERDOWN
            closing = False
            await asyncio.gather(*running)
        finally:
            await store.close()

    asyncio.run(scenario())
    assert not failures


def test_conversations_stay_whole_while_slots_move_between_primaries(cluster: RedisCluster) -> None:
    """Slots resharded from one primary to another under traffic: a command for a slot that moved is followed
    (MOVED), one for a slot mid-move asked where it is going (ASK), and a put whose keys are split by the move
    (TRYAGAIN) fails as a store that does not answer, for the turn to wait; every conversation stays whole."""
    cluster.wait_healthy()
    written: dict[str, bytes] = {}
    failures: set[str] = set()

    async def scenario() -> None:
        store = RedisStore(cluster.url, prefix="resharded:")
        moving = True

        async def turns(n: int) -> None:
            count = 0
            while moving or count < 3:
                key, value = f"conversation-{n}", f"turn {count}".encode()
                try:
                    await store.put(key, value, group="g")
                    written[key] = value
                    count += 1
                    assert await store.get(key) == value
                except StoreUnreachable:
                    await asyncio.sleep(0.05)
                except Exception as exc:  # what else a command raised is what is asserted
                    failures.add(f"{type(exc).__name__}: {exc}")

        try:
            running = [asyncio.create_task(turns(n)) for n in range(32)]
            await asyncio.sleep(0.2)
            await asyncio.to_thread(cluster.reshard, 2000)
            moving = False
            await asyncio.gather(*running)
            for key, value in written.items():
                assert await store.get(key) == value, key
            assert len(await store.newest("g", None, 100)) == 32
        finally:
            await store.close()

    asyncio.run(scenario())
    assert not failures


def _primary_port_of(port: int) -> int:
    info = redis.Redis(host="127.0.0.1", port=port).info("replication")
    return int(info["master_port"])


CHAOS_CONVERSATIONS = 16
CHAOS_TURNS_AFTER = 3
"""Turns each conversation takes after the failover, before the load stops."""
CHAOS_TURNS_AT_MOST = 200


@pytest.mark.parametrize("patience", [20.0, 0.2], ids=["patient", "hasty"])
def test_a_cluster_primary_killed_mid_traffic_costs_no_conversation_its_history(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], patience: float) -> None:
    """Bounded load on two `serve` replicas (conversations each taking turns on both in turn, spread over the
    cluster's primaries) while one primary is killed (SIGKILL) and its replica takes over: every turn is answered or
    refused with a clear 503, none hangs, and afterwards every conversation goes on with the history it had. A
    replica whose patience outlasts the failover loses no turn; one whose does not loses only the turns it said it
    could not save (answered, then given up on within its patience): Redis itself loses none."""
    outcomes: dict[str, list[str]] = {}
    stop = threading.Event()

    def converse(http: httpx.Client, gateways: list[str], conversation: str) -> None:
        for n in range(CHAOS_TURNS_AT_MOST):
            if stop.is_set():
                return
            response = http.post(f"{gateways[n % 2]}/kit", json=request_body(
                "ag-kit", [user_message("ag-kit", f"turn of {conversation}")], conversation))
            if response.status_code == 503:
                assert response.json()["error"]["code"] == "store_unavailable", response.text
                assert int(response.headers["retry-after"]) > 0
                outcomes[conversation].append("503")
            else:
                assert response.status_code == 200, response.text
                outcomes[conversation].append(Reply("ag-kit", response).text)

    def said() -> int:
        return sum(len(said) for said in outcomes.values())

    with RedisCluster(primaries=3, replicas=1) as cluster, agents() as upstreams, \
            httpx.Client(timeout=60) as http, \
            gateway_processes(tmp_path, upstreams, cluster.url, patience=patience) as gateways:
        names = [f"chaos-{n}" for n in range(CHAOS_CONVERSATIONS)]
        for name in names:
            outcomes[name] = []
            assert "(turn 1)" in say(http, gateways[0], "first", name)
        with ThreadPoolExecutor(CHAOS_CONVERSATIONS) as pool:
            running = [pool.submit(converse, http, gateways, name) for name in names]
            try:
                cluster.wait(lambda: said() >= 2 * CHAOS_CONVERSATIONS, "the load to be under way")
                killed = cluster.kill_primary_of("{agw:conv:0}")
                at_kill = said()
                cluster.wait(lambda: len(cluster.primary_ports()) == 3, "a replica to take the killed primary's place")
                after = {name: len(outcomes[name]) for name in names}
                cluster.wait(lambda: all(len(outcomes[name]) >= after[name] + CHAOS_TURNS_AFTER or running[n].done()
                                         for n, name in enumerate(names)), "turns after the failover")
            finally:
                stop.set()
            for done in running:
                done.result(timeout=120)
        answered = {name: sum(said != "503" for said in outcomes[name]) for name in names}
        lost, short = 0, []
        for name in names:
            last = say(http, gateways[1], "last", name)
            turn = int(last.rpartition("(turn ")[2].partition(")")[0])
            short += [name] if turn < 2 else []
            lost += 2 + answered[name] - turn
        turns = sum(answered.values())
        refused = sum(said.count("503") for said in outcomes.values())
    unsaved = sum(log.read_text().count(" not saved: ") for log in tmp_path.glob("gateway-*.log"))
    with capsys.disabled():
        print(f"\nchaos over a cluster, patience {patience:g}s (primary 127.0.0.1:{killed.port} killed after "
              f"{at_kill} turns): {turns} turns answered, {refused} refused with a 503, {lost} lost, {unsaved} "
              "logged as not saved")
    assert not short, f"lost the history they had before the kill: {short}"
    assert lost <= unsaved  # a write whose answer the kill cut off may have been made all the same
    if patience > 10:
        assert lost == 0
