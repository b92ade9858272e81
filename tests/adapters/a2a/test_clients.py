"""The gateway's A2A tasks through the real clients, `a2a-sdk`'s (`tests/peers/a2a_tasks.py`, on JSON-RPC and on
HTTP+JSON) and `@a2a-js/sdk` 1.3.0's (`tests/clients/a2a-tasks.mjs`): ListTasks, SubscribeToTask on another replica
over Redis, push delivery to a webhook on 127.0.0.1, and the errors, each as the SDK raises it. Install first:
`.venv/bin/python tests/peers_env.py` and `npm ci --prefix tests/clients`."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import pytest
from following import Following
from gated_upstream import REST, GatedAgent
from node_clients import follow_a2a_tasks_js, run_a2a_send, run_a2a_tasks_js
from peers_env import follow_a2a_tasks, run_a2a_client, run_a2a_tasks
from redis_server import RedisServer
from servers import Served

from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.server.app import create_app
from tests.adapters.a2a.test_tasks import Receiver, message, rpc, send, state_of, stream, wait_for

Ask = Callable[[str, str, dict[str, Any]], tuple[list[dict[str, Any]], str | None]]


def python_asks(url: str, operation: str, params: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    run = run_a2a_tasks(url, operation, params)
    return run.answers, run.error


def python_rest_asks(url: str, operation: str, params: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """a2a-sdk's client on HTTP+JSON."""
    run = run_a2a_tasks(url, operation, params, binding="http-json")
    return run.answers, run.error


