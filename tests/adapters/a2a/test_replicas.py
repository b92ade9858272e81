"""A2A tasks on any replica: two gateways over one real Redis, a task running on the first, asked about,
cancelled, followed and continued through the second, on either binding (`both`); `test_rest.py` has a task
started on one binding and asked about on the other."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest
from gated_upstream import FIRST, REST, GatedAgent
from redis_server import RedisServer
from servers import Served

from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.server.app import create_app
from tests.adapters.a2a.test_tasks import (  # noqa: F401 (binding: the fixture `both` uses)
    Receiver,
    binding,
    both,
    message,
    rpc,
    send,
    state_of,
    stream,
    wait_for,
)


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@contextmanager
def replicas(redis: RedisServer, **route: Any) -> Iterator[tuple[str, str]]:
    """Two gateways' A2A URLs, over one Redis, in front of one built-in agent (paced: a "slow" run takes 1 s)."""
    with ExitStack() as stack:
        agent = stack.enter_context(Served(create_agent_app("ag-ui", pace=0.05)))
        config = GatewayConfig.model_validate({"store": {"url": redis.url}, "routes": [
            {"name": "tasks", "paths": ["/a2a"], "client_dialects": ["a2a"],
             "upstream": {"url": agent.url + "/agui", "dialect": "ag-ui"}, **route}]})
        one, two = (stack.enter_context(Served(create_app(config))).url + "/a2a" for _ in range(2))
        yield one, two


def running_on(url: str, text: str) -> tuple[str, list[dict[str, Any]], threading.Thread]:
    """A task streaming from `url` (its id, what its client gets, the client's thread), once it has said something."""
    results: list[dict[str, Any]] = []
    thread = threading.Thread(target=stream, args=(url, "SendStreamingMessage", {"message": message(text)}, results))
    thread.start()
    wait_for(lambda: any("artifactUpdate" in r for r in results))
    return results[0]["task"]["id"], results, thread


@both
def test_get_task_answers_for_a_task_running_on_the_other_replica(redis: RedisServer) -> None:
    with replicas(redis) as (one, two):
        task_id, results, thread = running_on(one, "go slow")
        running = rpc(two, "GetTask", {"id": task_id})["result"]
        context = results[0]["task"]["contextId"]
        listed = rpc(two, "ListTasks", {"contextId": context, "includeArtifacts": True})["result"]
        thread.join(15)
        done = rpc(two, "GetTask", {"id": task_id})["result"]
    assert running["status"]["state"] == "TASK_STATE_WORKING" and running["artifacts"][0]["parts"][0]["text"]
    assert [t["status"]["state"] for t in listed["tasks"] if t["id"] == task_id] == ["TASK_STATE_WORKING"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"


@both
def test_cancel_task_asked_of_the_other_replica_stops_the_task_where_it_runs(redis: RedisServer) -> None:
    with replicas(redis) as (one, two):
        task_id, results, thread = running_on(one, "hang on")
        cancelled = rpc(two, "CancelTask", {"id": task_id})["result"]
        thread.join(10)
        got_one = rpc(one, "GetTask", {"id": task_id})["result"]
    assert cancelled["status"]["state"] == got_one["status"]["state"] == "TASK_STATE_CANCELED"
    assert state_of(results[-1]) == "TASK_STATE_CANCELED" and not thread.is_alive()


@both
def test_a_subscriber_on_the_other_replica_gets_every_update_to_the_end(redis: RedisServer) -> None:
    gated = GatedAgent()  # the task runs until its subscriber has had the task as it stands
    with Served(gated.app) as held, replicas(redis, upstream={"url": held.url + "/agui", "dialect": "ag-ui"}) \
            as (one, two):
        task_id, results, thread = running_on(one, "go")
        followed: list[dict[str, Any]] = []
        subscriber = threading.Thread(target=stream, args=(two, "SubscribeToTask", {"id": task_id}, followed))
        subscriber.start()
        wait_for(lambda: followed)
        gated.gate.set()
        for waiting in (thread, subscriber):
            waiting.join(15)
    texts = "".join(p["text"] for r in results if "artifactUpdate" in r
                    for p in r["artifactUpdate"]["artifact"]["parts"])
    seen = "".join(p["text"] for a in followed[0]["task"].get("artifacts", ()) for p in a["parts"]) + "".join(
        p["text"] for r in followed[1:] if "artifactUpdate" in r for p in r["artifactUpdate"]["artifact"]["parts"])
    assert state_of(followed[-1]) == "TASK_STATE_COMPLETED" and seen == texts == FIRST + REST


@both
def test_a_task_waiting_on_one_replica_is_continued_and_followed_on_the_other(redis: RedisServer) -> None:
    with replicas(redis) as (one, two):
        task = send(one, "please interrupt", contextId=f"ctx-{uuid.uuid4().hex[:6]}")
        followed: list[dict[str, Any]] = []
        subscriber = threading.Thread(target=stream, args=(one, "SubscribeToTask", {"id": task["id"]}, followed))
        subscriber.start()
        time.sleep(0.5)
        answered = send(two, "yes", taskId=task["id"])
        subscriber.join(10)
    assert answered["contextId"] == task["contextId"] and answered["status"]["state"] == "TASK_STATE_COMPLETED"
    assert state_of(followed[0]) == "TASK_STATE_INPUT_REQUIRED" and state_of(followed[-1]) == "TASK_STATE_COMPLETED"


@both
def test_a_webhook_registered_on_one_replica_is_sent_the_updates_of_a_task_on_the_other(redis: RedisServer) -> None:
    receiver = Receiver()
    with Served(receiver) as hook, replicas(redis, push={"allow_hosts": ["127.0.0.1"]}) as (one, two):
        task = send(one, "please interrupt")
        rpc(two, "CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": hook.url + "/hook"})
        send(one, "yes", taskId=task["id"])
        wait_for(lambda: "TASK_STATE_COMPLETED" in receiver.states())
    assert receiver.states()[-1] == "TASK_STATE_COMPLETED"