def js_asks(url: str, operation: str, params: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    run = run_a2a_tasks_js(url + "/", operation, params)
    return run["answers"], run["error"]


ASKS = {"python": python_asks, "python-http-json": python_rest_asks, "js": js_asks}


@pytest.fixture(params=sorted(ASKS))
def ask(request: pytest.FixtureRequest) -> Ask:
    return ASKS[request.param]


Follow = Callable[[str, str, dict[str, Any]], Following]


@pytest.fixture(params=["python", "python-http-json", "js"])
def follow(request: pytest.FixtureRequest) -> Follow:
    """An SDK client's answers read as they come (a subscribe's)."""
    if request.param == "python":
        return follow_a2a_tasks
    if request.param == "python-http-json":
        return lambda url, operation, params: follow_a2a_tasks(url, operation, params, binding="http-json")
    return lambda url, operation, params: follow_a2a_tasks_js(url + "/", operation, params)


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@dataclass
class Replicas:
    one: str
    two: str
    """Two gateways' A2A URLs, over one Redis."""
    hook: str
    receiver: Receiver
    """A webhook on 127.0.0.1 (the route pushes there), and what it received."""
    gated: GatedAgent
    """The upstream of the route at `/gated` on both replicas, whose runs last until a test opens its gate."""


@pytest.fixture(scope="module")
def replicas(redis: RedisServer) -> Iterator[Replicas]:
    receiver = Receiver()
    with ExitStack() as stack:
        hook = stack.enter_context(Served(receiver))
        agent = stack.enter_context(Served(create_agent_app("ag-ui", pace=0.05)))
        gated = GatedAgent()
        held = stack.enter_context(Served(gated.app))
        config = GatewayConfig.model_validate({"store": {"url": redis.url}, "routes": [
            {"name": "tasks", "paths": ["/a2a"], "client_dialects": ["a2a"], "push": {"allow_hosts": ["127.0.0.1"]},
             "upstream": {"url": agent.url + "/agui", "dialect": "ag-ui"}},
            {"name": "gated", "paths": ["/gated"], "client_dialects": ["a2a"],
             "upstream": {"url": held.url + "/agui", "dialect": "ag-ui"}}]})
        one, two = (stack.enter_context(Served(create_app(config))).url + "/a2a" for _ in range(2))
        yield Replicas(one, two, hook.url + "/hook", receiver, gated)


def test_list_tasks_through_the_sdk_pages_the_callers_tasks_of_a_context(replicas: Replicas, ask: Ask) -> None:
    one, two = replicas.one, replicas.two
    context = f"ctx-{uuid.uuid4().hex[:8]}"
    made = [send(one, f"hello {n}", contextId=context)["id"] for n in range(3)]
    [first], error = ask(two, "list", {"contextId": context, "pageSize": 2})
    [rest], _ = ask(two, "list", {"contextId": context, "pageSize": 2, "pageToken": first["nextPageToken"]})
    assert error is None, error
    assert [t["id"] for t in first["tasks"]] == made[:0:-1] and first["totalSize"] == 3
    assert [t["id"] for t in rest["tasks"]] == made[:1] and not rest.get("nextPageToken")
    assert all(t["status"]["state"] == "TASK_STATE_COMPLETED" and "artifacts" not in t for t in first["tasks"])


def test_subscribe_through_the_sdk_on_the_other_replica_follows_the_task_to_its_end(replicas: Replicas,
                                                                                    follow: Follow) -> None:
    gated = replicas.gated
    gated.gate.clear()  # the task runs on the first replica until the subscriber on the second has its first answer
    one, two = (url.removesuffix("/a2a") + "/gated" for url in (replicas.one, replicas.two))
    sent: list[dict[str, Any]] = []
    streaming = threading.Thread(target=stream, args=(one, "SendStreamingMessage", {"message": message("go")},
                                                      sent))
    streaming.start()
    wait_for(lambda: any("artifactUpdate" in r for r in sent))
    with follow(two, "subscribe", {"id": sent[0]["task"]["id"]}) as subscriber:
        assert subscriber.first(), subscriber.done()
        gated.gate.set()
        error = subscriber.done()
    streaming.join(15)
    answers = subscriber.answers
    assert error is None, error
    assert answers[0]["task"]["id"] == sent[0]["task"]["id"]
    assert state_of(answers[-1]) == "TASK_STATE_COMPLETED"
    followed = "".join(part["text"] for a in answers if "artifactUpdate" in a
                       for part in a["artifactUpdate"]["artifact"]["parts"])
    assert followed.endswith(REST)  # what the task said after the subscriber came, as it said it


def test_push_configs_through_the_sdk_and_delivery_to_a_local_webhook(replicas: Replicas, ask: Ask) -> None:
    one, two, hook, receiver = replicas.one, replicas.two, replicas.hook, replicas.receiver
    task = send(one, "please interrupt")
    config = {"taskId": task["id"], "id": f"cfg-{uuid.uuid4().hex[:6]}", "url": hook, "token": "tok-sdk",
              "authentication": {"scheme": "Bearer", "credentials": "cred-sdk"}}
    [created], error = ask(two, "push-create", config)
    [listed], _ = ask(one, "push-list", {"taskId": task["id"]})
    [got], _ = ask(two, "push-get", {"taskId": task["id"], "id": config["id"]})
    send(two, "yes", taskId=task["id"])
    wait_for(lambda: any(d.get("statusUpdate", {}).get("taskId") == task["id"]
                         and state_of(d) == "TASK_STATE_COMPLETED" for _, d in receiver.deliveries))
    mine = [(h, d) for h, d in receiver.deliveries if d.get("statusUpdate", {}).get("taskId") == task["id"]]
    _, deleted = ask(one, "push-delete", {"taskId": task["id"], "id": config["id"]})
    assert error is None and deleted is None, (error, deleted)
    assert created["id"] == got["id"] == config["id"] and created["url"] == hook
    assert [c["id"] for c in listed["configs"]] == [config["id"]]
    assert mine[0][0]["x-a2a-notification-token"] == "tok-sdk" and mine[0][0]["authorization"] == "Bearer cred-sdk"
    assert state_of(mine[-1][1]) == "TASK_STATE_COMPLETED"


ERRORS = {  # what each SDK calls A2A's errors
    "python-http-json": {"-32001": "TaskNotFoundError", "-32002": "TaskNotCancelableError",
                         "-32003": "PushNotificationNotSupportedError", "-32004": "UnsupportedOperationError"},
    "python": {"-32001": "TaskNotFoundError", "-32002": "TaskNotCancelableError",
               "-32003": "PushNotificationNotSupportedError", "-32004": "UnsupportedOperationError"},
    "js": {"-32001": "TaskNotFoundError", "-32002": "TaskNotCancelableError",
           "-32003": "PushNotificationNotSupportedError", "-32004": "UnsupportedOperationError"},
}


@pytest.mark.parametrize("client", sorted(ERRORS))
def test_the_sdks_raise_a2as_own_errors_for_the_gateways_error_codes(client: str) -> None:
    names = ERRORS[client]
    asks = ASKS[client]
    with Served(create_agent_app("ag-ui")) as agent, Served(create_app(GatewayConfig.model_validate({
            "store": {"url": "memory://"}, "routes": [{"name": "t", "paths": ["/a2a"], "client_dialects": ["a2a"],
                                                        "upstream": {"url": agent.url + "/agui",
                                                                     "dialect": "ag-ui"}}]}))) as gw:
        url = gw.url + "/a2a"
        done = send(url, "hello")
        outcomes = {
            "-32001": asks(url, "get", {"id": "no-such-task"})[1],
            "-32002": asks(url, "cancel", {"id": done["id"]})[1],
            "-32003": asks(url, "push-create", {"taskId": done["id"], "url": "http://127.0.0.1:9/"})[1],
            "-32004": asks(url, "subscribe", {"id": done["id"]})[1],
        }
        if client.startswith("python"):
            binding = client.removeprefix("python-") if client != "python" else "jsonrpc"
            to_nobody = run_a2a_client(url, "hello", task_id="no-such-task", binding=binding).error
        else:
            to_nobody = run_a2a_send(url + "/", "hello", task_id="no-such-task")["error"]
        to_done = rpc(url, "SendMessage", {"message": message("again", taskId=done["id"])})
    for code, error in outcomes.items():
        assert error is not None and error.startswith(names[code] + ":"), (code, error)
    assert to_nobody is not None and names["-32001"] in to_nobody, to_nobody
    assert to_done["error"]["code"] == -32004
